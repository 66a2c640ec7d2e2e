"""The monitor with the budget's defaults: record time, its edge cases, the indifference zone
at high traffic, and state across versions."""

from __future__ import annotations

import json
import math
import random
import statistics

import numpy as np
import pytest

from driftwatch.core.budget import block_arl, counted_seconds, quantized_arl
from driftwatch.core.events import Event
from driftwatch.core.monitor import (
    FALSE_NEGATIVE_RATE,
    FALSE_POSITIVE_RATE,
    DetectorSpec,
    Monitor,
    MonitorConfig,
    Watch,
)

T0 = 1_750_000_000.0


def events(seed: int, rate: float, seconds: float, auc: float = 0.9,
           drop: tuple[float, float] | None = None, start: float = T0,
           positives: float = 0.3, timed: bool = True) -> list[Event]:
    """Binormal events at ``rate`` a second for ``seconds`` of record time; ``drop`` =
    (from this many seconds in, to this AUC)."""
    rng = random.Random(seed)
    before = math.sqrt(2) * statistics.NormalDist().inv_cdf(auc)
    after = before if drop is None else math.sqrt(2) * statistics.NormalDist().inv_cdf(drop[1])
    change = math.inf if drop is None else drop[0]
    out = []
    for i in range(int(rate * seconds)):
        t = i / rate
        y = int(rng.random() < positives)
        mu = (after if t >= change else before) if y else 0.0
        out.append(Event(y, rng.gauss(mu, 1.0), ts=start + t if timed else None))
    return out


def alarms(monitor: Monitor, stream: list[Event]) -> list[tuple[str, float]]:
    return [(a.measure, a.event_time or 0.0) for e in stream for a in monitor.update(e)
            if a.level == "drift"]


def test_the_budget_view_holds_the_budget_at_any_traffic() -> None:
    """What the snapshot says the budget implies: with record time, 30 days / the budget
    (rounded by the grid) at 10 and at 200 events a second alike; a CUSUM with an arl of its
    own instead spends more the more blocks a day holds."""
    for rate in (10.0, 200.0):
        monitor = Monitor("m", MonitorConfig(days_per_false_alarm=60.0))
        for event in events(1, rate, 300.0):
            monitor.update(event)
        view = monitor.snapshot().budget
        assert view is not None and view.record_time and view.days_per_false_alarm == 60.0
        assert 30.0 <= view.block_seconds < 30.5
        arl = block_arl(60.0, 3, view.block_seconds)
        assert view.expected_false_alarms == pytest.approx(
            3 * 30 * 86_400 / view.block_seconds / arl)
        assert 0.5 / 2 ** 0.25 <= view.expected_false_alarms <= 0.5
        assert view.min_effects == {"auc": 0.02, FALSE_NEGATIVE_RATE: 0.05,
                                    FALSE_POSITIVE_RATE: 0.05}
    fixed = MonitorConfig(watches=(Watch("auc", (DetectorSpec("cusum", {"arl": 10_000.0}),),
                                         feed="blocks"),))
    monitor = Monitor("m", fixed)
    for event in events(2, 10.0, 300.0):
        monitor.update(event)
    view = monitor.snapshot().budget
    assert view is not None
    assert view.expected_false_alarms == pytest.approx(30 * 86_400 / view.block_seconds / 1e4)


def test_records_without_time_spend_the_budget_per_block() -> None:
    monitor = Monitor("m", MonitorConfig())
    for event in events(3, 10.0, 300.0, timed=False):
        monitor.update(event)
    view = monitor.snapshot().budget
    assert view is not None and not view.record_time
    assert math.isnan(view.block_seconds) and math.isnan(view.expected_false_alarms)
    assert monitor.snapshot().last_event_time is None


def test_a_day_long_backlog_closes_the_blocks_of_the_day() -> None:
    """A day at 3 events a second read at once: its blocks are those of its record time,
    one per 30 s (about 2 880), not one per 40-odd events (about 3 800 at information
    alone), and the last one spent 30 s of the budget; nothing alarms."""
    monitor = Monitor("m", MonitorConfig())
    stream = events(4, 3.0, 86_400.0, positives=0.5)
    assert alarms(monitor, stream) == []
    blocks = monitor._blocks
    assert blocks is not None
    closed = blocks.states[0].standardizer.export_state()[0]  # type: ignore[union-attr]
    assert 2860 <= closed <= 2880
    view = monitor.snapshot().budget
    assert view is not None and 30.0 <= view.block_seconds < 31.0


def test_a_week_of_silence_then_the_same_model() -> None:
    """The block open across the silence closes at the first event with enough of both
    classes after it and spans the week; it is counted as an hour of the budget (its run
    length is an hour's, not a week's); the reference is kept. Unchanged, no alarm; worse
    by 0.05, an alarm within ten minutes of its return."""
    week = 7 * 86_400.0
    before = events(5, 10.0, 7200.0)
    config = MonitorConfig()
    for after_auc, alarmed in ((0.9, False), (0.85, True)):
        monitor = Monitor("m", config)
        assert alarms(monitor, before) == []
        back = events(6, 10.0, 7200.0, auc=after_auc, start=T0 + week)
        found = [t for m, t in alarms(monitor, back) if m == "auc"]
        if alarmed:
            assert found and found[0] - (T0 + week) < 600, found
        else:
            assert found == []
    assert counted_seconds(week, 30.0) == 3600.0
    assert block_arl(30.0, 3, 3600.0) == quantized_arl(3 * 30 * 24)


def test_time_going_backwards_neither_closes_blocks_nor_alarms() -> None:
    """Records up to 20 s out of order (a few producers merged): about the same number of
    blocks as in order (each closes when the latest time seen is 30 s past the last close,
    which the stragglers do not move: a little later), and no alarm."""
    stream = events(7, 20.0, 3600.0)
    rng = random.Random(8)
    shuffled = [Event(e.y_true, e.y_score, ts=(e.ts or 0.0) - rng.uniform(0, 20))
                for e in stream]
    counts = []
    for data in (stream, shuffled):
        monitor = Monitor("m", MonitorConfig())
        assert alarms(monitor, data) == []
        assert monitor._blocks is not None
        counts.append(monitor._blocks.states[0].standardizer.export_state()[0])  # type: ignore[union-attr]
    assert counts[0] - 3 <= counts[1] <= counts[0]


def test_at_high_traffic_a_drop_below_the_effect_never_alarms_one_above_at_once() -> None:
    """100 events a second, 1:1 (a 30-second block's AUC has a standard error of about
    0.005): a sustained drop of 0.012, past the tolerance but below the minimum effect
    0.02, raises nothing in an hour; one of 0.04 alarms within two blocks."""
    rate, n = 100.0, 720_000  # two hours
    mu = [math.sqrt(2) * statistics.NormalDist().inv_cdf(a) for a in (0.9, 0.888, 0.86)]
    for drop, expected in ((1, False), (2, True)):  # 0.012, 0.04
        rng = np.random.default_rng(9)
        y = rng.random(n) < 0.5
        shift = np.where(np.arange(n) < n // 2, mu[0], mu[drop])
        scores = rng.normal(0.0, 1.0, n) + shift * y
        ts = T0 + np.arange(n) / rate
        update = Monitor("m", MonitorConfig()).update_values
        found = [t - T0 - 3600.0
                 for label, score, t in zip(y.tolist(), scores.tolist(), ts.tolist(), strict=True)
                 for a in update(int(label), score, None, t) if a.measure == "auc"]
        if expected:
            assert found and 0 < found[0] <= 61, found
        else:
            assert found == []


@pytest.mark.parametrize("split", [1, 37, 4_321, 9_001, 17_777])
def test_state_with_record_time_restores_exactly(split: int) -> None:
    stream = events(10, 5.0, 4000.0, drop=(2500.0, 0.8))
    original = Monitor("m", MonitorConfig())
    for event in stream[:split]:
        original.update(event)
    restored = Monitor.restore(json.loads(json.dumps(original.export_state())))
    for event in stream[split:]:
        assert restored.update(event) == original.update(event)
    assert json.dumps(restored.export_state()) == json.dumps(original.export_state())
    assert restored.snapshot() == original.snapshot()


def test_a_version_2_state_restores_its_window_with_fresh_blocks_watches() -> None:
    """A state saved before the budget (format 2: its configuration without the budget's
    keys, its AUC reference weighted otherwise): window, events and alarm counts continue;
    its blocks watches start afresh, with the configuration it was saved with (no time
    rule, no zone, the arl its CUSUMs named), unless one is given."""
    legacy = MonitorConfig(block_seconds=0.0, min_effect_auc=0.0, min_effect_rate=0.0,
                           watches=tuple(Watch(m, (DetectorSpec("cusum", {"k": 0.5,
                                                                        "arl": 200_000.0}),),
                                               feed="blocks")
                                         for m in ("auc", FALSE_NEGATIVE_RATE,
                                                   FALSE_POSITIVE_RATE)))
    monitor = Monitor("m", legacy)
    stream = events(11, 5.0, 2000.0)
    for event in stream:
        monitor.update(event)
    state = json.loads(json.dumps(monitor.export_state()))
    state["version"] = 2
    for key in ("block_seconds", "days_per_false_alarm", "min_effect_auc", "min_effect_rate"):
        del state["config"][key]
    del state["blocks"]["now"], state["blocks"]["start"], state["blocks"]["last_seconds"]
    for watch in state["watches"]:
        watch["standardizer"] = watch["standardizer"][:8] if len(watch["standardizer"]) > 3 \
            else watch["standardizer"]
    restored = Monitor.restore(state)
    assert restored.config == legacy
    assert restored.events == monitor.events
    assert restored.window.export_state()["events"] == monitor.window.export_state()["events"]
    fresh = Monitor("m", legacy)
    assert [s.standardizer.export_state() for s in restored._watch_states()] == [  # type: ignore[union-attr]
        s.standardizer.export_state() for s in fresh._watch_states()]  # type: ignore[union-attr]
    assert Monitor.restore(state, MonitorConfig()).config == MonitorConfig()


def columns_stream(seed: int, n: int, rate: float, drop_at: int | None = None,
                   untimed: float = 0.0, late: float = 0.0) -> tuple[list[int], list[float],
                                                                    list[float | None]]:
    """Labels, scores and times; a share ``untimed`` without time and ``late`` stamped a
    minute early; AUC 0.9, 0.7 from ``drop_at`` on."""
    rng = random.Random(seed)
    labels, scores, times = [], [], []
    for i in range(n):
        y = int(rng.random() < 0.25)
        mu = 1.81 if drop_at is None or i < drop_at else 0.74
        labels.append(y)
        scores.append(rng.gauss(mu if y else 0.0, 1.0))
        t: float | None = T0 + i / rate
        draw = rng.random()
        if draw < untimed:
            t = None
        elif draw < untimed + late:
            t = T0 + i / rate - 60.0
        times.append(t)
    return labels, scores, times


@pytest.mark.parametrize(("rate", "untimed", "late", "chunk", "n"),
                         [(200.0, 0.0, 0.0, 4096, 60_000), (1.0, 0.0, 0.0, 777, 60_000),
                          (50.0, 0.3, 0.1, 1000, 60_000), (30.0, 1.0, 0.0, 5000, 60_000),
                          (5000.0, 0.0, 0.0, 30_000, 800_000)])
def test_update_columns_is_update_values_event_by_event(rate: float, untimed: float,
                                                        late: float, chunk: int,
                                                        n: int) -> None:
    """The bulk path a replay takes for runs of plain records: the same alarms at the same
    events, the same state, at low traffic (blocks on information), high traffic (on time,
    and on size: 5 000 events a second fill 100 000 in 20 s), without time, with late
    records."""
    labels, scores, times = columns_stream(int(rate), n, rate, drop_at=n * 2 // 3,
                                           untimed=untimed, late=late)
    config = MonitorConfig()
    one, bulk = Monitor("m", config), Monitor("m", config)
    expected = [(i, alarms) for i, (y, s, t) in enumerate(zip(labels, scores, times, strict=True))
                if (alarms := one.update_values(y, s, None, t))]
    got = []
    for start in range(0, n, chunk):
        stop = min(n, start + chunk)
        got += [(start + i, alarms) for i, alarms in
                bulk.update_columns(labels[start:stop], scores[start:stop], times[start:stop])]
    assert got == expected
    assert json.dumps(bulk.export_state()) == json.dumps(one.export_state())
    assert bulk.snapshot() == one.snapshot()
    if rate >= 50:
        assert expected, "the drop must alarm"


def test_update_columns_of_other_monitors_takes_the_events_one_by_one() -> None:
    labels, scores, times = columns_stream(3, 5000, 10.0, drop_at=2500)
    watches = (Watch("auc", (DetectorSpec("page_hinkley", {"threshold": 1.0}),)),
               Watch("auc", (DetectorSpec("cusum"),), feed="blocks"))
    for config in (MonitorConfig(window_size=200, watches=watches[:1]),
                   MonitorConfig(adaptive_window=True)):
        one, bulk = Monitor("m", config), Monitor("m", config)
        expected = [(i, a) for i, (y, s, t) in enumerate(zip(labels, scores, times, strict=True))
                    if (a := one.update_values(y, s, None, t))]
        assert bulk.update_columns(labels, scores, times) == expected
        assert json.dumps(bulk.export_state()) == json.dumps(one.export_state())
