"""The incremental pair count against brute force, exactly, after every event.

Scores come from a tiny set so ties are the rule, and class rates are skewed so windows with
one class (NaN) are common. Exactness is checked on the integer half-credit count, which is
the AUC numerator times 2: equal integers mean equal rationals, and equal floats follow.
"""

from __future__ import annotations

import math
import random
from collections import deque
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import roc_auc_score

from driftwatch.core.measures.auc import AUCPairs
from driftwatch.core.window import PrequentialWindow

TIES = (0.0, 0.25, 0.5, 0.5, 0.75, 1.0)


def brute_halfcredits(window: list[tuple[int, float]]) -> int:
    """2 per correctly ordered (positive, negative) pair, 1 per tie: O(P·N), vectorized."""
    pos = np.array([s for y, s in window if y == 1], dtype=np.float64)
    neg = np.array([s for y, s in window if y == 0], dtype=np.float64)
    if pos.size == 0 or neg.size == 0:
        return 0
    above = pos[:, None] > neg[None, :]
    tied = pos[:, None] == neg[None, :]
    return int(2 * above.sum() + tied.sum())


def brute_auc(window: list[tuple[int, float]]) -> Fraction | None:
    positives = sum(y for y, _ in window)
    negatives = len(window) - positives
    if positives == 0 or negatives == 0:
        return None
    return Fraction(brute_halfcredits(window), 2 * positives * negatives)


def random_stream(seed: int, length: int, positive_rate: float) -> list[tuple[int, float]]:
    rng = random.Random(seed)
    return [(int(rng.random() < positive_rate), rng.choice(TIES)) for _ in range(length)]


streams = st.builds(
    random_stream,
    seed=st.integers(0, 2**32 - 1),
    length=st.integers(0, 500),
    positive_rate=st.sampled_from([0.01, 0.1, 0.3, 0.5, 0.9, 0.99]),
)


@settings(max_examples=60, deadline=None)
@given(stream=streams, size=st.one_of(st.integers(1, 8), st.integers(1, 300)))
def test_window_auc_equals_brute_force_after_every_event(
    stream: list[tuple[int, float]], size: int
) -> None:
    assert_matches_brute_force(stream, size)


@pytest.mark.parametrize("size", [1, 2, 17, 300])
@pytest.mark.parametrize("positive_rate", [0.03, 0.5])
def test_long_streams_match_brute_force(size: int, positive_rate: float) -> None:
    """Many evictions per window length, which short generated streams rarely reach."""
    assert_matches_brute_force(random_stream(size, 1500, positive_rate), size)


def assert_matches_brute_force(stream: list[tuple[int, float]], size: int) -> None:
    window = PrequentialWindow(size=size)
    shadow: deque[tuple[int, float]] = deque(maxlen=size)
    for i, (y, s) in enumerate(stream):
        window.update(y, s)
        shadow.append((y, s))
        held = list(shadow)
        positives = sum(y for y, _ in held)
        assert (window.positives, window.negatives) == (positives, len(held) - positives)
        pairs = window._pairs
        expected = brute_auc(held)
        if expected is None:
            assert math.isnan(window.auc)
        else:
            assert pairs.halfcredits == brute_halfcredits(held)
            assert Fraction(pairs.halfcredits, 2 * positives * (len(held) - positives)) == expected
            assert window.auc == float(expected)  # one correctly rounded division
        if i % 50 == 0 or i == len(stream) - 1:
            pairs._check()


@settings(max_examples=80, deadline=None)
@given(data=st.data())
def test_pairs_add_remove_any_order(data: st.DataObject) -> None:
    """Removal need not be oldest-first: any held example can go, in any order."""
    pairs = AUCPairs()
    held: list[tuple[int, float]] = []
    operations = data.draw(st.lists(st.booleans(), max_size=120))
    for add in operations:
        if add or not held:
            example = (data.draw(st.integers(0, 1)), data.draw(st.sampled_from(TIES)))
            pairs.add(*example)
            held.append(example)
        else:
            example = held.pop(data.draw(st.integers(0, len(held) - 1)))
            pairs.remove(*example)
        assert pairs.halfcredits == brute_halfcredits(held)
        assert len(pairs) == len(held)
        pairs._check()


def test_remove_absent_example_changes_nothing() -> None:
    pairs = AUCPairs()
    pairs.add(1, 0.7)
    pairs.add(0, 0.2)
    with pytest.raises(ValueError):
        pairs.remove(1, 0.2)
    with pytest.raises(ValueError):
        pairs.remove(0, 0.7)
    assert (pairs.positives, pairs.negatives, pairs.halfcredits) == (1, 1, 2)
    pairs._check()


@pytest.mark.parametrize(
    ("examples", "expected"),
    [
        ([(1, 0.5), (0, 0.5)], 0.5),  # REFERENCE.md tie vectors
        ([(1, 0.5), (0, 0.5), (0, 0.5)], 0.5),
        ([(1, 0.5), (0, 0.5), (1, 0.7), (0, 0.2), (1, 0.2)], 4 / 6),
        ([(1, 0.9), (0, 0.1)], 1.0),
        ([(1, 0.1), (0, 0.9)], 0.0),
    ],
)
def test_worked_values(examples: list[tuple[int, float]], expected: float) -> None:
    pairs = AUCPairs()
    for example in examples:
        pairs.add(*example)
    assert pairs.auc == expected
    window = PrequentialWindow(size=len(examples))
    for y, s in examples:
        window.update(y, s)
    assert window.auc == expected


@pytest.mark.parametrize("examples", [[], [(1, 0.3)], [(0, 0.3), (0, 0.9)], [(1, 0.1), (1, 0.1)]])
def test_nan_without_both_classes(examples: list[tuple[int, float]]) -> None:
    pairs = AUCPairs()
    for example in examples:
        pairs.add(*example)
    assert math.isnan(pairs.auc)


def test_nan_when_a_class_leaves_the_window() -> None:
    window = PrequentialWindow(size=2)
    window.update(1, 0.9)
    window.update(0, 0.1)
    assert window.auc == 1.0
    window.update(0, 0.4)  # evicts the only positive
    assert math.isnan(window.auc)


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    size=st.integers(2, 80),
    positive_rate=st.sampled_from([0.2, 0.5, 0.8]),
    tied=st.booleans(),
)
def test_matches_sklearn_on_windows_with_both_classes(
    seed: int, size: int, positive_rate: float, tied: bool
) -> None:
    rng = random.Random(seed)
    window = PrequentialWindow(size=size)
    shadow: deque[tuple[int, float]] = deque(maxlen=size)
    for i in range(3 * size):
        y = int(rng.random() < positive_rate)
        s = rng.choice(TIES) if tied else rng.gauss(y, 1.0)
        window.update(y, s)
        shadow.append((y, s))
        labels = [y for y, _ in shadow]
        if i % 7 == 0 and 0 < sum(labels) < len(labels):
            expected = roc_auc_score(labels, [s for _, s in shadow])
            assert window.auc == pytest.approx(expected, abs=1e-12)


def test_docstring_examples() -> None:
    import doctest

    from driftwatch.core.measures import auc

    assert doctest.testmod(auc).failed == 0
