"""The estimated window: exact against brute force, incremental equal to rebuilt, no drift."""

from __future__ import annotations

import itertools
import math
import random
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from driftwatch.core.estimation.expected import expected_auc
from driftwatch.core.estimation.window import MAX_SIZE, SCALE, EstimatedWindow

# Probabilities in sixteenths are exact in the window's fixed point, so its values can be
# compared with exact fractions for equality (one correctly rounded division each).
stream = st.lists(st.tuples(st.sampled_from([0.1, 0.5, 0.5, 0.9]) | st.floats(-2, 2),
                            st.integers(0, 16).map(lambda k: k / 16),
                            st.sampled_from([None, 0, 1]), st.booleans()), max_size=60)


def exact_auc(held: list[tuple[float, float]]) -> float:
    u = d = Fraction(0)
    for (si, pi), (sj, pj) in itertools.permutations(held, 2):
        pair = Fraction(pi) * (1 - Fraction(pj))
        d += pair
        u += pair if si > sj else pair / 2 if si == sj else 0
    return float(u / d) if d else math.nan


@given(stream, st.integers(1, 7), st.integers(2, 4))
def test_values_equal_exact_expectations(events: list[tuple[float, float, int | None, bool]],
                                         size: int, load: int) -> None:
    window = EstimatedWindow(size, threshold=0.25, load=load)
    seen: list[tuple[float, float, int]] = []
    for score, p, y_pred, read in events:
        window.update(score, p, y_pred)
        seen.append((score, p, (1 if score >= 0.25 else 0) if y_pred is None else y_pred))
        if read:
            held = seen[-size:]
            assert len(window) == len(held)
            got = window.auc
            expected = exact_auc([(s, q) for s, q, _ in held])
            assert got == expected or (math.isnan(got) and math.isnan(expected))
            confusion = window.confusion
            assert confusion.tp == float(sum(Fraction(q) for _, q, y in held if y))
            assert confusion.fn == float(sum(Fraction(q) for _, q, y in held if not y))
            assert confusion.fp + confusion.tp == sum(1 for *_, y in held if y)
            window._check()


def test_incremental_and_rebuilt_sums_agree_bit_for_bit_over_a_long_stream() -> None:
    # 100 000 predictions through a window of 100 read after every one (the incremental
    # path, two edits per prediction), beside a window read every 5 000 (rebuilt at each
    # read): integer sums cannot drift, so both equal a recount at every comparison.
    rng = random.Random(20)
    eager, lazy = EstimatedWindow(100, load=4), EstimatedWindow(100)
    for t in range(100_000):
        score = rng.choice((0.2, 0.5, rng.random()))
        p = score if rng.random() < 0.9 else rng.random()
        eager.update(score, p)
        lazy.update(score, p)
        value = eager.auc
        if t % 5_000 == 4_999:
            assert value == lazy.auc and eager.confusion == lazy.confusion
            eager._check()
            events = eager.events()
            floats = expected_auc([s for s, _, _ in events], [w / SCALE for _, w, _ in events])
            assert value == pytest.approx(floats.value, abs=1e-12)


def test_a_window_that_is_not_full_and_one_that_is_empty() -> None:
    window = EstimatedWindow(10)
    assert len(window) == 0 and math.isnan(window.auc)
    assert math.isnan(window.estimates()["auc"].value)
    window.update(0.9, 0.9)
    assert math.isnan(window.auc)  # one prediction: no pair
    window.update(0.1, 0.1)
    assert window.auc == pytest.approx((0.9 * 0.9) / (0.9 * 0.9 + 0.1 * 0.1))
    assert len(window) == 2


def test_bad_arguments_change_nothing() -> None:
    window = EstimatedWindow(3)
    window.update(0.4, 0.4)
    before = window.export_state()
    for args, name in (((float("nan"), 0.5), "y_score"), ((0.5, 1.5), "probability"),
                       ((0.5, float("nan")), "probability"), ((0.5, 0.5, 2), "y_pred")):
        with pytest.raises(ValueError, match=name):
            window.update(*args)
    assert window.export_state() == before
    for size in (0, MAX_SIZE + 1, 2.5, True):
        with pytest.raises(ValueError, match="size"):
            EstimatedWindow(size)  # type: ignore[arg-type]


def test_state_round_trip_resize_and_refusals() -> None:
    window = EstimatedWindow(5)
    for score in (0.9, 0.2, 0.6, 0.6, 0.3, 0.8):
        window.update(score, score)
    state = window.export_state()
    restored = EstimatedWindow.from_state(state)
    assert restored.auc == window.auc and restored.events() == window.events()
    smaller = EstimatedWindow.from_state(state, size=3)
    assert smaller.events() == window.events()[-3:]
    bad_weight = {**state, "events": [[0.5, SCALE + 1, 0]]}
    with pytest.raises(ValueError, match="weight"):
        EstimatedWindow.from_state(bad_weight)
    with pytest.raises(ValueError, match="y_pred"):
        EstimatedWindow.from_state({**state, "events": [[0.5, 3, 2]]})
    with pytest.raises(ValueError, match="version"):
        EstimatedWindow.from_state({**state, "version": 99})


def test_reweigh_applies_a_new_calibration_all_or_nothing() -> None:
    window = EstimatedWindow(4)
    for score in (0.9, 0.2, 0.6, 0.3):
        window.update(score, 0.5)
    assert window.auc == pytest.approx(0.5)  # every p equal: no pair is ordered better
    window.reweigh(lambda s: s)
    assert window.auc == pytest.approx(expected_auc([0.9, 0.2, 0.6, 0.3],
                                                    [0.9, 0.2, 0.6, 0.3]).value, abs=1e-9)
    before = window.export_state()

    def refuses(score: float) -> float:
        if score > 0.8:
            raise ValueError("y_score has no probability")
        return score

    with pytest.raises(ValueError, match="no probability"):
        window.reweigh(refuses)
    assert window.export_state() == before


@settings(max_examples=30)
@given(st.lists(st.floats(0, 1), min_size=3, max_size=40))
def test_estimates_carry_the_exact_value_and_the_batch_spread(scores: list[float]) -> None:
    window = EstimatedWindow(50)
    for s in scores:
        window.update(s, s)
    estimates = window.estimates()
    batch = expected_auc(scores, [round(s * SCALE) / SCALE for s in scores])
    assert estimates["auc"].value == pytest.approx(window.auc, nan_ok=True, rel=0, abs=0)
    assert estimates["auc"].standard_error == pytest.approx(batch.standard_error, nan_ok=True)
    assert set(estimates) == {"auc", "false_negative_rate", "false_positive_rate"}
