"""SortedScores against a brute-force sorted list, across block splits and merges.

Small loads (blocks of a handful of values) make every structural path reachable with short
operation sequences: one block growing past 2 · load and splitting, several blocks, blocks
shrinking below load / 2 and merging (with and without a re-split), and the return to one
block. Values come from a tiny set so that duplicates span block boundaries.
"""

from __future__ import annotations

import random
from bisect import bisect_left, bisect_right

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from driftwatch.core.measures.sorted_scores import DEFAULT_LOAD, SortedScores

VALUES = (-1.5, 0.0, 0.25, 0.5, 0.5, 0.75, 2.0)
LOADS = st.sampled_from([2, 3, 4, 5, 8, DEFAULT_LOAD])


def assert_same(scores: SortedScores, shadow: list[float]) -> None:
    """Contents, length and every rank query agree with the sorted shadow list."""
    scores._check()
    assert list(scores) == shadow
    assert len(scores) == len(shadow)
    for x in (*VALUES, -9.0, 0.1, 9.0):
        left, right = bisect_left(shadow, x), bisect_right(shadow, x)
        assert (scores.rank_left(x), scores.rank_right(x), scores.rank_sum(x)) == (
            left,
            right,
            left + right,
        ), x


@settings(max_examples=150, deadline=None)
@given(data=st.data(), load=LOADS)
def test_random_operations_match_a_sorted_list(data: st.DataObject, load: int) -> None:
    values = data.draw(st.lists(st.sampled_from(VALUES), max_size=30), label="initial")
    scores = SortedScores(values, load=load)
    shadow = sorted(values)
    assert_same(scores, shadow)
    operations = data.draw(st.lists(st.integers(0, 99), max_size=150), label="operations")
    for op in operations:
        value = data.draw(st.sampled_from(VALUES))
        # Lean towards growth at first and shrinkage later, so sizes sweep up and down.
        if op < 55 or not shadow:
            scores.add(value)
            shadow.insert(bisect_right(shadow, value), value)
        elif value in shadow:
            scores.remove(value)
            shadow.remove(value)
        else:
            with pytest.raises(ValueError):
                scores.remove(value)
        assert_same(scores, shadow)


@pytest.mark.parametrize("load", [2, 3, 7])
@pytest.mark.parametrize("seed", range(4))
def test_grow_then_drain(load: int, seed: int) -> None:
    """Up to many blocks and back to one, checking the invariants after every change."""
    rng = random.Random(seed)
    scores = SortedScores(load=load)
    shadow: list[float] = []
    for _ in range(12 * load):
        value = float(rng.randrange(6))  # heavy duplication
        scores.add(value)
        shadow.insert(bisect_right(shadow, value), value)
        assert_same(scores, shadow)
    assert len(scores._blocks) > 1
    while shadow:
        value = shadow.pop(rng.randrange(len(shadow)))
        scores.remove(value)
        assert_same(scores, shadow)
    assert scores._blocks == [[]]


@pytest.mark.parametrize("load", [2, 3, 10])
@pytest.mark.parametrize("size", [0, 1, 4, 5, 6, 7, 20, 21, 61])
def test_bulk_construction(load: int, size: int) -> None:
    values = [random.Random(size).choice(VALUES) for _ in range(size)]
    scores = SortedScores(values, load=load)
    assert_same(scores, sorted(values))
    assert (len(scores._blocks) > 1) == (size > 2 * load)


@pytest.mark.parametrize("load", [2, DEFAULT_LOAD])
def test_remove_absent_changes_nothing(load: int) -> None:
    values = [0.0, 0.5, 0.5, 1.0, 2.0, 3.0, 4.0, 5.0]
    scores = SortedScores(values, load=load)
    for absent in (-1.0, 0.25, 0.75, 4.5, 9.0):
        with pytest.raises(ValueError):
            scores.remove(absent)
        assert_same(scores, values)


@pytest.mark.parametrize("load", [1, 0, -3, 2.5, True, "4"])
def test_load_must_be_an_integer_of_at_least_two(load: object) -> None:
    with pytest.raises(ValueError):
        SortedScores(load=load)  # type: ignore[arg-type]


def test_negative_zero_is_zero() -> None:
    """-0.0 == 0.0, so either removes the other and they rank as ties."""
    scores = SortedScores([0.0, -0.0, 1.0])
    assert scores.rank_sum(0.0) == scores.rank_sum(-0.0) == 2
    scores.remove(-0.0)
    scores.remove(0.0)
    assert list(scores) == [1.0]


def test_docstring_examples() -> None:
    import doctest

    from driftwatch.core.measures import sorted_scores

    assert doctest.testmod(sorted_scores).failed == 0
