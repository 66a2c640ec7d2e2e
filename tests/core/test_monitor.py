"""The monitor against hand-fed windows and detectors: same samples, same alarms, exact restore."""

from __future__ import annotations

import gc
import json
import math
import random
import statistics

import pytest

from driftwatch.core.blocks import AUCStandardizer, BlockCollector
from driftwatch.core.detectors import registry
from driftwatch.core.estimation.config import EstimationConfig
from driftwatch.core.events import Event
from driftwatch.core.monitor import (
    ERROR_STREAM,
    FALSE_NEGATIVE_RATE,
    FALSE_POSITIVE_RATE,
    STATE_VERSION,
    DetectorSpec,
    Monitor,
    MonitorConfig,
    Watch,
)
from driftwatch.core.normalization import normalize, threshold
from driftwatch.core.window import PrequentialWindow
from driftwatch.settings import Settings
from tests.core.test_blocks import brute_force as brute_force_delong


def stream(
    seed: int, length: int, drop_at: int | None = None, positives: float = 0.3
) -> list[Event]:
    """Scores separate the classes well, then (after ``drop_at``) barely."""
    rng = random.Random(seed)
    events = []
    for i in range(length):
        y = int(rng.random() < positives)
        shift = 2.0 if drop_at is None or i < drop_at else 0.3
        score = rng.gauss(shift if y else 0.0, 1.0)
        events.append(Event(y, round(score, 2), ts=1000.0 + i))
    return events


WATCHES = (
    Watch("auc", (DetectorSpec("page_hinkley", {"threshold": 1.0}), DetectorSpec("adwin"))),
    Watch("gmean", (DetectorSpec("page_hinkley", {"threshold": 1.0}),), normalized=True, floor=0.9),
    Watch("kappa", (DetectorSpec("ddm"),), normalized=True),
    Watch(ERROR_STREAM, (DetectorSpec("ddm"),)),
)


def config(**changes: object) -> MonitorConfig:
    base: dict[str, object] = {"window_size": 200, "sample_every": 10, "watches": WATCHES}
    base.update(changes)
    return MonitorConfig(**base)  # type: ignore[arg-type]


def test_same_window_and_measures_as_a_plain_window() -> None:
    monitor = Monitor("m", config())
    window = PrequentialWindow(200, 0.5)
    for event in stream(1, 700):
        monitor.update(event)
        window.update(event.y_true, event.y_score, event.y_pred)
    snap = monitor.snapshot()
    assert snap.events == 700
    assert (snap.positives, snap.negatives) == (window.positives, window.negatives)
    expected = window.measures()
    assert snap.values.keys() == expected.keys()
    for name, value in expected.items():
        assert snap.values[name] == value or (math.isnan(value) and math.isnan(snap.values[name]))
    for name, value in snap.normalized.items():
        assert value == normalize(name, window.positives, window.negatives, expected[name])


class Episodes:
    """The monitor's rule for one window detector, restated: a drift is a new alarm unless it
    comes less than a window after the previous alarm, or the detector (ADWIN) still holds
    inputs from before its previous alarm, less one window's ramp. Only alarms move these
    marks, so drifts that are not alarmed cannot chain into a long suppression."""

    def __init__(self, window: int, ramp: int) -> None:
        self.window, self.ramp = window, ramp
        self.fed, self.quiet_until, self.fed_at_alarm = 0, 0, None

    def drift(self, event: int, width: int | None) -> bool:
        repeated = event < self.quiet_until or (
            self.fed_at_alarm is not None
            and width is not None
            and width > self.fed - self.fed_at_alarm + self.ramp
        )
        if not repeated:
            self.quiet_until, self.fed_at_alarm = event + self.window, self.fed
        return not repeated


def test_detectors_see_exactly_the_sampled_values() -> None:
    events = stream(2, 3000, drop_at=1500)
    monitor = Monitor("m", config())
    alarms = [a for e in events for a in monitor.update(e)]

    # The same detectors, fed by hand from a plain window sampled every 10 events.
    window = PrequentialWindow(200, 0.5)
    detectors = {
        "page_hinkley": registry.create("page_hinkley", threshold=1.0, direction="down"),
        "adwin": registry.create("adwin", direction="down"),
    }
    rules = {name: Episodes(200, 200 // 10) for name in detectors}
    expected, raw_drifts = [], []
    for i, event in enumerate(events, start=1):
        window.update(event.y_true, event.y_score)
        if i % 10 == 0 and len(window) == 200 and not math.isnan(window.auc):
            for name, detector in detectors.items():
                rules[name].fed += 1
                if detector.update(window.auc).name == "DRIFT":
                    raw_drifts.append((name, i))
                    if rules[name].drift(i, getattr(detector, "width", None)):
                        expected.append((name, i))
    got = [(a.detector, a.event_count) for a in alarms if a.measure == "auc" and a.level == "drift"]
    assert got == expected
    assert got, "the drop must be detected on AUC"
    assert all(a.model == "m" and a.event_time == 1000.0 + a.event_count - 1 for a in alarms)


def test_a_change_seen_at_several_checks_is_one_alarm() -> None:
    # ADWIN keeps its shrunk window, so while the old concept drains out of the windowed AUC
    # it cuts again at later checks; those repeats are one episode and one alarm.
    watches = (Watch("auc", (DetectorSpec("adwin", {"clock": 1}),)),)
    monitor = Monitor("m", config(sample_every=1, watches=watches))
    adwin = registry.create("adwin", clock=1, direction="down")
    window = PrequentialWindow(200, 0.5)
    rule = Episodes(200, 200)
    raw, episodes = [], []
    for i, event in enumerate(stream(5, 4000, drop_at=2000), start=1):
        window.update(event.y_true, event.y_score)
        if len(window) == 200:
            rule.fed += 1
            if adwin.update(window.auc).name == "DRIFT":
                raw.append(i)
                if rule.drift(i, adwin.width):
                    episodes.append(i)
        monitor.update(event)
    assert len(raw) > len(episodes) >= 1
    assert [i for i in episodes if i > 2000][:1], "the drop itself is an alarm"
    assert monitor.snapshot().alarms == {("auc", "adwin", "drift"): len(episodes)}


def test_threshold_floor_is_the_inverse_normalization_and_alarms_once_per_crossing() -> None:
    events = stream(3, 3000, drop_at=1500)
    monitor = Monitor("m", config())
    window = PrequentialWindow(200, 0.5)
    crossings = []
    below = False
    alarms = []
    for i, event in enumerate(events, start=1):
        alarms += monitor.update(event)
        window.update(event.y_true, event.y_score)
        if i % 10 == 0 and len(window) == 200:
            raw = threshold("gmean", window.positives, window.negatives, 0.9)
            value = window.measure("gmean")
            now_below = value < raw
            # Below the raw threshold exactly when below the floor on the normalized scale.
            assert now_below == (
                normalize("gmean", window.positives, window.negatives, value) < 0.9
            )
            if now_below and not below:
                crossings.append(i)
            below = now_below
    got = [a.event_count for a in alarms if a.level == "threshold"]
    assert got == crossings and got
    assert monitor.snapshot().thresholds["gmean"] == threshold(
        "gmean", window.positives, window.negatives, 0.9
    )


@pytest.mark.parametrize("seed", range(4))
def test_a_snapshot_normalizes_only_what_it_is_asked_to_and_exactly_the_same(seed: int) -> None:
    monitor = Monitor("m", config())
    for event in stream(seed, 150 + 60 * seed, positives=0.1 + 0.2 * seed):
        monitor.update(event)
    whole = monitor.snapshot()
    assert set(whole.normalized) == {"accuracy", "balanced_accuracy", "f1", "gmean", "kappa",
                                     "mcc", "precision", "recall"}
    rng = random.Random(seed)
    chosen = set(rng.sample(sorted(whole.normalized), rng.randrange(0, 8)))
    part = monitor.snapshot(chosen | {"events"})  # not a normalizable measure: ignored
    assert part.normalized.keys() == chosen
    assert repr(part.normalized) == repr({name: value for name, value in whole.normalized.items()
                                          if name in chosen})  # repr: NaN equals NaN
    assert repr(part.values) == repr(whole.values)
    assert part.detector_states == whole.detector_states
    assert monitor.watched_measures == {"auc", "gmean", "kappa", ERROR_STREAM}


@pytest.mark.parametrize("defaults", [False, True])
def test_a_monitor_s_life_makes_no_reference_cycle(defaults: bool) -> None:
    """What lets the agent freeze its monitors out of the collector's full passes
    (driftwatch/agent/heap.py): updates, alarms, snapshots, export and restore leave no
    cyclic garbage, and dropped monitors are freed by reference counting alone (the
    collector finds nothing after they are dropped). With this file's watches and with the
    settings' defaults (blocks, the false-alarm budget)."""
    chosen = Settings().monitoring.monitor_config("m") if defaults else config()
    gc.collect()
    gc.disable()
    try:
        monitor = Monitor("m", chosen)
        alarms = [alarm for event in stream(3, 3000, drop_at=1500)
                  for alarm in monitor.update(event)]
        assert alarms or defaults  # this file's watches alarm on the drop
        monitor.snapshot()
        restored = Monitor.restore(json.loads(json.dumps(monitor.export_state())),
                                   config=chosen)
        for event in stream(4, 300):
            restored.update(event)
        restored.snapshot()
        assert gc.collect() == 0, "no cyclic garbage while they live"
        del monitor, restored, alarms
        assert gc.collect() == 0, "none once they are dropped"
    finally:
        gc.enable()


def test_undefined_values_are_not_fed_and_show_as_nan() -> None:
    monitor = Monitor("m", config(window_size=50, sample_every=1, watches=WATCHES[:3]))
    for i in range(100):
        assert monitor.update(Event(0, i / 100)) == []  # one class only: AUC is NaN
    snap = monitor.snapshot()
    assert math.isnan(snap.values["auc"]) and math.isnan(snap.values["gmean"])
    assert all(state == "stable" for state in snap.detector_states.values())


@pytest.mark.parametrize("split", [1, 137, 1499, 1500, 2222])
def test_restore_continues_exactly(split: int) -> None:
    events = stream(4, 3000, drop_at=1500)
    original = Monitor("m", config())
    for event in events[:split]:
        original.update(event)
    state = json.loads(json.dumps(original.export_state()))  # what a checkpoint stores
    restored = Monitor.restore(state)
    for event in events[split:]:
        assert restored.update(event) == original.update(event)
    a, b = original.snapshot(), restored.snapshot()
    assert json.dumps(original.export_state()) == json.dumps(restored.export_state())
    assert a.alarms == b.alarms and a.events == b.events


def test_restore_refuses_another_version() -> None:
    state = Monitor("m", config()).export_state()
    state["version"] = STATE_VERSION + 1
    with pytest.raises(ValueError, match="version"):
        Monitor.restore(state)


def test_bad_configurations_name_the_problem() -> None:
    with pytest.raises(ValueError, match=r"ddm.*leave"):
        Watch("kappa", (DetectorSpec("ddm"),))
    with pytest.raises(ValueError, match="normalized"):
        Watch("auc", normalized=True)
    with pytest.raises(ValueError, match="floor"):
        Watch("gmean", floor=1.5)
    with pytest.raises(ValueError, match="measure"):
        Watch("aucc")
    with pytest.raises(ValueError, match="sample_every"):
        MonitorConfig(sample_every=0)
    with pytest.raises(ValueError, match="window_size"):
        MonitorConfig(window_size=0)


def test_restore_with_changed_settings_keeps_the_window_and_counters() -> None:
    events = stream(6, 1500, drop_at=700)
    original = Monitor("m", config())
    for event in events:
        original.update(event)
    new_config = config(window_size=150, sample_every=5)
    restored = Monitor.restore(original.export_state(), config=new_config)
    assert restored.config == new_config
    assert restored.events == original.events
    assert restored.snapshot().alarms == original.snapshot().alarms
    # The new, smaller window holds exactly the last 150 events.
    fresh = PrequentialWindow(150, 0.5)
    for event in events[-150:]:
        fresh.update(event.y_true, event.y_score)
    assert restored.window.auc == fresh.auc and restored.window.confusion == fresh.confusion
    assert (
        Monitor.restore(original.export_state(), config=config()).export_state()
        == original.export_state()
    )


def test_nothing_reaches_detectors_or_floors_before_the_window_is_full() -> None:
    # A floor of 1.0 is crossed by any imperfect window: the first full window alarms, and no
    # filling window before it does (AUC and G-mean over a few events are too noisy).
    watches = (Watch("gmean", floor=1.0), Watch("auc", (DetectorSpec("adwin", {"clock": 1}),)))
    monitor = Monitor("m", config(window_size=200, sample_every=1, watches=watches))
    alarms = [a for e in stream(7, 400) for a in monitor.update(e)]
    assert [(a.measure, a.level, a.event_count) for a in alarms][:1] == [
        ("gmean", "threshold", 200)
    ]
    adwin = Monitor.restore(monitor.export_state())._sampled_watches[1].detectors[0]
    assert adwin.width == 201  # samples from events 200..400 only


# --- Blocks watches (the defaults) -----------------------------------------------------------


def binormal(seed: int, levels: list[tuple[int, float]], length: int,
             positives: float = 0.3) -> list[Event]:
    """Binormal scores whose AUC is ``auc`` from event ``start`` on, for [(start, auc), ...]."""
    rng = random.Random(seed)
    events = []
    shift = 0.0
    for i in range(length):
        for start, auc in levels:
            if i == start:
                shift = math.sqrt(2) * statistics.NormalDist().inv_cdf(auc)
        y = int(rng.random() < positives)
        events.append(Event(y, rng.gauss(shift if y else 0.0, 1.0), ts=float(i)))
    return events


def blocks_config(arl: float = 200_000.0, **changes: object) -> MonitorConfig:
    """Blocks watches with a CUSUM of a fixed run length, no time rule and no indifference
    zone: the block test of earlier versions, against which these tests restate it."""
    spec = DetectorSpec("cusum", {"arl": arl})
    watches = tuple(Watch(m, (spec,), feed="blocks")
                    for m in ("auc", FALSE_NEGATIVE_RATE, FALSE_POSITIVE_RATE))
    base: dict[str, object] = {"window_size": 200, "watches": watches, "block_seconds": 0.0,
                               "min_effect_auc": 0.0, "min_effect_rate": 0.0}
    base.update(changes)
    return MonitorConfig(**base)  # type: ignore[arg-type]


def test_the_defaults_are_cusums_on_blocks() -> None:
    config = MonitorConfig()
    assert [(w.measure, w.feed, [d.name for d in w.detectors]) for w in config.watches] == [
        ("auc", "blocks", ["cusum"]),
        (FALSE_NEGATIVE_RATE, "blocks", ["cusum"]),
        (FALSE_POSITIVE_RATE, "blocks", ["cusum"]),
    ]


def test_blocks_watches_get_the_standardized_blocks() -> None:
    # The monitor's AUC watch, restated by hand: blocks of ≥ 20 per class, z-scores from a
    # self-starting standardizer, a CUSUM; after an alarm both start over.
    events = binormal(11, [(0, 0.9), (6000, 0.75)], 9000)
    monitor = Monitor("m", blocks_config(watches=(blocks_config().watches[0],)))
    got = [(a.event_count, a.value, a.reference) for e in events for a in monitor.update(e)]
    collector, standardizer = BlockCollector(20), AUCStandardizer(5)
    cusum = registry.create("cusum", arl=200_000.0, direction="down")
    expected = []
    for i, event in enumerate(events, start=1):
        block = collector.add(event.y_true, event.y_score, False)
        if block is None:
            continue
        reference = standardizer.reference
        z = standardizer.update(block)
        if z is not None and cusum.update(z).name == "DRIFT":
            expected.append((i, block.auc, reference))
            standardizer.reset()
    assert got == expected
    assert got and all(at > 6000 for at, _, _ in got), "the drop, and only the drop"
    assert got[0][1] < got[0][2]  # the block's AUC is below the reference


def test_a_second_change_after_a_false_alarm_is_alarmed() -> None:
    # A CUSUM with a short run length (arl 30 blocks) alarms falsely now and then; every
    # alarm restarts the reference, so the real drop that follows is alarmed all the same.
    events = binormal(12, [(0, 0.9), (12_000, 0.7)], 15_000)
    monitor = Monitor("m", blocks_config(arl=30.0))
    alarms = [a for e in events for a in monitor.update(e) if a.measure == "auc"]
    before = [a for a in alarms if a.event_count <= 12_000]
    after = [a for a in alarms if a.event_count > 12_000]
    assert before, "the short run length must have given false alarms"
    assert after and after[0].event_count < 12_000 + 1500


def test_successive_drops_are_each_alarmed() -> None:
    events = binormal(13, [(0, 0.9), (8000, 0.8), (16_000, 0.7)], 24_000)
    monitor = Monitor("m", MonitorConfig())
    alarms = [a.event_count for e in events for a in monitor.update(e) if a.measure == "auc"]
    assert any(8000 < at < 10_000 for at in alarms), alarms
    assert any(16_000 < at < 18_000 for at in alarms), alarms
    assert not any(at <= 8000 for at in alarms)


def test_false_alarm_rate_of_a_short_stationary_run_is_calibrated() -> None:
    # At arl 100 blocks, 40 000 stationary events at 1:1 (about 46 events per block, less
    # 5 warm-up blocks per alarm) should give about 8 AUC alarms (measured 1.1× nominal in
    # benchmarks/detection.py, table E) and fewer on the rates (mid-p is conservative).
    # Poisson bounds at ~0.1 % each side; a standardization off by 30 % in spread fails.
    monitor = Monitor("m", blocks_config(arl=100.0, window_size=50))
    counts = {"auc": 0, FALSE_NEGATIVE_RATE: 0, FALSE_POSITIVE_RATE: 0}
    blocks = 0
    collector = BlockCollector(20)
    for event in binormal(14, [(0, 0.9)], 40_000, positives=0.5):
        for alarm in monitor.update(event):
            counts[alarm.measure] += 1
        blocks += collector.add(event.y_true, event.y_score, False) is not None
    expected = blocks / 100
    assert 1 <= counts["auc"] <= 2.5 * expected, (counts, expected)
    assert counts[FALSE_NEGATIVE_RATE] <= 2.5 * expected
    assert counts[FALSE_POSITIVE_RATE] <= 2.5 * expected
    assert sum(counts.values()) >= 0.3 * expected * 3


def test_pure_class_ratio_changes_raise_no_alarm() -> None:
    # AUC 0.9 throughout; positives 50 % → 10 % → 95 %, threshold far off-centre (1.5).
    rng = random.Random(15)
    monitor = Monitor("m", MonitorConfig(threshold=1.5))
    alarms = []
    for i in range(60_000):
        share = 0.5 if i < 20_000 else 0.1 if i < 40_000 else 0.95
        y = int(rng.random() < share)
        alarms += monitor.update(Event(y, rng.gauss(1.81 if y else 0.0, 1.0)))
    assert alarms == []


def test_shown_states_agree_with_the_alarms() -> None:
    # ADWIN cuts again within an episode (drifts that are not alarms); the state users see
    # is drift only at an alarm. Blocks watches show drift from an alarm until their next
    # input, never without one.
    watches = (Watch("gmean", (DetectorSpec("adwin", {"clock": 1}),), normalized=True),
               Watch("auc", (DetectorSpec("cusum"),), feed="blocks"))
    monitor = Monitor("m", config(sample_every=5, watches=watches))
    adwin = monitor._sampled_watches[0].detectors
    raw_drifts, alarmed, shown = 0, set(), {}

    def states() -> dict[tuple[str, str], str]:  # what snapshot() exports, without the measures
        return {(s.watch.measure, d.name): level.name.lower()
                for s in monitor._watch_states()
                for d, level in zip(s.detectors, s.shown, strict=True)}

    for i, event in enumerate(binormal(16, [(0, 0.9), (3000, 0.7)], 6000), start=1):
        for alarm in monitor.update(event):
            alarmed.add((alarm.measure, alarm.detector, i))
        raw_drifts += adwin[0].drift_detected
        for key, state in states().items():
            if state == "drift" and shown.get(key) != "drift":
                assert (*key, i) in alarmed, (key, i)
            shown[key] = state
        if i % 500 == 0:
            assert monitor.snapshot().detector_states == states()
    assert raw_drifts > sum(1 for m, _, _ in alarmed if m == "gmean") >= 1
    assert any(m == "auc" for m, _, _ in alarmed)


@pytest.mark.parametrize("split", [1, 999, 4321, 6001, 7777])
def test_blocks_state_restores_exactly(split: int) -> None:
    events = binormal(17, [(0, 0.9), (6000, 0.8)], 10_000)
    config = blocks_config(arl=500.0, watches=(*blocks_config(arl=500.0).watches, *WATCHES[1:]))
    original = Monitor("m", config)
    for event in events[:split]:
        original.update(event)
    state = json.loads(json.dumps(original.export_state()))
    restored = Monitor.restore(state)
    for event in events[split:]:
        assert restored.update(event) == original.update(event)
    assert json.dumps(restored.export_state()) == json.dumps(original.export_state())
    assert restored.snapshot() == original.snapshot()


def version_1(monitor: Monitor) -> dict[str, object]:
    """A state as driftwatch wrote it before blocks watches (format version 1)."""
    state = monitor.export_state()
    config = state["config"]
    for watch in config["watches"]:
        del watch["feed"]
    del config["block_min_class"], config["block_warmup"], state["blocks"]
    for watch in state["watches"]:
        watch["fed_at_drift"] = watch.pop("fed_at_alarm")
        del watch["shown"], watch["standardizer"]
    state["version"] = 1
    return state


def test_a_version_1_state_keeps_its_window_and_counters_with_fresh_detectors() -> None:
    events = stream(18, 3000, drop_at=1500)
    old = Monitor("m", config())
    for event in events:
        old.update(event)
    restored = Monitor.restore(version_1(old))
    assert restored.config == config()
    assert restored.events == 3000 and restored.snapshot().alarms == old.snapshot().alarms
    assert restored.window.export_state()["events"] == old.window.export_state()["events"]
    fresh = Monitor("m", config())
    assert [d.export_state() for s in restored._watch_states() for d in s.detectors] == [
        d.export_state() for s in fresh._watch_states() for d in s.detectors
    ]
    # With today's settings (the defaults), it continues on blocks.
    assert Monitor.restore(version_1(old), MonitorConfig()).config == MonitorConfig()


def test_auc_standard_error_is_delongs_on_the_window() -> None:
    monitor = Monitor("m", config())
    events = stream(19, 700)
    for event in events:
        monitor.update(event)
    window = events[-200:]
    auc, s10, s01 = brute_force_delong([e.y_score for e in window if e.y_true],
                                       [e.y_score for e in window if not e.y_true])
    positives = sum(e.y_true for e in window)
    expected = math.sqrt(s10 / positives + s01 / (200 - positives))
    assert monitor.snapshot().auc_standard_error == pytest.approx(expected, rel=1e-12)
    assert auc == pytest.approx(monitor.snapshot().values["auc"])
    empty = Monitor("m", config())
    assert math.isnan(empty.snapshot().auc_standard_error)


def test_blocks_watches_refuse_what_they_cannot_do() -> None:
    with pytest.raises(ValueError, match="feed"):
        Watch(FALSE_NEGATIVE_RATE)  # a block measure on the window
    with pytest.raises(ValueError, match="feed"):
        Watch("gmean", feed="blocks")
    with pytest.raises(ValueError, match="ddm"):
        Watch("auc", (DetectorSpec("ddm"),), feed="blocks")
    with pytest.raises(ValueError, match="floor"):
        Watch("auc", floor=0.5, feed="blocks")
    with pytest.raises(ValueError, match="block_min_class"):
        MonitorConfig(block_min_class=1)


@pytest.mark.parametrize("watches", [WATCHES, MonitorConfig().watches], ids=["window", "default"])
def test_update_values_is_update(watches: tuple[Watch, ...]) -> None:
    """The replay's path (the event's values, no Event) gives update's alarms and state."""
    events = stream(seed=11, length=6000, drop_at=3000)
    by_event = Monitor("m", config(watches=watches))
    by_values = Monitor("m", config(watches=watches))
    alarms = [by_event.update(e) for e in events]
    assert any(alarms)
    assert [by_values.update_values(e.y_true, e.y_score, e.y_pred, e.ts) for e in events] == alarms
    assert repr(by_values.snapshot()) == repr(by_event.snapshot())


@pytest.mark.parametrize("chosen", [
    config(),
    config(adaptive_window=True),
    Settings().monitoring.monitor_config("m"),
    MonitorConfig(estimation=EstimationConfig(first_n=500)),
], ids=["window watches", "adaptive window", "defaults", "estimation"])
def test_a_monitor_restored_with_the_configuration_it_was_saved_with_takes_it_as_it_is(
        chosen: MonitorConfig) -> None:
    """The agent restores every model with its own configuration: when the saved one is the
    same (read back from JSON, as the state topic and the file hold it), the monitor takes
    the agent's object itself, without parsing or comparing, and continues exactly as if it
    had been parsed; an equal configuration that is another object is taken too. (A
    different one reconfigures the monitor:
    test_restore_with_changed_settings_keeps_the_window_and_counters.)"""
    events = stream(9, 1200, drop_at=600)
    original = Monitor("m", chosen)
    for event in events[:900]:
        original.update(event)
    state = json.loads(json.dumps(original.export_state()))
    assert state["config"] == chosen.saved_form()
    restored = Monitor.restore(state, config=chosen)
    assert restored.config is chosen
    twin = MonitorConfig.from_dict(chosen.saved_form())
    assert twin == chosen and Monitor.restore(state, config=twin).config is twin
    parsed = Monitor.restore(state)
    for event in events[900:]:
        assert restored.update(event) == parsed.update(event) == original.update(event)
    assert json.dumps(restored.export_state()) == json.dumps(parsed.export_state()) \
        == json.dumps(original.export_state())


def test_saved_forms_are_kept_per_configuration_object() -> None:
    """The form is worked out once per object, and an object's form is never another's
    (a configuration dropped and its id reused)."""
    first = config()
    assert first.saved_form() is first.saved_form()
    for size in range(100, 300):  # past the forms kept: they are forgotten, not mixed up
        each = config(window_size=size)
        assert each.saved_form()["window_size"] == size
    assert first.saved_form() == json.loads(json.dumps(first.to_dict()))
