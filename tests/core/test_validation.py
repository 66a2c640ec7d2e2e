"""Validation happens once, at the boundary, and every public entry point still refuses bad
input with a clear error.

The boundaries: :class:`Event`'s constructor (an embedder's events), the decoder (records),
:class:`~driftwatch.api.ModelMonitor.update` (which builds an Event), and the public methods of
the core's building blocks (window and detector ``update``). Behind them the monitor, the
window's ``update_valid`` and the detectors' ``update_valid`` trust what they are given; these
tests check that the trusted paths compute exactly what the checked ones do.
"""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from driftwatch.core.events import Event, check_label, check_score, valid_event
from driftwatch.core.monitor import Monitor, MonitorConfig
from driftwatch.core.window import PrequentialWindow
from driftwatch.decoding.decoder import Decoded, EventFormat, Rejected, decode

labels = st.sampled_from([0, 1])
scores = st.floats(allow_nan=False, allow_infinity=False, min_value=-1e6, max_value=1e6)
predictions = st.none() | labels
times = st.none() | st.floats(allow_nan=False, allow_infinity=False, min_value=0, max_value=1e10)


@settings(max_examples=200, deadline=None)
@given(y_true=labels, y_score=scores, y_pred=predictions, ts=times)
def test_valid_event_is_the_checked_event(y_true: int, y_score: float, y_pred: int | None,
                                          ts: float | None) -> None:
    built = valid_event(y_true, y_score, y_pred, ts)
    assert built == Event(y_true, y_score, y_pred, ts)
    assert type(built) is Event


@pytest.mark.parametrize(("args", "name"), [
    ((2, 0.5), "y_true"),
    ((0.0, 0.5), "y_true"),
    (("1", 0.5), "y_true"),
    ((1, math.nan), "y_score"),
    ((1, math.inf), "y_score"),
    ((1, "0.5"), "y_score"),
    ((1, True), "y_score"),
    ((1, 0.5, 2), "y_pred"),
    ((1, 0.5, 0.5), "y_pred"),
    ((1, 0.5, None, math.nan), "ts"),
])
def test_event_refuses_bad_values_naming_them(args: tuple[Any, ...], name: str) -> None:
    with pytest.raises(ValueError, match=name):
        Event(*args)


def test_monitor_refuses_anything_but_an_event_unchanged() -> None:
    monitor = Monitor("m", MonitorConfig(window_size=10))
    monitor.update(Event(1, 0.8))
    before = repr(monitor.snapshot())
    for bad in [(1, 0.8), {"y_true": 1, "y_score": 0.8}, None]:
        with pytest.raises(TypeError, match="event must be an Event"):
            monitor.update(bad)  # type: ignore[arg-type]
    assert monitor.events == 1 and repr(monitor.snapshot()) == before


@settings(max_examples=60, deadline=None)
@given(events=st.lists(st.tuples(st.sampled_from([0, 1, True, False]), scores | st.integers(-9, 9),
                                 st.none() | st.sampled_from([0, 1, True, False])),
                       max_size=120),
       size=st.integers(1, 20))
def test_window_update_valid_is_update_after_the_checks(
        events: list[tuple[Any, Any, Any]], size: int) -> None:
    """update = its checks + update_valid: what the checks make of any valid argument (bools,
    ints as scores) gives update_valid the same window."""
    checked, trusted = PrequentialWindow(size, 0.25), PrequentialWindow(size, 0.25)
    for y_true, y_score, y_pred in events:
        checked.update(y_true, y_score, y_pred)
        trusted.update_valid(check_label(y_true), check_score(y_score),
                             None if y_pred is None else check_label(y_pred, "y_pred"))
    assert trusted.export_state() == checked.export_state()
    assert trusted.persistent_hits == checked.persistent_hits
    trusted._pairs._check()


def test_the_decoder_is_the_records_boundary() -> None:
    """Records are checked by the decoder: a bad one is a rejection with a reason, a good one
    an Event equal to the checked constructor's."""
    fmt = EventFormat()
    bad = decode(b'{"label": 1, "score": "high"}', None, fmt)
    assert isinstance(bad, Rejected) and bad.reason == "bad_score"
    assert isinstance(decode(b'{"label": 3, "score": 0.5}', None, fmt), Rejected)
    good = decode(b'{"label": true, "score": 1, "ts": 5}', None, fmt)
    assert isinstance(good, Decoded) and good.event == Event(1, 1.0, None, 5.0)
    assert type(good.event.y_true) is int and type(good.event.y_score) is float
