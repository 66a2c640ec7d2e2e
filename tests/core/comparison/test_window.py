"""PairedWindow: each part equals its brute-force recount over the last d events."""

from __future__ import annotations

import doctest
import json
import math
import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from driftwatch.core.comparison import window as window_module
from driftwatch.core.comparison.delong import delong
from driftwatch.core.comparison.mcnemar import mcnemar
from driftwatch.core.comparison.window import STATISTICS, PairedWindow
from driftwatch.core.measures.block import block_aucs
from driftwatch.core.window import PrequentialWindow

Event = tuple[int, float, float, int | None, int | None]
SCORES = (0.0, 0.2, 0.5, 0.5, 0.8, 1.0)


def paired_stream(seed: int, length: int, predicted: bool) -> list[Event]:
    rng = random.Random(seed)
    return [
        (
            int(rng.random() < 0.4),
            rng.choice(SCORES),
            rng.choice(SCORES),
            rng.choice((0, 1, None)) if predicted else None,
            rng.choice((0, 1, None)) if predicted else None,
        )
        for _ in range(length)
    ]


streams = st.builds(
    paired_stream,
    seed=st.integers(0, 2**32 - 1),
    length=st.integers(0, 120),
    predicted=st.booleans(),
)


def same(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or a == pytest.approx(b, abs=1e-12)


def test_doctests() -> None:
    assert doctest.testmod(window_module).failed == 0


@settings(max_examples=60, deadline=None)
@given(
    stream=streams,
    size=st.integers(1, 40),
    block_size=st.integers(1, 10),
    blocks=st.integers(1, 6),
    thresholds=st.sampled_from([(0.5, 0.5), (0.3, 0.7)]),
)
def test_every_part_equals_a_recount(
    stream: list[Event], size: int, block_size: int, blocks: int, thresholds: tuple[float, float]
) -> None:
    paired = PairedWindow(size, *thresholds, block_size=block_size, blocks=blocks)
    champion = PrequentialWindow(size, thresholds[0])
    challenger = PrequentialWindow(size, thresholds[1])
    for t, (y, a, b, pa, pb) in enumerate(stream, 1):
        paired.update(y, a, b, pa, pb)
        champion.update(y, a, pa)
        challenger.update(y, b, pb)
        assert paired.champion.export_state() == champion.export_state()
        assert paired.challenger.export_state() == challenger.export_state()
        last = stream[max(0, t - size) : t]
        labels = [e[0] for e in last]
        assert len(paired) == len(last)
        expected = delong(labels, [e[1] for e in last], [e[2] for e in last])
        result = paired.delong()
        assert same(result.difference, expected.difference) and same(result.z, expected.z)
        preds_a = [p if p is not None else int(a >= thresholds[0]) for _, a, _, p, _ in last]
        preds_b = [p if p is not None else int(b >= thresholds[1]) for _, _, b, _, p in last]
        assert paired.crisp() == mcnemar(labels, preds_a, preds_b)
        all_labels = [e[0] for e in stream[:t]]
        a_blocks = block_aucs(all_labels, [e[1] for e in stream[:t]], block_size)
        b_blocks = block_aucs(all_labels, [e[2] for e in stream[:t]], block_size)
        recent = list(zip(a_blocks, b_blocks, strict=True))[-blocks:]
        assert len(paired.block_aucs) == len(recent)
        for (x, y_), (u, v) in zip(paired.block_aucs, recent, strict=True):
            assert same(x, u) and same(y_, v)
    assert list(paired.statistics()) == list(STATISTICS)


@settings(max_examples=60, deadline=None)
@given(
    stream=streams, size=st.integers(1, 30), block_size=st.integers(1, 7), cut=st.integers(0, 120)
)
def test_restored_window_continues_identically(
    stream: list[Event], size: int, block_size: int, cut: int
) -> None:
    window = PairedWindow(size, 0.4, 0.6, block_size=block_size, blocks=3)
    for event in stream[:cut]:
        window.update(*event)
    state = json.loads(json.dumps(window.export_state(), allow_nan=False))
    restored = PairedWindow.from_state(state)
    assert restored.export_state() == window.export_state()
    for event in stream[cut:]:
        window.update(*event)
        restored.update(*event)
    mine, theirs = restored.statistics(), window.statistics()
    assert all(same(mine[k], theirs[k]) for k in STATISTICS)
    assert restored.export_state() == window.export_state()


def good_state() -> dict[str, object]:
    window = PairedWindow(4, block_size=3, blocks=2)
    for event in [(1, 0.9, 0.8, None, None), (0, 0.1, 0.3, None, None)] * 2:
        window.update(*event)
    return window.export_state()


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"version": 2}, "version"),
        ({"size": 0}, "size"),
        ({"thresholds": [0.5]}, "thresholds"),
        ({"events": "x"}, "events must be a list"),
        ({"events": [[1, 0.5, 1, 0.5]]}, r"events\[0\]"),
        ({"events": [[2, 0.5, 1, 0.5, 1]]}, "y_true"),
        ({"events": [[1, 0.5, 1, 0.5, 1]] * 5}, "do not fit"),
        ({"block": [[1, 0.5, 0.5]] * 3}, "fill a block"),
        ({"block": [[1, math.inf, 0.5]]}, "champion_score"),
        ({"block_aucs": [[0.5, 2.0]]}, "block_aucs"),
        ({"block_aucs": [[0.5, 0.5]] * 3}, "more than 2 blocks"),
        ({"extra": 1}, "unknown keys"),
    ],
)
def test_bad_state_is_refused(change: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        PairedWindow.from_state({**good_state(), **change})


def test_bad_event_is_refused_whole() -> None:
    window = PairedWindow(4)
    window.update(1, 0.9, 0.8)
    before = window.export_state()
    for args, name in [
        ((2, 0.5, 0.5), "y_true"),
        ((1, 0.5, math.nan), "challenger_score"),
        ((1, "x", 0.5), "champion_score"),
        ((1, 0.5, 0.5, 3), "champion_pred"),
        ((1, 0.5, 0.5, None, -1), "challenger_pred"),
    ]:
        with pytest.raises(ValueError, match=name):
            window.update(*args)
        assert window.export_state() == before


def test_block_tests_find_a_better_challenger() -> None:
    rng = np.random.default_rng(4)
    window = PairedWindow(1000, block_size=200, blocks=10)
    for _ in range(2000):
        y = int(rng.random() < 0.3)
        window.update(y, float(y * 0.6 + rng.normal()), float(y * 1.4 + rng.normal()))
    sign, wilcoxon = window.block_tests()
    assert sign.challenger_wins == 10 and sign.p_value == pytest.approx(2 / 1024)
    assert wilcoxon.p_value == pytest.approx(2 / 1024)
    statistics = window.statistics()
    assert statistics["auc_difference"] > 0.1 and statistics["delong_p_value"] < 1e-6
    assert statistics["blocks"] == 10
