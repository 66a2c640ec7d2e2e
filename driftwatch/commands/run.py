"""``driftwatch run``: the agent, until SIGTERM or SIGINT.

Exit status: 0 after a clean stop (checkpoint saved, offsets committed); 2 for invalid
settings, an unwritable checkpoint directory, or settings the brokers refuse (TLS, SASL
credentials, a missing ACL: the line names which); 3 when the checkpoint cannot be restored
(move it away to start fresh); 4 when the final checkpoint could not be saved (nothing was
committed); 1 when stopped before it was ever ready (no broker answered, a topic missing:
nothing consumed, nothing saved, nothing lost), and for anything else that stops it, e.g.
the metrics port already taken. A second SIGINT exits at once (130).
"""

from __future__ import annotations

import argparse
import os
import sys

from driftwatch.commands.arguments import add_config_argument, load_settings_or_report
from driftwatch.exits import (
    EXIT_CHECKPOINT,
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_INVALID,
    EXIT_NEVER_READY,
    EXIT_OK,
    EXIT_SAVE_FAILED,
)


def add_run(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    run = commands.add_parser(
        "run",
        help="run the agent",
        description=(
            "Consume events from Kafka into per-model monitors and serve /metrics, /healthz "
            "and /readyz. SIGTERM or SIGINT stops it cleanly (checkpoint, commit, exit 0; "
            "exit 4 and no commit when the checkpoint cannot be saved; exit 1 when it never "
            "reached its brokers or topics); a second SIGINT exits at once. Settings the "
            "brokers refuse (TLS, SASL, ACLs) stop it with exit 2."
        ),
    )
    add_config_argument(run)
    run.set_defaults(handler=_run)


def _run(args: argparse.Namespace) -> int:
    import threading

    from driftwatch import logs
    from driftwatch.agent.loop import Agent, NeverReady
    from driftwatch.kafka.first_contact import BrokerRefused
    from driftwatch.settings import env_name
    from driftwatch.signals import stop_on_signals
    from driftwatch.sources.registry import SourceSettingError
    from driftwatch.state.checkpoint import (
        CheckpointDirectoryError,
        CheckpointError,
        CheckpointSaveError,
        CheckpointSettingError,
    )

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
    except (CheckpointSettingError, SourceSettingError) as exc:
        print(f"{'.'.join(exc.key)} ({env_name(exc.key)}): {exc}", file=sys.stderr)
        return EXIT_INVALID
    except CheckpointError as exc:
        print(f"driftwatch: cannot restore the checkpoint: {exc}\nMove it away to start "
              "fresh (the monitors are then rebuilt from the retained log, as "
              "kafka.auto_offset_reset says).", file=sys.stderr)
        return EXIT_CHECKPOINT
    except CheckpointSaveError as exc:
        print(f"driftwatch: {exc}", file=sys.stderr)
        return EXIT_SAVE_FAILED
    except BrokerRefused as exc:
        print(f"driftwatch: {exc}", file=sys.stderr)
        return EXIT_INVALID
    except NeverReady as exc:
        print(f"driftwatch: stopped before it was ever ready: {exc}; nothing was consumed "
              "or saved, so nothing is lost", file=sys.stderr)
        return EXIT_NEVER_READY
    except OSError as exc:  # e.g. the metrics port is taken
        print(f"driftwatch: {exc}", file=sys.stderr)
        return EXIT_FAILED
    return EXIT_OK
