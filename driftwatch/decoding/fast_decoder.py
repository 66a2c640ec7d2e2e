"""A fast path in front of the agent's decoder, for the agent's loop and replays of millions
of records.

:func:`driftwatch.decoding.decoder.decode` is the one set of rules for turning a record into an
event; a replay must accept and reject exactly what the agent does. Most recorded records are
plain valid events, though, and for those the decoder's generality (standard-library JSON,
every check written for every kind of bad value) costs most of a replay's time.
:class:`FastDecoder` accepts only records that are plainly valid —
a JSON object whose label is exactly a configured class, whose score is a finite float or
int, whose prediction and time are absent, null or plain numbers, and whose model id passes
the decoder's model id rule — and builds the same
:class:`~driftwatch.decoding.decoder.Decoded` the decoder would. Anything else goes to
:func:`~driftwatch.decoding.decoder.decode` itself, so every rejection
carries the decoder's reason and detail and every unusual but valid record (an ISO-8601 time,
a string class, a key as model id) its exact result. ``tests/test_replay_speed.py`` checks
the two agree on generated records, valid and invalid.

JSON is parsed with orjson when it is installed (the ``fast`` extra: about three times
faster than the standard library here, ``benchmarks/replay.py``). Where orjson and the
standard library could disagree, the record goes to the decoder: orjson refuses NaN and
Infinity literals, a byte-order mark, lone surrogates and numbers beyond a double, which the
standard library parses (and the decoder then judges); both keep the last of duplicate keys;
orjson turns integers beyond 64 bits into floats, which this path never accepts as a class,
and accepts as a score or time only where the standard library's int would convert to the
same (correctly rounded) float.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from itertools import repeat
from typing import Any, NamedTuple, Protocol

import numpy as np

from driftwatch.core.events import valid_event
from driftwatch.decoding.decoder import (
    MAX_EVENT_TIME_S,
    Decoded,
    EventFormat,
    Rejected,
    decode,
)

Loads = Callable[[bytes], Any]
Values = tuple[str, int, float, int | None, float | None]
"""A plainly valid record's model, class, score, predicted class (or None) and time (or
None)."""

_orjson_loads: Loads | None
try:
    from orjson import loads as _orjson_loads
except ImportError:  # the fast extra is not installed: the standard library's parser
    _orjson_loads = None

_ABSENT = object()

plain_event = valid_event
"""The event of values this path accepted: they already are what Event's own checks make of
its arguments, so it is built without checking again (validation happens once, here)."""


def json_library() -> str:
    """The parser the fast path uses: ``orjson`` or ``json``."""
    return "json" if _orjson_loads is None else "orjson"


def _classes(fmt: EventFormat) -> dict[tuple[type, object], int]:
    """(type, value) → class, for the label values the decoder matches: a string class
    matches that string; an integer or boolean class matches an int or bool of equal value
    (so 1 matches ``1`` and ``true``), never a float."""
    classes: dict[tuple[type, object], int] = {}
    for configured, cls in ((fmt.negative_label, 0), (fmt.positive_label, 1)):
        if isinstance(configured, str):
            classes[(str, configured)] = cls
        else:
            classes[(int, int(configured))] = cls
            if configured in (0, 1):
                classes[(bool, bool(configured))] = cls
    return classes


class ValuesOf(Protocol):
    def __call__(self, value: bytes | None, parsed: Any = ..., /) -> Values | None: ...


PARSE_SELF: Any = object()
"""``parsed`` of :attr:`FastDecoder.values` when the value is to be parsed by the call."""


class Columns(NamedTuple):
    """A run of plainly valid records of one model, without predictions, as columns."""

    model: str
    labels: list[int]
    scores: list[float]
    times: list[float | None]


class FastDecoder:
    """``decode(value, key, fmt)``, faster on plainly valid records; same results always.

    Parameters:
        fmt: the events format (field names, classes, model source, size limit).
        loads: the JSON parser of the fast path; default orjson if installed, else the
            standard library's.
    """

    __slots__ = ("_fmt", "_loads", "columns", "values")

    def __init__(self, fmt: EventFormat, loads: Loads | None = None) -> None:
        self._fmt = fmt
        self._loads: Loads = loads or _orjson_loads or json.loads
        self.values: ValuesOf = _values(fmt, self._loads)
        self.columns: Callable[[Sequence[bytes], Sequence[Any]], Columns | None] = \
            _columns(fmt)
        """``columns(lines, parsed)``: the records of a run of lines (their JSON parsed,
        :meth:`parse_lines`) as :class:`Columns`, when each is one :attr:`values` takes,
        all of one model and none with a prediction; else None (then record by record).
        The same values :attr:`values` gives each, checked a field at a time over the run
        (the common shapes: integer or string classes, float scores, float or integer times
        or none); anything less common takes the per-record path."""
        """``(model, y_true, y_score, y_pred, ts)`` of a plainly valid record, else None:
        :meth:`fast` without building the event, for a replay's inner loop
        (:meth:`~driftwatch.core.monitor.Monitor.update_values` takes them as they are).
        ``values(value, parsed)`` takes the value's JSON already parsed
        (:meth:`parse_lines`)."""

    def __call__(self, value: bytes | None, key: bytes | None = None) -> Decoded | Rejected:
        fast = self.fast(value)
        return fast if fast is not None else decode(value, key, self._fmt)

    def fast(self, value: bytes | None) -> Decoded | None:
        """The decoded event when ``value`` is a plainly valid record, else None (then only
        :func:`~driftwatch.decoding.decoder.decode` can say what it is)."""
        found = self.values(value)
        return None if found is None else Decoded(found[0], plain_event(*found[1:]))

    def parse_lines(self, lines: Sequence[bytes]) -> list[Any] | None:
        """Each line's JSON, parsed in one call, or None when one call cannot vouch that
        every element is what parsing its line alone gives (then parse line by line).

        With orjson, one call over a chunk of lines, as one JSON array, costs less than a
        call per line. It is exact when every line is ``{`` … ``}`` and a line ending, and
        no line holds a bracket (``[`` or ``]``), all checked on the joined chunk in C: a
        string cannot run from one line into the next (JSON strings hold no raw line
        ending), nor can an object (after the comma between two lines a key would have to
        follow, and the next line starts with ``{``), nor an array; so each line gives at
        least one element, and exactly as many elements as lines means exactly one each,
        its line's own. Anything else (indentation, arrays in records, blank lines, CRLF,
        what the parser refuses) takes the per-line path. Only with orjson: the standard
        library's parser gains nothing from it.
        """
        count = len(lines)
        if self._loads is not _orjson_loads or not count:
            return None
        blob = b"".join(lines)
        if (b"[" in blob or b"]" in blob or blob[:1] != b"{"
                or blob.count(b"}\n{") != count - 1
                or not blob.endswith((b"}\n", b"}"))):
            return None
        try:
            parsed: list[Any] = self._loads(b"[" + b",".join(lines) + b"]")
        except ValueError:
            return None
        return parsed if len(parsed) == count else None


def _values(fmt: EventFormat, loads: Loads) -> ValuesOf:
    """The fast path for ``fmt`` as one function whose settings are closure variables: a
    replay calls it once per record, and reading a dozen attributes per call was a
    measurable part of its cost."""
    classes = _classes(fmt)
    label_field, score_field = fmt.label_field, fmt.score_field
    pred_field, ts_field = fmt.prediction_field, fmt.time_field
    # The model: a field (falling back to the constant), or always the constant; a key
    # (Kafka) takes the decoder's path.
    model_field = fmt.model_field if fmt.model_source == "field" else None
    model_constant = fmt.model_constant
    max_model_id = fmt.max_model_id_length
    limit = fmt.max_record_bytes
    by_key = fmt.model_source == "key"
    get_class = classes.get

    def values(value: bytes | None, parsed: Any = PARSE_SELF) -> Values | None:
        if not value or len(value) > limit or by_key:
            return None
        if parsed is PARSE_SELF:
            try:
                obj = loads(value)
            except (ValueError, RecursionError, TypeError):  # not JSON
                return None
        else:
            obj = parsed
        if type(obj) is not dict:
            return None
        raw: Any = obj.get(label_field, _ABSENT)
        try:
            y_true = get_class((type(raw), raw))
        except TypeError:  # an unhashable class value
            return None
        if y_true is None:
            return None
        raw = obj.get(score_field)
        kind = type(raw)
        if kind is float:
            if raw - raw != 0.0:  # NaN or infinite
                return None
            score = raw
        elif kind is int and -(2**63) <= raw < 2**64:
            score = float(raw)
        else:
            return None
        raw = obj.get(pred_field)
        y_pred = None
        if raw is not None:
            try:
                y_pred = get_class((type(raw), raw))
            except TypeError:
                return None
            if y_pred is None:
                return None
        raw = obj.get(ts_field)
        ts = None
        if raw is not None:
            kind = type(raw)
            if kind is not float and kind is not int:
                return None  # ISO-8601 strings and the rest: the decoder's
            ts = float(raw) if kind is int and -(2**63) <= raw < 2**64 else raw
            if type(ts) is not float or ts - ts != 0.0 or not ts < MAX_EVENT_TIME_S:
                return None
        model = model_constant
        if model_field is not None:
            raw = obj.get(model_field)
            if raw is not None:
                # The decoder's model id rule (model_id_problem), or the decoder's path.
                if type(raw) is not str or not 0 < len(raw) <= max_model_id \
                        or not raw.isprintable():
                    return None
                model = raw
        return model, y_true, score, y_pred, ts

    return values


def _columns(fmt: EventFormat) -> Callable[[Sequence[bytes], Sequence[Any]], Columns | None]:
    """:attr:`FastDecoder.columns` for ``fmt``: :func:`_values`'s rules a field at a time."""
    classes = _classes(fmt)
    label_field, score_field = fmt.label_field, fmt.score_field
    pred_field, ts_field = fmt.prediction_field, fmt.time_field
    model_field = fmt.model_field if fmt.model_source == "field" else None
    model_constant, max_model_id = fmt.model_constant, fmt.max_model_id_length
    limit, by_key = fmt.max_record_bytes, fmt.model_source == "key"
    # One type of class value at a time, the common case: a dict by value.
    by_kind: dict[type, dict[Any, int]] = {}
    for (kind, value), cls in classes.items():
        by_kind.setdefault(kind, {})[value] = cls

    def columns(lines: Sequence[bytes], parsed: Sequence[Any]) -> Columns | None:
        # Each field by one C-level map of dict.get over the run; a run that is not
        # uniformly of a common shape returns None.
        # No line of a parsed run is empty (an empty element is not JSON): the length
        # limit is the only check values() makes on the bytes.
        if by_key or not lines or max(map(len, lines)) > limit:
            return None
        if set(map(type, parsed)) != {dict}:
            return None
        raw = list(map(dict.get, parsed, repeat(label_field), repeat(_ABSENT)))
        kinds = set(map(type, raw))
        mapping = by_kind.get(kinds.pop()) if len(kinds) == 1 else None
        if mapping is None or not set(raw) <= mapping.keys():
            return None
        identity = all(type(key) is int and key == cls for key, cls in mapping.items())
        labels = raw if identity else list(map(mapping.__getitem__, raw))
        scores: list[Any] = list(map(dict.get, parsed, repeat(score_field)))
        if set(map(type, scores)) != {float} or \
                not np.isfinite(np.fromiter(scores, float, len(scores))).all():
            return None
        if list(map(dict.get, parsed, repeat(pred_field))).count(None) != len(parsed):
            return None
        raw = list(map(dict.get, parsed, repeat(ts_field)))
        kinds = set(map(type, raw))
        times: list[float | None]
        if kinds == {float}:
            stamps = np.fromiter(raw, float, len(raw))
            if not (np.isfinite(stamps).all() and stamps.max() < MAX_EVENT_TIME_S):
                return None
            times = raw
        elif kinds == {int}:  # orjson's ints fit 64 bits, and so convert as values() does
            converted = list(map(float, raw))
            if max(converted) >= MAX_EVENT_TIME_S:
                return None
            times = list(converted)
        elif kinds == {type(None)}:
            times = raw
        else:
            return None
        model = model_constant
        if model_field is not None:
            named = list(map(dict.get, parsed, repeat(model_field)))
            if not set(map(type, named)) <= {str, type(None)}:
                return None
            models = set(named)
            if len(models) != 1:
                return None
            found = models.pop()
            if found is not None:
                if type(found) is not str or not 0 < len(found) <= max_model_id \
                        or not found.isprintable():
                    return None
                model = found
        return Columns(model, labels, scores, times)

    return columns
