"""The sorted weighted scores against a plain list, through splits, merges and ties."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from driftwatch.core.estimation.weighted_scores import EXACT_LIMIT, WeightedScores

score = st.sampled_from([0.1, 0.2, 0.2, 0.5]) | st.floats(-1, 1)
operations = st.lists(st.tuples(st.booleans(), score, st.integers(0, 2**32)), max_size=120)


def brute_rank(entries: list[tuple[float, int]], x: float) -> tuple[int, int, int, int]:
    below = [w for s, w in entries if s < x]
    tied = [w for s, w in entries if s == x]
    return len(below), sum(below), len(tied), sum(tied)


@given(operations, st.integers(2, 6))
def test_matches_a_plain_list(ops: list[tuple[bool, float, int]], load: int) -> None:
    ws = WeightedScores(load=load)
    held: list[tuple[float, int]] = []
    for insert, x, w in ops:
        if insert or not held:
            assert ws.add(x, w) == brute_rank(held, x)
            held.append((x, w))
        else:
            x, w = held.pop(w % len(held))  # remove one held entry, ties included
            assert ws.remove(x, w) == brute_rank(held, x)
        ws._check()
        assert sorted(ws.items()) == sorted(held)
        assert ws.rank(x) == brute_rank(held, x)
    assert len(ws) == len(held) and ws.weight == sum(w for _, w in held)


def test_ties_across_many_chunks() -> None:
    # 50 entries tied at 0.5 span a dozen chunks of load 2; the weights differ, so a
    # removal must find its weight among them.
    ws = WeightedScores(load=2)
    for w in range(50):
        ws.add(0.5, w)
    ws.add(0.1, 7)
    ws.add(0.9, 9)
    assert ws.rank(0.5) == (1, 7, 50, sum(range(50)))
    assert ws.remove(0.5, 3) == (1, 7, 49, sum(range(50)) - 3)
    ws._check()
    with pytest.raises(ValueError, match="no entry"):
        ws.remove(0.5, 3)
    with pytest.raises(ValueError, match="no entry"):
        ws.remove(0.3, 1)
    ws._check()


def test_assign_equals_the_edits() -> None:
    entries = [(0.3, 5), (0.1, 2), (0.3, 1), (0.7, 4), (0.2, 2)]
    built = WeightedScores(load=2)
    for x, w in entries:
        built.add(x, w)
    assigned = WeightedScores(load=2)
    assigned.assign(entries)
    assigned._check()
    for x in (0.0, 0.1, 0.2, 0.3, 0.5, 0.7, 0.8):
        assert assigned.rank(x) == built.rank(x)


def test_sums_stay_exact_or_are_refused() -> None:
    ws = WeightedScores()
    ws.add(0.5, EXACT_LIMIT - 2)
    ws.add(0.6, 1)
    assert ws.weight == EXACT_LIMIT - 1
    with pytest.raises(ValueError, match="2\\*\\*53"):
        ws.add(0.7, 1)
    assert len(ws) == 2 and ws.weight == EXACT_LIMIT - 1
    with pytest.raises(ValueError, match="load"):
        WeightedScores(load=1)
