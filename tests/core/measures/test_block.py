"""Block and batch AUC: Brzezinski & Stefanowski's (2017) Tables 1–2, and scikit-learn on random
streams."""

from __future__ import annotations

import doctest
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import roc_auc_score

from driftwatch.core.measures import block
from driftwatch.core.measures.block import BlockAUCs, average_auc, batch_auc, block_aucs
from tests.core.measures.test_paper_000 import D, arrivals, in_arrival_order


def test_doctests() -> None:
    assert doctest.testmod(block).failed == 0


@pytest.mark.parametrize(
    ("name", "expected_batch", "expected_block"),
    [("C1", 0.0, 1.0), ("C2", 0.0, 0.0), ("C3", 36 / 64, 1.0), ("C4", 0.0, 1.0)],
)
def test_paper_000_tables_1_and_2(name: str, expected_batch: float, expected_block: float) -> None:
    """§4.2.1 at d = 2, one-class blocks counted as 1 (MOA's and the paper's convention)."""
    labels, scores = zip(*arrivals(name), strict=True)
    assert batch_auc(labels, scores) == expected_batch
    values = block_aucs(labels, scores, D)
    assert len(values) == 8
    assert average_auc(values, one_class=1.0) == expected_block


def test_one_class_blocks_are_nan_and_skipped_by_default() -> None:
    labels, scores = zip(*arrivals("C1"), strict=True)  # all negatives first: one-class blocks
    values = block_aucs(labels, scores, D)
    assert all(math.isnan(v) for v in values)
    assert math.isnan(average_auc(values))
    flipped = in_arrival_order("-+-+-+-+-+-+-+-+", list(range(1, 17)))
    labels, scores = zip(*flipped, strict=True)
    assert block_aucs(labels, scores, D) == [0.0] * 8  # the paper's "would be 0.00"


def test_partial_block_and_input_checks() -> None:
    assert block_aucs([1, 0, 1], [0.9, 0.1, 0.5], 2) == [1.0]
    values = block_aucs([1, 0, 1], [0.9, 0.1, 0.5], 2, partial=True)
    assert values[0] == 1.0 and math.isnan(values[1])
    with pytest.raises(ValueError, match="size"):
        block_aucs([1], [0.5], 0)
    with pytest.raises(ValueError, match=r"y_score\[1\]"):
        block_aucs([1, 0], [0.5, math.inf], 2)
    with pytest.raises(ValueError, match="differ in length"):
        batch_auc([1, 0], [0.5])


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 1), st.integers(0, 9)), min_size=1, max_size=60),
    st.integers(1, 12),
)
def test_block_aucs_equal_sklearn_per_block(events: list[tuple[int, int]], size: int) -> None:
    labels = [y for y, _ in events]
    scores = [s / 9 for _, s in events]
    values = block_aucs(labels, scores, size, partial=True)
    assert len(values) == math.ceil(len(events) / size)
    for k, value in enumerate(values):
        y, s = labels[k * size : (k + 1) * size], scores[k * size : (k + 1) * size]
        if len(set(y)) < 2:
            assert math.isnan(value)
        else:
            assert value == pytest.approx(roc_auc_score(y, s), abs=1e-12)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 1), st.integers(0, 9)), max_size=80),
    st.integers(1, 12),
)
def test_streaming_block_aucs_equal_the_function(events: list[tuple[int, int]], size: int) -> None:
    labels = [y for y, _ in events]
    scores = [s / 9 for _, s in events]
    blocks = BlockAUCs(size)
    for y, s in zip(labels, scores, strict=True):
        blocks.update(y, s)
    expected = block_aucs(labels, scores, size)
    assert len(blocks.values) == len(expected)
    assert all(
        (math.isnan(a) and math.isnan(b)) or a == b
        for a, b in zip(blocks.values, expected, strict=True)
    )
    if labels:
        batch = batch_auc(labels, scores)
        assert (math.isnan(batch) and math.isnan(blocks.batch_auc)) or batch == blocks.batch_auc
    with pytest.raises(ValueError, match="y_score"):
        blocks.update(1, math.nan)
    assert math.isnan(BlockAUCs(size, batch=False).batch_auc)
