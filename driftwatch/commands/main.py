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
or the command line is wrong (argparse's usage error); ``run`` also exits 3 when the checkpoint
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
from collections.abc import Callable, Sequence

from driftwatch import __version__
from driftwatch.commands.compare import add_compare as _add_compare
from driftwatch.commands.config import add_config as _add_config
from driftwatch.commands.demo import add_demo as _add_demo
from driftwatch.commands.replay import add_replay as _add_replay
from driftwatch.commands.run import add_run as _add_run

Handler = Callable[[argparse.Namespace], int]


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line with ``argv`` (default: ``sys.argv[1:]``); return the exit status."""
    args = build_parser().parse_args(argv)
    handler: Handler = args.handler
    return handler(args)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="driftwatch",
        description=(
            "Watch a deployed binary classifier: prequential AUC and class-ratio-normalized "
            "measures from Kafka events, drift detectors, Prometheus metrics."
        ),
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(title="commands", metavar="COMMAND", required=True)
    _add_run(commands)
    _add_config(commands)
    _add_demo(commands)
    _add_replay(commands)
    _add_compare(commands)
    # More commands are added here, each by the add_<command>(commands) of its module.
    return parser
