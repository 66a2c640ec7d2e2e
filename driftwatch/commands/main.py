"""The ``driftwatch`` command line.

Commands::

    driftwatch run [--config FILE]           run the agent (Kafka in, Prometheus out)
    driftwatch config validate FILE...       check settings files (file + environment)
    driftwatch config schema                 print the settings' JSON Schema, for editors
    driftwatch config show [--config FILE]   print the effective settings, secrets masked
    driftwatch demo [--scenario NAME ...]    embedded broker + simulated model + agent, live
    driftwatch simulate [--bootstrap ...]    produce simulated events to a Kafka cluster
    driftwatch replay FILE [--config FILE]   run the monitors over recorded events (JSON Lines,
                                             CSV or a Kafka range): alarms, measures, figure
    driftwatch compare FILE --challenger-score F  champion vs challenger on the same events:
                                             AUC difference, DeLong, block tests, figure

Exit status (:mod:`driftwatch.exits`): 0 on success; 2 when settings are invalid (each problem
is printed as ``path.to.key (ENV_NAME): message``, an unwritable checkpoint directory included)
or the command line is wrong (argparse's usage error, under the usage of the command it is
in, with the closest option, command or choice suggested: :mod:`driftwatch.commands.suggest`);
``run`` also exits 3 when the checkpoint
cannot be restored and 4 when the final checkpoint could not be saved.

Each command is a module of this package (:mod:`~driftwatch.commands.run`,
:mod:`~driftwatch.commands.config`, :mod:`~driftwatch.commands.demo` with ``simulate``,
:mod:`~driftwatch.commands.replay`, :mod:`~driftwatch.commands.compare`) with a function
``add_<command>(commands)`` that adds its sub-parser and sets ``handler`` to a function
``(args) -> exit status``; :func:`main` parses and dispatches. The command modules never
import this one: what they share with it is in :mod:`driftwatch.commands.arguments`,
:mod:`driftwatch.exits` and :mod:`driftwatch.signals`.
Commands load settings through
:func:`~driftwatch.commands.arguments.load_settings_or_report`, so an invalid file is reported
the same way everywhere, and heavy modules are imported inside the handlers, so
``driftwatch --help`` stays fast and one command's dependencies cannot break another.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from typing import cast

from driftwatch.commands.suggest import SuggestingParser, mark, parse
from driftwatch.version import __version__, revision

Handler = Callable[[argparse.Namespace], int]

COMMANDS: dict[str, str] = {
    "run": "run", "config": "config", "demo": "demo", "simulate": "demo", "replay": "replay",
    "compare": "compare",
}
"""Each command and the module of this package whose ``add_<module>(commands)`` adds it (more
commands are added here). The parser is built with the invoked command's module only: a
replay does not import the demo's simulator, nor the demo the replay's (about 20 ms of a
short replay's start-up); ``driftwatch --help`` and anything unrecognized get them all."""


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line with ``argv`` (default: ``sys.argv[1:]``); return the exit status."""
    argv = sys.argv[1:] if argv is None else list(argv)
    command = next((arg for arg in argv if not arg.startswith("-")), None)
    args = parse(build_parser(command if command in COMMANDS else None), argv)
    handler: Handler = args.handler
    return handler(args)


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser of every command, or of ``command`` alone (its module's commands)."""
    parser = SuggestingParser(
        prog="driftwatch",
        description=(
            "Watch a deployed binary classifier: prequential AUC and class-ratio-normalized "
            "measures from Kafka events, drift detectors, Prometheus metrics."
        ),
    )
    parser.add_argument("--version", action=_Version, nargs=0,
                        help="show the version and the source revision, and exit")
    # The sub-commands' parsers are SuggestingParsers too (argparse makes them of the
    # parent's class); the command modules only need them to be ArgumentParsers.
    commands = cast("argparse._SubParsersAction[argparse.ArgumentParser]",
                    parser.add_subparsers(title="commands", metavar="COMMAND", required=True))
    for module in dict.fromkeys(COMMANDS.values() if command is None else [COMMANDS[command]]):
        _adder(module)(commands)
    mark(parser)
    return parser


class _Version(argparse.Action):
    """``--version``: the version and the source revision (:mod:`driftwatch.version`), looked
    up only when asked for (in a checkout it runs git)."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: object, option_string: str | None = None) -> None:
        print(f"{parser.prog} {__version__} ({revision()})")
        parser.exit()


def _adder(module: str) -> Callable[[argparse._SubParsersAction[argparse.ArgumentParser]], None]:
    """The ``add_<module>`` function of a command module, imported now."""
    if module == "run":
        from driftwatch.commands.run import add_run
        return add_run
    if module == "config":
        from driftwatch.commands.config import add_config
        return add_config
    if module == "demo":
        from driftwatch.commands.demo import add_demo
        return add_demo
    if module == "replay":
        from driftwatch.commands.replay import add_replay
        return add_replay
    from driftwatch.commands.compare import add_compare
    return add_compare
