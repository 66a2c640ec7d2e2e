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

from driftwatch.core.measures.auc import DEFAULT_LIST_LIMIT, AUCPairs
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
        # ties earn half a pair (Brzezinski & Stefanowski 2017, Algorithm 1)
        ([(1, 0.5), (0, 0.5)], 0.5),
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


def expected_layout(was_sorted: bool, positives: int, negatives: int, limit: int) -> bool:
    """The layout rule: SortedList once a class exceeds the limit, lists again once both
    classes are back to at most half of it; True for the SortedList layout."""
    if was_sorted:
        return not (positives <= limit // 2 and negatives <= limit // 2)
    return positives > limit or negatives > limit


@settings(max_examples=120, deadline=None)
@given(data=st.data(), list_limit=st.sampled_from([2, 3, 5, DEFAULT_LIST_LIMIT]))
def test_pairs_add_remove_replace_across_layouts(data: st.DataObject, list_limit: int) -> None:
    """add, remove and replace against brute force, with a limit small enough to switch.

    With a small limit the pair count moves between the plain lists (the inline fast path)
    and ``SortedList`` many times; replace() is checked in both layouts, including the change
    of class that makes one list grow past the limit, and the layout after every change is
    the one the rule gives, and the scores read back (ascending, per class) are the ones held.
    """
    pairs = AUCPairs(list_limit=list_limit)
    held: list[tuple[int, float]] = []
    in_sorted = False
    rate = data.draw(st.sampled_from([0.1, 0.5, 0.9]), label="positive_rate")
    operations = data.draw(st.lists(st.integers(0, 99), max_size=150), label="operations")
    for step, op in enumerate(operations):
        example = (int(data.draw(st.floats(0, 1)) < rate), data.draw(st.sampled_from(TIES)))
        # Lean towards growth in the first half and shrinkage in the second, so that sizes
        # sweep up past the limit and back down below half of it.
        adds = 50 if 2 * step < len(operations) else 15
        if op < adds or not held:
            pairs.add(*example)
            held.append(example)
        elif op < 65:
            old = held.pop(data.draw(st.integers(0, len(held) - 1)))
            pairs.remove(*old)
        else:
            index = data.draw(st.integers(0, len(held) - 1))
            pairs.replace(*held[index], *example)
            held[index] = example
        assert pairs.halfcredits == brute_halfcredits(held)
        positives = sum(y for y, _ in held)
        assert (pairs.positives, pairs.negatives) == (positives, len(held) - positives)
        in_sorted = expected_layout(in_sorted, positives, len(held) - positives, list_limit)
        assert (pairs._lists is None) == in_sorted
        assert pairs.scores() == (sorted(s for y, s in held if y),
                                  sorted(s for y, s in held if not y))
        pairs._check()


@pytest.mark.parametrize("list_limit", [2, DEFAULT_LIST_LIMIT])
def test_replace_absent_example_changes_nothing(list_limit: int) -> None:
    pairs = AUCPairs(list_limit=list_limit)
    examples = [(1, 0.7), (0, 0.2), (1, 0.5), (0, 0.5), (1, 0.9), (0, 0.1), (0, 0.3), (1, 0.3)]
    for example in examples:
        pairs.add(*example)
    assert (pairs._lists is None) == (list_limit == 2)
    before = (pairs.positives, pairs.negatives, pairs.halfcredits)
    for absent in [(1, 0.2), (0, 0.7), (1, 0.0), (0, 1.0)]:
        with pytest.raises(ValueError, match=r"no (positive|negative) scored"):
            pairs.replace(*absent, 1, 0.6)
        with pytest.raises(ValueError, match=r"no (positive|negative) scored"):
            pairs.remove(*absent)
        assert (pairs.positives, pairs.negatives, pairs.halfcredits) == before
        pairs._check()


@pytest.mark.parametrize("list_limit", [2, 3, 4])
@pytest.mark.parametrize("positive_rate", [0.1, 0.5, 0.95])
def test_window_matches_brute_force_in_sorted_layout(
    list_limit: int, positive_rate: float
) -> None:
    """The window's eviction path (replace) when its classes are held in ``SortedList``."""
    window = PrequentialWindow(size=40)
    window._pairs = AUCPairs(list_limit=list_limit)
    shadow: deque[tuple[int, float]] = deque(maxlen=40)
    for i, (y, s) in enumerate(random_stream(list_limit, 600, positive_rate)):
        window.update(y, s)
        shadow.append((y, s))
        window._settle()  # one pending event: the eviction path, replace
        assert window._pairs.halfcredits == brute_halfcredits(list(shadow))
        if i % 25 == 0:
            window._pairs._check()


def test_large_window_in_several_sublists() -> None:
    """d = 4 500 with a limit of 1 000: the classes outgrow their lists and ``SortedList``
    splits them into several sublists (of at most 2 000), which the pair count must not
    notice."""
    size = 4500
    window = PrequentialWindow(size=size)
    window._pairs = AUCPairs(list_limit=1000)
    shadow: deque[tuple[int, float]] = deque(maxlen=size)
    for i, (y, s) in enumerate(random_stream(7, 7000, 0.4)):
        window.update(y, s)
        shadow.append((y, s))
        if i % 25 == 0:
            window._settle()  # 25 pending events: replace, one at a time
        if i % 500 == 499:
            window._settle()
            assert window._pairs.halfcredits == brute_halfcredits(list(shadow))
    pairs = window._pairs
    assert pairs._sorted is not None and len(pairs._sorted[1]._lists) > 1
    pairs._check()


@pytest.mark.parametrize("list_limit", [2, 3])
def test_each_operation_moves_between_layouts(list_limit: int) -> None:
    """add and replace each move the count to ``SortedList``, remove and replace each move it
    back, for either class; brute force after every change."""
    half = list_limit // 2
    rng = random.Random(list_limit)
    pairs = AUCPairs(list_limit=list_limit)
    held: list[tuple[int, float]] = []

    def count(label: int) -> int:
        return sum(y == label for y, _ in held)

    def change(old: tuple[int, float] | None, new: tuple[int, float] | None) -> None:
        if old is None:
            assert new is not None
            pairs.add(*new)
            held.append(new)
        elif new is None:
            pairs.remove(*old)
            held.remove(old)
        else:
            pairs.replace(*old, *new)
            held[held.index(old)] = new
        assert pairs.halfcredits == brute_halfcredits(held)
        pairs._check()

    def example(label: int) -> tuple[int, float]:
        return (label, rng.choice(TIES))

    def first(label: int) -> tuple[int, float]:
        return next(e for e in held if e[0] == label)

    for label in (0, 1):
        # add: this class fills its list, then one more add moves to SortedList.
        while count(label) < list_limit:
            change(None, example(label))
        assert pairs._lists is not None
        change(None, example(label))
        assert pairs._lists is None
        # remove: down to half the limit, the lists come back with the last removal.
        while count(label) > half + 1:
            change(first(label), None)
        assert pairs._lists is None
        change(first(label), None)
        assert pairs._lists is not None
        # replace: the other class gives its examples to this one until it outgrows its list.
        while count(1 - label) < list_limit - count(label) + 1:
            change(None, example(1 - label))
            if pairs._lists is None:  # the other class outgrew its list first: start over
                while count(1 - label) > half:
                    change(first(1 - label), None)
        while pairs._lists is not None:
            change(first(1 - label), example(label))
        assert count(label) == list_limit + 1
        # replace: with this class one above half the limit and the other one below it, one
        # replace from this class to the other brings both to half and the lists back.
        while count(1 - label) > half - 1:
            change(first(1 - label), None)
        while count(label) > half + 1:
            change(first(label), None)
        assert pairs._lists is None
        change(first(label), example(1 - label))
        assert pairs._lists is not None
        while held:
            change(held[-1], None)
    assert (pairs.positives, pairs.negatives, pairs.halfcredits) == (0, 0, 0)
    assert math.isnan(pairs.auc)


@pytest.mark.parametrize("list_limit", [1, 0, -3, 2.5, True, "4"])
def test_list_limit_must_be_an_integer_of_at_least_two(list_limit: object) -> None:
    with pytest.raises(ValueError, match="list_limit"):
        AUCPairs(list_limit=list_limit)  # type: ignore[arg-type]


@pytest.mark.parametrize("list_limit", [2, DEFAULT_LIST_LIMIT])
def test_negative_zero_is_zero(list_limit: int) -> None:
    """-0.0 == 0.0, so either removes the other and they count as ties, in both layouts."""
    pairs = AUCPairs(list_limit=list_limit)
    for example in [(1, 0.0), (1, 1.0), (1, 2.0), (0, -0.0)]:
        pairs.add(*example)
    assert pairs.halfcredits == 1 + 2 + 2
    pairs.remove(0, 0.0)
    pairs.remove(1, -0.0)
    assert (pairs.positives, pairs.negatives, pairs.halfcredits) == (2, 0, 0)
