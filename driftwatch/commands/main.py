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

Each command is a function ``_add_<command>(commands)`` that adds its sub-parser and sets
``handler`` to a function ``(args) -> exit status``; :func:`main` parses and dispatches. The
command modules (:mod:`driftwatch.commands.demo`, :mod:`driftwatch.commands.replay`,
:mod:`driftwatch.commands.compare`) never import this one: what they share with it is in
:mod:`driftwatch.commands.arguments`, :mod:`driftwatch.exits` and :mod:`driftwatch.signals`.
Commands load settings through
:func:`~driftwatch.commands.arguments.load_settings_or_report`, so an invalid file is reported
the same way everywhere, and heavy modules are imported inside the handlers, so
``driftwatch --help`` stays fast and one command's dependencies cannot break another.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Sequence

from driftwatch import __version__
from driftwatch.commands.arguments import add_config_argument, load_settings_or_report
from driftwatch.commands.compare import add_compare as _add_compare
from driftwatch.commands.demo import add_demo as _add_demo
from driftwatch.commands.replay import add_replay as _add_replay
from driftwatch.exits import (
    EXIT_CHECKPOINT,
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_INVALID,
    EXIT_OK,
    EXIT_SAVE_FAILED,
)

JSON_SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"
"""The dialect pydantic generates."""

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
    # More commands are added here, each by its own _add_<command>(commands).
    return parser


# ------------------------------------------------------------------------------------------
# run


def _add_run(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    run = commands.add_parser(
        "run",
        help="run the agent",
        description=(
            "Consume events from Kafka into per-model monitors and serve /metrics, /healthz "
            "and /readyz. SIGTERM or SIGINT stops it cleanly (checkpoint, commit, exit 0; "
            "exit 4 and no commit when the checkpoint cannot be saved); a second SIGINT "
            "exits at once."
        ),
    )
    add_config_argument(run)
    run.set_defaults(handler=_run)


def _run(args: argparse.Namespace) -> int:
    import threading

    from driftwatch import logs
    from driftwatch.agent import Agent
    from driftwatch.io.checkpoint import (
        CheckpointDirectoryError,
        CheckpointError,
        CheckpointSaveError,
    )
    from driftwatch.settings import env_name
    from driftwatch.signals import stop_on_signals

    settings = load_settings_or_report(args.config)
    if settings is None:
        return EXIT_INVALID
    logs.configure(settings.logging.level, settings.logging.format)
    stop = threading.Event()
    try:
        # The second Ctrl+C: the user wants out now.
        with stop_on_signals(stop, on_second=lambda: os._exit(EXIT_INTERRUPTED)):
            Agent(settings).run(stop)
    except CheckpointDirectoryError as exc:
        print(f"checkpoint.directory ({env_name(('checkpoint', 'directory'))}): {exc}",
              file=sys.stderr)
        return EXIT_INVALID
    except CheckpointError as exc:
        print(f"driftwatch: cannot restore the checkpoint: {exc}\nMove it away to start "
              "fresh (the monitors are then rebuilt from the retained log, as "
              "kafka.auto_offset_reset says).", file=sys.stderr)
        return EXIT_CHECKPOINT
    except CheckpointSaveError as exc:
        print(f"driftwatch: {exc}", file=sys.stderr)
        return EXIT_SAVE_FAILED
    except OSError as exc:  # e.g. the metrics port is taken
        print(f"driftwatch: {exc}", file=sys.stderr)
        return EXIT_FAILED
    return EXIT_OK


# ------------------------------------------------------------------------------------------
# config


def _add_config(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    config = commands.add_parser(
        "config", help="check, describe and show settings", description="Settings files."
    )
    actions = config.add_subparsers(title="actions", metavar="ACTION", required=True)

    validate = actions.add_parser(
        "validate",
        help="check settings files",
        description=(
            "Check each FILE as the agent would load it (DRIFTWATCH_* environment variables "
            "applied). Prints 'FILE: ok', or every problem as 'path.to.key (ENV_NAME): "
            "message'; exits 2 if any file is invalid."
        ),
    )
    validate.add_argument("files", nargs="+", metavar="FILE", help="settings file (YAML)")
    validate.add_argument(
        "--no-file-checks", dest="check_files", action="store_false",
        help=(
            "do not require the files the settings name (TLS certificates, keys, CA "
            "bundles) to exist here: for a file meant for another machine"
        ),
    )
    validate.set_defaults(handler=_config_validate)

    schema = actions.add_parser(
        "schema",
        help="print the settings' JSON Schema",
        description=(
            "Print the JSON Schema of the settings file, for editors (e.g. the YAML language "
            "server's '# yaml-language-server: $schema=FILE' comment)."
        ),
    )
    schema.set_defaults(handler=_config_schema)

    show = actions.add_parser(
        "show",
        help="print the effective settings",
        description=(
            "Print the settings the agent would run with (file, environment and defaults "
            "merged) as YAML, secrets masked."
        ),
    )
    add_config_argument(show)
    show.set_defaults(handler=_config_show)


def _config_validate(args: argparse.Namespace) -> int:
    status = EXIT_OK
    for path in args.files:
        if load_settings_or_report(path, check_files=args.check_files) is None:
            status = EXIT_INVALID
        else:
            print(f"{path}: ok")
    return status


def _config_schema(args: argparse.Namespace) -> int:
    from driftwatch.settings import Settings

    schema = {"$schema": JSON_SCHEMA_DIALECT, **Settings.model_json_schema()}
    print(json.dumps(schema, indent=2, ensure_ascii=False))
    return EXIT_OK


def _config_show(args: argparse.Namespace) -> int:
    import yaml  # type: ignore[import-untyped, unused-ignore]

    settings = load_settings_or_report(args.config)
    if settings is None:
        return EXIT_INVALID
    # mode="json" renders each SecretStr as "**********" and paths as strings.
    data = settings.model_dump(mode="json")
    print("# Effective driftwatch settings (file, environment, defaults); secrets masked.")
    print(yaml.safe_dump(data, sort_keys=False, allow_unicode=True), end="")
    return EXIT_OK
