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


@settings(max_examples=120, deadline=None)
@given(data=st.data(), load=st.sampled_from([2, 3, 5, 1000]))
def test_pairs_add_remove_replace_across_block_layouts(data: st.DataObject, load: int) -> None:
    """add, remove and replace against brute force, with blocks small enough to split and merge.

    With a small load each class moves between one block (the inline fast path) and several
    (the SortedScores path) many times; replace() is checked in both layouts, including the
    change of class that makes one list grow past its block limit.
    """
    pairs = AUCPairs(load=load)
    held: list[tuple[int, float]] = []
    rate = data.draw(st.sampled_from([0.1, 0.5, 0.9]), label="positive_rate")
    operations = data.draw(st.lists(st.integers(0, 99), max_size=150), label="operations")
    for op in operations:
        example = (int(data.draw(st.floats(0, 1)) < rate), data.draw(st.sampled_from(TIES)))
        if op < 40 or not held:
            pairs.add(*example)
            held.append(example)
        elif op < 60:
            old = held.pop(data.draw(st.integers(0, len(held) - 1)))
            pairs.remove(*old)
        else:
            index = data.draw(st.integers(0, len(held) - 1))
            pairs.replace(*held[index], *example)
            held[index] = example
        assert pairs.halfcredits == brute_halfcredits(held)
        positives = sum(y for y, _ in held)
        assert (pairs.positives, pairs.negatives) == (positives, len(held) - positives)
        pairs._check()


@pytest.mark.parametrize("load", [2, 1000])
def test_replace_absent_example_changes_nothing(load: int) -> None:
    pairs = AUCPairs(load=load)
    examples = [(1, 0.7), (0, 0.2), (1, 0.5), (0, 0.5), (1, 0.9), (0, 0.1), (0, 0.3), (1, 0.3)]
    for example in examples:
        pairs.add(*example)
    before = (pairs.positives, pairs.negatives, pairs.halfcredits)
    for absent in [(1, 0.2), (0, 0.7), (1, 0.0), (0, 1.0)]:
        with pytest.raises(ValueError):
            pairs.replace(*absent, 1, 0.6)
        with pytest.raises(ValueError):
            pairs.remove(*absent)
        assert (pairs.positives, pairs.negatives, pairs.halfcredits) == before
        pairs._check()


@pytest.mark.parametrize("load", [2, 3, 4])
@pytest.mark.parametrize("positive_rate", [0.1, 0.5, 0.95])
def test_window_matches_brute_force_with_several_blocks(load: int, positive_rate: float) -> None:
    """The window's eviction path (replace) when its classes span several blocks."""
    window = PrequentialWindow(size=40)
    window._pairs = AUCPairs(load=load)
    shadow: deque[tuple[int, float]] = deque(maxlen=40)
    for i, (y, s) in enumerate(random_stream(load, 600, positive_rate)):
        window.update(y, s)
        shadow.append((y, s))
        assert window._pairs.halfcredits == brute_halfcredits(list(shadow))
        if i % 25 == 0:
            window._pairs._check()


@pytest.mark.parametrize("load", [2, 3])
def test_pairs_between_one_and_several_blocks(load: int) -> None:
    """Each way a class can outgrow its one block (add, and replace changing the class), then
    shrinking back so that the inline path resumes; brute force after every change."""
    rng = random.Random(load)
    pairs = AUCPairs(load=load)
    held: list[tuple[int, float]] = []

    def count(label: int) -> int:
        return sum(y == label for y, _ in held)

    def add(label: int) -> None:
        example = (label, rng.choice(TIES))
        pairs.add(*example)
        held.append(example)
        check()

    def check() -> None:
        assert pairs.halfcredits == brute_halfcredits(held)
        pairs._check()

    for label in (0, 1, 0, 1):
        while count(label) < 2 * load or count(1 - label) < 1:  # fill one block to its limit
            add(label if count(label) < 2 * load else 1 - label)
        assert pairs._lists is not None
        # Replace an example of the other class by one of this class: the list grows past its
        # block limit and splits. Grow it further, then come back down to one block.
        index = next(i for i, (y, _) in enumerate(held) if y != label)
        example = (label, rng.choice(TIES))
        pairs.replace(*held[index], *example)
        held[index] = example
        check()
        assert pairs._lists is None
        for _ in range(4 * load):
            add(label)
        while count(label) > load:
            index = next(i for i, (y, _) in enumerate(held) if y == label)
            pairs.remove(*held.pop(index))
            check()
        assert pairs._lists is not None  # one block per class again: the inline path
    for label in (0, 1):
        for _ in range(3 * load):  # past the limit through add() alone
            add(label)
        assert pairs._lists is None
        while count(label) > load:
            index = next(i for i, (y, _) in enumerate(held) if y == label)
            old = held.pop(index)
            example = (1 - label, rng.choice(TIES))
            if count(1 - label) < 2 * load:
                pairs.replace(*old, *example)  # in the block layout
                held.append(example)
            else:
                pairs.remove(*old)
            check()
    while held:
        old = held.pop(rng.randrange(len(held)))
        pairs.remove(*old)
        check()
    assert (pairs.positives, pairs.negatives, pairs.halfcredits) == (0, 0, 0)
    assert math.isnan(pairs.auc)
