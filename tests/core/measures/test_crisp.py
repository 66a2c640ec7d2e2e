"""Every crisp measure against its textbook definition (Bifet et al. 2015, §5; Brzezinski et al.
2019, Table I).

The references below are written from the table's definitions with exact fractions, not from
crisp.py's rearranged formulas, so they check the algebra as well as the code. A measure that
is one correctly rounded division must equal the float nearest the exact fraction *exactly*;
G-mean and MCC take a square root and are compared to 1e-15 relative.
"""

from __future__ import annotations

import itertools
import math
import struct
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from driftwatch.core.measures import crisp
from driftwatch.core.measures.registry import CONFUSION_MEASURES, CRISP_MEASURES, NORMALIZABLE

ROOTED = frozenset({"gmean", "mcc"})


def textbook(tp: int, fp: int, fn: int, tn: int, hits: int) -> dict[str, Fraction | float | None]:
    """Each measure from its textbook definition; None where it is undefined (NaN)."""
    pos, neg = tp + fn, fp + tn
    n = pos + neg

    def ratio(num: int, den: int) -> Fraction | None:
        return Fraction(num, den) if den else None

    recall = ratio(tp, pos)
    specificity = ratio(tn, neg)
    p0 = ratio(tp + tn, n)
    values: dict[str, Fraction | float | None] = {
        "accuracy": p0,
        "error": None if p0 is None else 1 - p0,
        "precision": ratio(tp, tp + fp),
        "recall": recall,
        "specificity": specificity,
        "f1": ratio(2 * tp, 2 * tp + fp + fn),
    }
    if recall is None or specificity is None:
        values |= {"balanced_accuracy": None, "gmean": None, "harmonic_mean": None}
    else:
        values["balanced_accuracy"] = (recall + specificity) / 2
        values["gmean"] = math.sqrt(recall * specificity)
        values["harmonic_mean"] = (
            Fraction(0) if recall == 0 or specificity == 0 else 2 / (1 / recall + 1 / specificity)
        )
    factors = (tp + fp, tp + fn, tn + fp, tn + fn)
    values["mcc"] = (
        None if 0 in factors else (tp * tn - fp * fn) / math.sqrt(math.prod(map(float, factors)))
    )

    def kappa_against(chance: Fraction | None) -> Fraction | None:
        if p0 is None or chance is None or chance == 1:
            return None
        return (p0 - chance) / (1 - chance)

    pc = ratio(pos * (tp + fp) + neg * (fn + tn), n * n)
    values["kappa"] = kappa_against(pc)
    values["kappa_m"] = kappa_against(ratio(max(pos, neg), n))
    values["kappa_per"] = kappa_against(ratio(hits, n))
    return values


def evaluate(name: str, tp: int, fp: int, fn: int, tn: int, hits: int) -> float:
    if name == "kappa_per":
        return crisp.kappa_per(tp, fp, fn, tn, hits)
    return CONFUSION_MEASURES[name](tp, fp, fn, tn)


def assert_textbook(tp: int, fp: int, fn: int, tn: int, hits: int) -> None:
    expected = textbook(tp, fp, fn, tn, hits)
    assert set(expected) == set(CRISP_MEASURES)
    for name in CRISP_MEASURES:
        value = evaluate(name, tp, fp, fn, tn, hits)
        reference = expected[name]
        context = (name, tp, fp, fn, tn, hits, value, reference)
        assert isinstance(value, float), context
        if reference is None:
            assert math.isnan(value), context
        elif name in ROOTED:
            assert value == pytest.approx(float(reference), rel=1e-15, abs=1e-300), context
        else:
            assert value == float(reference), context  # float() of a Fraction rounds correctly


counts = st.integers(0, 50)


@settings(max_examples=400, deadline=None)
@given(tp=counts, fp=counts, fn=counts, tn=counts, data=st.data())
def test_every_measure_equals_its_textbook_formula(
    tp: int, fp: int, fn: int, tn: int, data: st.DataObject
) -> None:
    hits = data.draw(st.integers(0, tp + fp + fn + tn), label="persistent_hits")
    assert_textbook(tp, fp, fn, tn, hits)


@pytest.mark.parametrize("zeros", list(itertools.product([True, False], repeat=4)))
@pytest.mark.parametrize("hits", ["none", "some", "all"])
def test_every_zero_pattern(zeros: tuple[bool, bool, bool, bool], hits: str) -> None:
    """All 16 patterns of empty cells, where the NaN cases live."""
    tp, fp, fn, tn = (
        0 if zero else value for zero, value in zip(zeros, (7, 3, 5, 11), strict=True)
    )
    n = tp + fp + fn + tn
    assert_textbook(tp, fp, fn, tn, {"none": 0, "some": n // 2, "all": n}[hits])


def test_paper_002_table_5() -> None:
    """Bifet et al. (2015), Table 5: TP = 40, FN = 30, FP = 5, TN = 25."""
    tp, fp, fn, tn = 40, 5, 30, 25
    printed = {
        "accuracy": 0.65,
        "kappa": 0.3269,
        "mcc": 0.3728,
        "recall": 0.5714,
        "specificity": 0.8333,
        "balanced_accuracy": 0.7024,
        "gmean": 0.6901,
        "harmonic_mean": 0.6780,
        "kappa_m": -0.1667,
    }
    for name, figure in printed.items():
        assert CONFUSION_MEASURES[name](tp, fp, fn, tn) == pytest.approx(figure, abs=5e-5), name


def bits(value: float) -> bytes:
    return struct.pack("<d", value)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(counts, counts, counts, counts), min_size=1, max_size=60))
def test_numpy_rows_are_bit_identical_to_ints(matrices: list[tuple[int, int, int, int]]) -> None:
    """Normalization evaluates grid rows as float64 arrays and counts cells with ≤ against a
    value computed on ints; that is exact only if both paths give the very same doubles."""
    columns = [np.array(column, dtype=np.float64) for column in zip(*matrices, strict=True)]
    for name in NORMALIZABLE:
        row = CONFUSION_MEASURES[name](*columns)  # type: ignore[arg-type]
        assert isinstance(row, np.ndarray) and row.dtype == np.float64
        for matrix, from_array in zip(matrices, row.tolist(), strict=True):
            from_ints = CONFUSION_MEASURES[name](*matrix)
            if math.isnan(from_ints):
                assert math.isnan(from_array), (name, matrix)
            else:
                assert bits(from_array) == bits(from_ints), (name, matrix, from_array, from_ints)
