"""PrequentialWindow: recounted after every event, refuses bad input whole, restores exactly."""

from __future__ import annotations

import base64
import json
import math
import random
import struct
from collections import deque
from fractions import Fraction
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from driftwatch.core.measures import crisp
from driftwatch.core.measures.auc import AUCPairs
from driftwatch.core.measures.registry import CONFUSION_MEASURES, CRISP_MEASURES
from driftwatch.core.window import ConfusionCounts, PrequentialWindow

Stream = list[tuple[int, float, int | None]]
SCORES = (0.0, 0.3, 0.5, 0.5, 0.7, 1.0)  # 0.5 is the default threshold: the ≥ edge matters


def random_stream(seed: int, length: int, positive_rate: float, predicted: bool) -> Stream:
    rng = random.Random(seed)
    return [
        (
            int(rng.random() < positive_rate),
            rng.choice(SCORES),
            rng.choice((0, 1, None)) if predicted else None,
        )
        for _ in range(length)
    ]


streams = st.builds(
    random_stream,
    seed=st.integers(0, 2**32 - 1),
    length=st.integers(0, 300),
    positive_rate=st.sampled_from([0.05, 0.3, 0.5, 0.7, 0.95]),
    predicted=st.booleans(),
)
sizes = st.one_of(st.integers(1, 5), st.integers(1, 120))
thresholds = st.sampled_from([0.5, 0.0, 0.7, -3.0, 2.0])


def same(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or a == b


def same_measures(a: dict[str, float], b: dict[str, float]) -> bool:
    return list(a) == list(b) and all(same(a[k], b[k]) for k in a)


def brute_halfcredits(held: list[tuple[int, float]]) -> int:
    """2 per correctly ordered (positive, negative) pair, 1 per tie, over every pair."""
    return sum(2 if p > q else 1 if p == q else 0
               for y, p in held if y for z, q in held if not z)


def recount(stream: Stream, end: int, size: int, threshold: float) -> tuple[ConfusionCounts, int]:
    """Confusion counts and persistent hits of the window after event ``end - 1``, from scratch."""
    cells = {"tp": 0, "fp": 0, "fn": 0, "tn": 0}
    hits = 0
    for i in range(max(0, end - size), end):
        y, s, p = stream[i]
        pred = int(s >= threshold) if p is None else p
        cells[("t" if y == pred else "f") + ("p" if pred else "n")] += 1
        hits += i > 0 and stream[i - 1][0] == y  # the stream's first event has no predecessor
    return ConfusionCounts(**cells), hits


@settings(max_examples=80, deadline=None)
@given(stream=streams, size=sizes, threshold=thresholds)
def test_counts_and_measures_equal_a_recount_after_every_event(
    stream: Stream, size: int, threshold: float
) -> None:
    window = PrequentialWindow(size=size, threshold=threshold)
    for end, (y, s, p) in enumerate(stream, start=1):
        window.update(y, s, p)
        confusion, hits = recount(stream, end, size, threshold)
        assert len(window) == min(end, size)
        assert window.confusion == confusion
        assert (window.positives, window.negatives) == (confusion.positives, confusion.negatives)
        assert window.persistent_hits == hits
        tp, fp, fn, tn = confusion.tp, confusion.fp, confusion.fn, confusion.tn
        expected = {"auc": window._pairs.auc}
        expected |= {name: f(tp, fp, fn, tn) for name, f in CONFUSION_MEASURES.items()}
        expected["kappa_per"] = crisp.kappa_per(tp, fp, fn, tn, hits)
        values = window.measures()
        assert same_measures(values, expected)
        assert all(same(window.measure(name), values[name]) for name in values)


@settings(max_examples=150, deadline=None)
@given(stream=streams, size=sizes, threshold=thresholds,
       reads=st.lists(st.integers(1, 400), max_size=30), list_limit=st.sampled_from([2, 3, 1000]))
def test_reads_at_any_moments_equal_a_recount(
    stream: Stream, size: int, threshold: float, reads: list[int], list_limit: int
) -> None:
    """An update queues its event and a read applies what is pending (one by one when few
    are, by a rebuild from the last ``size`` events when many are, or more than a window):
    whatever the moments of the reads, each sees exactly the window a recount gives, and the
    exported state is the one a window read after every event exports. ``list_limit`` 2 and
    3 put the rebuilt pair count in ``SortedList``."""
    window = PrequentialWindow(size=size, threshold=threshold)
    window._pairs = AUCPairs(list_limit=list_limit)
    eager = PrequentialWindow(size=size, threshold=threshold)
    moments = set(reads) | {len(stream)}
    for end, (y, s, p) in enumerate(stream, start=1):
        window.update(y, s, p)
        eager.update(y, s, p)
        eager.auc  # noqa: B018 (read after every event: applied one at a time)
        assert len(window) == min(end, size)
        if end not in moments:
            continue
        confusion, hits = recount(stream, end, size, threshold)
        assert window.confusion == confusion
        assert window.persistent_hits == hits
        held = [(y, s) for y, s, _ in stream[max(0, end - size):end]]
        assert window._pairs.halfcredits == brute_halfcredits(held)
        window._pairs._check()
        assert same_measures(window.measures(), eager.measures())
        assert window.export_state() == eager.export_state()
        assert window.scores_by_class() == (sorted(s for y, s in held if y),
                                            sorted(s for y, s in held if not y))


def test_a_read_after_many_events_rebuilds_and_one_after_few_applies_them() -> None:
    """The two ways a read catches up (a test of the choice itself, which the results do not
    show): a fifth of a window or more pending rebuilds the pair count (a new structure),
    less edits the one held."""
    window = PrequentialWindow(size=100)
    rng = random.Random(5)
    for _ in range(250):
        window.update(int(rng.random() < 0.3), rng.random())
    window.auc  # noqa: B018
    lists = window._pairs._lists
    assert lists is not None
    for _ in range(19):
        window.update(int(rng.random() < 0.3), rng.random())
    window.auc  # noqa: B018
    assert window._pairs._lists is lists  # 19 of 100: edited in place
    for _ in range(20):
        window.update(int(rng.random() < 0.3), rng.random())
    window.auc  # noqa: B018
    assert window._pairs._lists is not lists  # 20 of 100: rebuilt


def test_measures_order_and_names() -> None:
    window = PrequentialWindow(size=4)
    assert list(window.measures()) == ["auc", *CRISP_MEASURES]
    assert all(math.isnan(v) for v in window.measures().values())  # empty: all undefined
    with pytest.raises(ValueError, match="name"):
        window.measure("roc_auc")


def test_prediction_from_threshold_is_inclusive() -> None:
    window = PrequentialWindow(size=3, threshold=0.5)
    window.update(1, 0.5)  # score == threshold: predicted positive
    window.update(0, 0.4999)
    window.update(0, 0.9, 0)  # an explicit prediction wins over the score
    assert window.confusion == ConfusionCounts(tp=1, fp=0, fn=0, tn=2)


def test_first_event_is_a_persistent_miss_and_evicted_predecessors_still_count() -> None:
    window = PrequentialWindow(size=1)
    window.update(1, 0.2)
    assert window.persistent_hits == 0  # no predecessor
    window.update(1, 0.3)
    assert window.persistent_hits == 1  # its predecessor left the window but was a 1
    window.update(0, 0.3)
    assert window.persistent_hits == 0
    assert window.measure("kappa_per") == 1.0  # p0 = 1 (0.3 < 0.5 predicts 0), pper = 0


def test_accepts_every_value_the_event_validators_accept() -> None:
    """The inline int/float shortcut must not narrow what check_label/check_score accept."""
    window = PrequentialWindow(size=10)
    window.update(True, 1, False)
    window.update(np.int64(0), np.float64(0.25), np.int64(1))
    window.update(False, Fraction(3, 4))
    assert window.export_state()["events"] == [[1, 1.0, 0], [0, 0.25, 1], [0, 0.75, 1]]
    assert all(type(v) in (int, float) for e in window.export_state()["events"] for v in e)
    with pytest.raises(ValueError, match="y_score"):
        window.update(1, np.float64("nan"))


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"size": 0}, "size"),
        ({"size": -5}, "size"),
        ({"size": 2.0}, "size"),
        ({"size": True}, "size"),
        ({"size": "10"}, "size"),
        ({"threshold": math.nan}, "threshold"),
        ({"threshold": math.inf}, "threshold"),
        ({"threshold": "0.5"}, "threshold"),
    ],
)
def test_bad_constructor_arguments(kwargs: dict[str, Any], name: str) -> None:
    with pytest.raises(ValueError, match=name):
        PrequentialWindow(**kwargs)


@pytest.mark.parametrize(
    ("event", "name"),
    [
        ((7, 0.5, None), "y_true"),
        ((1.0, 0.5, None), "y_true"),
        ((-1, 0.5, None), "y_true"),
        (("1", 0.5, None), "y_true"),
        ((None, 0.5, None), "y_true"),
        ((1, math.nan, None), "y_score"),
        ((1, math.inf, None), "y_score"),
        ((1, -math.inf, None), "y_score"),
        ((1, "0.5", None), "y_score"),
        ((1, None, None), "y_score"),
        ((1, 0.5, 2), "y_pred"),
        ((1, 0.5, 0.5), "y_pred"),
        ((1, 0.5, 1.0), "y_pred"),
        ((1, math.nan, 2), "y_score"),  # the first bad argument is the one named
    ],
)
@pytest.mark.parametrize("full", [False, True])
def test_bad_event_is_refused_whole(event: tuple[Any, Any, Any], name: str, full: bool) -> None:
    window = PrequentialWindow(size=3)
    for y, s in [(1, 0.9), (0, 0.2), (1, 0.4)][: 3 if full else 2]:
        window.update(y, s)
    before = (window.export_state(), window.confusion, window.persistent_hits)
    values = window.measures()
    with pytest.raises(ValueError, match=name):
        window.update(*event)
    assert (window.export_state(), window.confusion, window.persistent_hits) == before
    assert same_measures(window.measures(), values)
    window._pairs._check()


@settings(max_examples=80, deadline=None)
@given(stream=streams, size=sizes, threshold=thresholds, cut=st.integers(0, 300))
def test_restored_window_continues_identically(
    stream: Stream, size: int, threshold: float, cut: int
) -> None:
    window = PrequentialWindow(size=size, threshold=threshold)
    for event in stream[:cut]:
        window.update(*event)
    state = window.export_state()
    restored = PrequentialWindow.from_state(json.loads(json.dumps(state)))
    assert restored.export_state() == state
    assert (restored.size, restored.threshold) == (size, threshold)
    assert_same_window(restored, window)
    # The compact form (what a monitor saves) restores the same window, every bit of every
    # score included, and a window restored from it exports the same compact state.
    compact = window.export_state(compact=True)
    from_compact = PrequentialWindow.from_state(json.loads(json.dumps(compact)))
    assert from_compact.export_state(compact=True) == compact
    assert_same_window(from_compact, window)
    # Events as JSON gives them back take an inline check; any other sequence the named
    # validators: both rebuild the same window.
    slow = PrequentialWindow.from_state({**state, "events": [
        (bool(y), s, p) for y, s, p in state["events"]]})
    assert_same_window(slow, window)
    for event in stream[cut:]:
        window.update(*event)
        restored.update(*event)
        assert_same_window(restored, window)


def assert_same_window(restored: PrequentialWindow, window: PrequentialWindow) -> None:
    assert restored.export_state() == window.export_state()
    assert same_measures(restored.measures(), window.measures())
    assert restored.confusion == window.confusion
    assert restored.persistent_hits == window.persistent_hits
    assert restored._pairs.halfcredits == window._pairs.halfcredits


def good_state() -> dict[str, Any]:
    window = PrequentialWindow(size=3, threshold=0.5)
    for y, s in [(1, 0.9), (0, 0.2), (1, 0.4), (1, 0.6)]:
        window.update(y, s)
    return window.export_state()


def test_state_is_plain_data() -> None:
    state = good_state()
    assert state == {
        "version": 1,
        "size": 3,
        "threshold": 0.5,
        "events": [[0, 0.2, 0], [1, 0.4, 0], [1, 0.6, 1]],
        "label_before_window": 1,
    }
    assert json.loads(json.dumps(state)) == state


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda s: s.pop("events"), "missing"),
        (lambda s: s.update(extra=1), "unknown"),
        (lambda s: s.update(version=3), "version"),
        (lambda s: s.update(version=2), "missing keys cells, scores"),
        (lambda s: s.update(size=0), "size"),
        (lambda s: s.update(size=2), "do not fit"),
        (lambda s: s.update(threshold=None), "threshold"),
        (lambda s: s.update(events="abc"), "events"),
        (lambda s: s.update(events=[[1, 0.5]]), r"events\[0\]"),
        (lambda s: s["events"].__setitem__(1, [2, 0.5, 0]), r"events\[1\] y_true"),
        (lambda s: s["events"].__setitem__(1, [1, math.nan, 0]), r"events\[1\] y_score"),
        (lambda s: s["events"].__setitem__(2, [1, 0.5, None]), r"events\[2\] y_pred"),
        (lambda s: s.update(label_before_window=3), "label_before_window"),
        (lambda s: s.update(events=[]), "label_before_window"),
    ],
)
def test_bad_state_is_refused(change: Any, message: str) -> None:
    state = good_state()
    change(state)
    with pytest.raises(ValueError, match=message):
        PrequentialWindow.from_state(state)


def test_compact_state_is_plain_data() -> None:
    window = PrequentialWindow(size=3, threshold=0.5)
    for y, s in [(1, 0.9), (0, 0.2), (1, 0.4), (1, 0.6)]:
        window.update(y, s)
    state = window.export_state(compact=True)
    assert state == {
        "version": 2,
        "size": 3,
        "threshold": 0.5,
        "scores": base64.b64encode(struct.pack("<3d", 0.2, 0.4, 0.6)).decode(),
        "cells": "023",  # 2·y_true + y_pred: (0, 0), (1, 0), (1, 1)
        "label_before_window": 1,
    }
    assert json.loads(json.dumps(state)) == state


def _scores(*values: float) -> str:
    return base64.b64encode(struct.pack(f"<{len(values)}d", *values)).decode()


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda s: s.pop("cells"), "missing"),
        (lambda s: s.update(events=[]), "unknown"),
        (lambda s: s.update(scores=3), "base64 string"),
        (lambda s: s.update(scores="not base64!"), "not base64"),
        (lambda s: s.update(scores=base64.b64encode(b"1234567").decode()), "whole doubles"),
        (lambda s: s.update(scores=_scores(0.2, math.inf, 0.6)), "not finite"),
        (lambda s: s.update(scores=_scores(0.2, math.nan, 0.6)), "not finite"),
        (lambda s: s.update(cells="02"), "3 digits 0 to 3"),
        (lambda s: s.update(cells="024"), "3 digits 0 to 3"),
        (lambda s: s.update(cells="0é3"), "3 digits 0 to 3"),
        (lambda s: s.update(cells=[0, 2, 3]), "3 digits 0 to 3"),
        (lambda s: s.update(size=2), "do not fit"),
        (lambda s: s.update(label_before_window=3), "label_before_window"),
        (lambda s: s.update(scores="", cells=""), "label_before_window"),
    ],
)
def test_bad_compact_state_is_refused(change: Any, message: str) -> None:
    window = PrequentialWindow(size=3, threshold=0.5)
    for y, s in [(1, 0.9), (0, 0.2), (1, 0.4), (1, 0.6)]:
        window.update(y, s)
    state = window.export_state(compact=True)
    change(state)
    with pytest.raises(ValueError, match=message):
        PrequentialWindow.from_state(state)


def test_bad_state_type() -> None:
    with pytest.raises(ValueError, match="mapping"):
        PrequentialWindow.from_state([1, 2, 3])  # type: ignore[arg-type]


def test_shared_window_feeds_auc_and_confusion() -> None:
    """The same evictions reach both structures: a long run keeps them in step."""
    window = PrequentialWindow(size=50)
    held: deque[int] = deque(maxlen=50)
    rng = random.Random(7)
    for _ in range(2000):
        y = int(rng.random() < 0.2)
        window.update(y, rng.random())
        held.append(y)
        confusion = window.confusion
        assert window.positives == confusion.positives == sum(held)
        assert window.negatives == confusion.negatives == len(held) - sum(held)
    window._pairs._check()
