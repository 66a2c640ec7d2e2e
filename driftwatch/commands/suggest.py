"""Command-line typos answered with a suggestion, under the usage of the command they were
made in.

argparse reports an unknown option from the top-level parser (``driftwatch demo --duraton 5``
prints ``usage: driftwatch [-h] [--version] COMMAND ...``, which says nothing about ``demo``)
and suggests nothing for an unknown command or choice (before Python 3.14). Here:

- :func:`parse` reports unrecognized arguments from the innermost command that was parsed,
  with its usage, and suggests the closest of its options: ``driftwatch demo: error:
  unrecognized arguments: --duraton 5; did you mean --duration?``;
- :class:`SuggestingParser` (the class of every parser of the command line, sub-commands
  included) adds the closest valid choice to argparse's "invalid choice" errors:
  ``invalid choice: 'replya' (choose from ...); did you mean 'replay'?``.

Closeness is :func:`difflib.get_close_matches`' ratio (at least 0.6, as the standard
library's own "did you mean" uses elsewhere); with nothing close, the message is argparse's.
"""

from __future__ import annotations

import argparse
import difflib
import re
from collections.abc import Iterator, Sequence
from typing import NoReturn

PARSER_ATTRIBUTE = "_driftwatch_parser"
"""The namespace attribute that names the innermost parser that ran (see :func:`mark`)."""

_INVALID_CHOICE = re.compile(r"invalid choice: '(?P<value>[^']*)' \(choose from (?P<choices>.*)\)$")


class SuggestingParser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose "invalid choice" errors suggest the closest choice."""

    def error(self, message: str) -> NoReturn:
        super().error(with_choice_suggestion(message))


def with_choice_suggestion(message: str) -> str:
    """``message`` with ``; did you mean 'X'?`` when it is argparse's "invalid choice" error
    and a choice is close to the value given."""
    found = _INVALID_CHOICE.search(message)
    if found is None:
        return message
    choices = re.findall(r"'([^']*)'", found["choices"]) or found["choices"].split(", ")
    close = difflib.get_close_matches(found["value"], choices, n=1)
    return f"{message}; did you mean {close[0]!r}?" if close else message


def mark(parser: argparse.ArgumentParser) -> None:
    """Record on the namespace which parser ran: each parser's default for
    :data:`PARSER_ATTRIBUTE` is itself, and a sub-command's defaults override its parent's,
    so after parsing the attribute names the innermost command."""
    for each in _parsers(parser):
        each.set_defaults(**{PARSER_ATTRIBUTE: each})


def parse(parser: argparse.ArgumentParser, argv: Sequence[str]) -> argparse.Namespace:
    """``parser.parse_args(argv)``, but unrecognized arguments are an error of the innermost
    command parsed (its usage, its name), with the closest of its options suggested. The
    parser must have been :func:`mark` ed."""
    args, extras = parser.parse_known_args(argv)
    if extras:
        owner: argparse.ArgumentParser = getattr(args, PARSER_ATTRIBUTE, parser)
        owner.error(unrecognized(owner, extras))
    return args


def unrecognized(parser: argparse.ArgumentParser, extras: Sequence[str]) -> str:
    """argparse's "unrecognized arguments" message, with a "did you mean" for the options
    among ``extras`` that are close to one of ``parser``'s."""
    options = [option for action in parser._actions for option in action.option_strings]
    close = {}
    for extra in extras:
        name = extra.split("=", 1)[0]
        if name.startswith("-") and (match := difflib.get_close_matches(name, options, n=1)):
            close[name] = match[0]
    message = f"unrecognized arguments: {' '.join(extras)}"
    if len(close) == 1:
        return f"{message}; did you mean {next(iter(close.values()))}?"
    if close:
        return f"{message}; did you mean " + ", ".join(
            f"{option} (for {name})" for name, option in close.items()) + "?"
    return message


def _parsers(parser: argparse.ArgumentParser) -> Iterator[argparse.ArgumentParser]:
    """``parser`` and every sub-command parser under it."""
    yield parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in dict.fromkeys(action.choices.values()):
                yield from _parsers(child)
