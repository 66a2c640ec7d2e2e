"""AdaptiveWindow: a fixed window of min(ADWIN's width, max_size) at every step, shrinking
after a change, equal to the fixed window of max_size whenever ADWIN's width reaches it."""

from __future__ import annotations

import doctest
import json
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from driftwatch.core import adaptive_window
from driftwatch.core.adaptive_window import AdaptiveWindow
from driftwatch.core.detectors.adwin import ADWIN
from driftwatch.core.window import PrequentialWindow
from tests.core.test_window import Stream, same_measures, streams


def scored_stream(seed: int, length: int, error_rates: list[tuple[int, float]]) -> Stream:
    """Labels ~ Bernoulli(0.4); the prediction is wrong with the rate in force at t."""
    rng = random.Random(seed)
    events: Stream = []
    for t in range(length):
        rate = next(r for start, r in reversed(error_rates) if t >= start)
        y = int(rng.random() < 0.4)
        wrong = rng.random() < rate
        score = rng.uniform(0.5, 1.0) if (y == 1) != wrong else rng.uniform(0.0, 0.5)
        events.append((y, round(score, 3), None))
    return events


def fixed_window_of(stream: Stream, end: int, size: int) -> PrequentialWindow:
    window = PrequentialWindow(size=size)
    for y, s, p in stream[:end]:
        window.update(y, s, p)
    return window


def test_doctests() -> None:
    assert doctest.testmod(adaptive_window).failed == 0


@settings(max_examples=40, deadline=None)
@given(stream=streams, max_size=st.integers(1, 80), clock=st.sampled_from([1, 4, 32]))
def test_is_a_fixed_window_of_min_width_and_max_size_at_every_step(
    stream: Stream, max_size: int, clock: int
) -> None:
    """The exact statement: after every event the window holds the last min(W, max_size)
    events of the stream, W being the width of an ADWIN fed the same 0/1 losses."""
    window = AdaptiveWindow(max_size=max_size, clock=clock, grace_period=5, min_window_length=2)
    reference = ADWIN(clock=clock, grace_period=5, min_window_length=2, direction="both")
    for t, (y, s, p) in enumerate(stream, 1):
        window.update(y, s, p)
        predicted = p if p is not None else int(s >= 0.5)
        reference.update(float(predicted != y))
        length = min(reference.width, max_size)
        assert len(window) == length
        assert window.adwin_width == reference.width
        expected = fixed_window_of(stream, t, length)
        assert same_measures(window.measures(), expected.measures())
        assert window.persistent_hits == expected.persistent_hits
        window._pairs._check()


def test_equals_the_fixed_window_once_adwin_reaches_max_size_on_stationary_data() -> None:
    d = 500
    stream = scored_stream(seed=3, length=6000, error_rates=[(0, 0.2)])
    adaptive, fixed = AdaptiveWindow(max_size=d), PrequentialWindow(size=d)
    equal_steps = 0
    for y, s, p in stream:
        adaptive.update(y, s, p)
        fixed.update(y, s, p)
        if adaptive.adwin_width >= d:
            assert same_measures(adaptive.measures(), fixed.measures())
            equal_steps += 1
        else:
            assert len(adaptive) == adaptive.adwin_width < d
    # Stationary: no cut on this seed, so from the d-th event on the two are the same window.
    assert adaptive.cuts == 0
    assert equal_steps == len(stream) - d + 1


def test_shrinks_after_a_change_and_tracks_the_new_error_rate() -> None:
    stream = scored_stream(seed=5, length=8000, error_rates=[(0, 0.1), (4000, 0.35)])
    adaptive, fixed = AdaptiveWindow(max_size=10_000), PrequentialWindow(size=10_000)
    lengths = []
    for y, s, p in stream:
        adaptive.update(y, s, p)
        fixed.update(y, s, p)
        lengths.append(len(adaptive))
    assert lengths[3999] == 4000  # no cut before the change on this seed
    after = lengths[4000:]
    shortest = min(after)
    assert shortest < 1000  # the old concept is dropped...
    assert after.index(shortest) < 1000  # ...within 1 000 events of the change
    assert adaptive.cuts >= 1
    # It then grows again over the new concept: at the end it holds the 4 000 events since the
    # change and at most a few dozen before it (ADWIN cuts at bucket boundaries).
    assert 4000 <= len(adaptive) < 4100 and len(fixed) == 8000
    assert adaptive.measure("accuracy") == pytest.approx(0.65, abs=0.03)
    assert fixed.measure("accuracy") > 0.75


@settings(max_examples=40, deadline=None)
@given(stream=streams, max_size=st.integers(1, 60), cut=st.integers(0, 300))
def test_restored_window_continues_identically(stream: Stream, max_size: int, cut: int) -> None:
    window = AdaptiveWindow(max_size=max_size, clock=4, grace_period=5)
    for y, s, p in stream[:cut]:
        window.update(y, s, p)
    state = json.loads(json.dumps(window.export_state()))
    restored = AdaptiveWindow.from_state(state)
    assert restored.export_state() == window.export_state()
    for y, s, p in stream[cut:]:
        window.update(y, s, p)
        restored.update(y, s, p)
        assert len(restored) == len(window)
        assert same_measures(restored.measures(), window.measures())
    assert restored.cuts == window.cuts


def test_bad_state_is_refused() -> None:
    window = AdaptiveWindow(max_size=10)
    for y, s in [(1, 0.9), (0, 0.2), (1, 0.4)]:
        window.update(y, s)
    good = window.export_state()
    with pytest.raises(ValueError, match="missing keys"):
        AdaptiveWindow.from_state({k: v for k, v in good.items() if k != "adwin"})
    with pytest.raises(ValueError, match="more than ADWIN's width"):
        AdaptiveWindow.from_state({**good, "events": good["events"] + [[0, 0.1, 0]]})
    with pytest.raises(ValueError, match="fewer than"):
        AdaptiveWindow.from_state({**good, "events": good["events"][1:]})
    with pytest.raises(ValueError, match="state adwin"):
        AdaptiveWindow.from_state({**good, "adwin": {"name": "ddm"}})
    with pytest.raises(ValueError, match="cuts"):
        AdaptiveWindow.from_state({**good, "cuts": -1})
    with pytest.raises(ValueError, match="unknown keys"):
        AdaptiveWindow.from_state({**good, "extra": 1})


def test_rejected_event_changes_nothing() -> None:
    window = AdaptiveWindow(max_size=10)
    window.update(1, 0.9)
    before = window.export_state()
    with pytest.raises(ValueError, match="y_score"):
        window.update(0, float("nan"))
    assert window.export_state() == before
    with pytest.raises(ValueError, match="size"):
        AdaptiveWindow(max_size=0)
    with pytest.raises(ValueError, match="delta"):
        AdaptiveWindow(delta=2.0)
