"""What the commands share on the command line: the ``--config`` option, loading its settings
with every problem reported, and argparse value types that refuse a bad value with one clear
line.

Each command module imports this, never :mod:`driftwatch.commands.main`, which imports the
commands.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from driftwatch.settings import Settings


def add_config_argument(parser: argparse.ArgumentParser) -> None:
    """The ``--config FILE`` option, shared by every command that reads settings."""
    parser.add_argument(
        "--config",
        metavar="FILE",
        help=(
            "settings file (YAML); default: $DRIFTWATCH_CONFIG, else built-in defaults. "
            "DRIFTWATCH_* environment variables override it"
        ),
    )


def load_settings_or_report(path: str | None, stream: TextIO | None = None, *,
                            check_files: bool = True) -> Settings | None:
    """The settings from ``path`` (and the environment), or None after printing every
    problem to ``stream`` (default: stderr), each as ``path.to.key (ENV_NAME): message``.
    ``check_files``: see ``load_settings``."""
    from pydantic import ValidationError
    from pydantic_settings import SettingsError

    from driftwatch.settings import CONFIG_ENV, SettingsFileError, load_settings, settings_errors

    out = sys.stderr if stream is None else stream
    try:
        return load_settings(path, check_files=check_files)
    except (SettingsFileError, ValidationError, SettingsError) as exc:
        problems = settings_errors(exc)
        if not isinstance(exc, SettingsFileError):
            where = path or os.environ.get(CONFIG_ENV) or "settings"
            count = f"{len(problems)} problem{'s' if len(problems) != 1 else ''}"
            print(f"{where}: {count}", file=out)
        for line in problems:
            print(line, file=out)
        return None


def port_number(text: str) -> int:
    value = non_negative_int(text)
    if value > 65535:
        raise argparse.ArgumentTypeError(f"not a port: {text!r}")
    return value


def non_negative_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {value}")
    return value


def positive_int(text: str) -> int:
    value = non_negative_int(text)
    if value == 0:
        raise argparse.ArgumentTypeError("must be >= 1, got 0")
    return value


def positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0 < value < math.inf:
        raise argparse.ArgumentTypeError(f"must be a positive number, got {text}")
    return value


def non_negative_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0 <= value < math.inf:
        raise argparse.ArgumentTypeError(f"must be a finite number >= 0, got {text}")
    return value


def finite_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not -math.inf < value < math.inf:
        raise argparse.ArgumentTypeError(f"must be finite, got {text}")
    return value


def probability(text: str) -> float:
    """A probability strictly between 0 and 1 (a significance level, a coverage)."""
    value = finite_float(text)
    if not 0.0 < value < 1.0:
        raise argparse.ArgumentTypeError(f"must be between 0 and 1 (exclusive), got {text}")
    return value
