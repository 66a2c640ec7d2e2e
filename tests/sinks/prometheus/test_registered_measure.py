"""A measure that is not a confusion-matrix measure, added without touching the window.

The mean score of the window's events depends on the scores alone, which the confusion counts
do not hold. Registered as a window hook over the window's public reads, it is reported by
the window, watched by a Monitor's detector, accepted by the settings and exported on a real
scrape of the metrics endpoint; unregistered, it is gone from all of them.
"""

from __future__ import annotations

import math
import random
import urllib.request
from collections import deque

import pytest
from prometheus_client import CollectorRegistry
from prometheus_client.parser import text_string_to_metric_families

from driftwatch.core.measures import registry
from driftwatch.core.measures.registry import Measure, Tally, WindowView
from driftwatch.core.monitor import DetectorSpec, Monitor, MonitorConfig, Watch
from driftwatch.settings import WatchSettings
from driftwatch.sinks.prometheus.collector import SnapshotCollector
from driftwatch.sinks.prometheus.server import MetricsServer
from driftwatch.sinks.snapshot import AgentSnapshot

WINDOW = 200


def mean_score(window: WindowView, tally: Tally) -> float:
    """The mean score of the window's events (its public state; the tally, its confusion
    counts, cannot give it); NaN while it is empty."""
    events = window.export_state()["events"]
    return math.fsum(score for _, score, _ in events) / len(events) if events else math.nan


MEAN_SCORE = Measure(
    "mean_score", "mean score", "The mean score of the window's events.",
    "the window is empty", window=mean_score,
)


def scrape(url: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(url, timeout=5) as response:
        text = response.read().decode()
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def test_a_registered_window_hook_is_reported_watched_and_exported() -> None:
    rng = random.Random(11)
    with registry.registered(MEAN_SCORE):
        watch = Watch("mean_score", (DetectorSpec("page_hinkley", {"threshold": 2.0,
                                                                    "delta": 0.02}),))
        assert WatchSettings(measure="mean_score").measure == "mean_score"
        monitor = Monitor("fraud", MonitorConfig(WINDOW, 10, watches=(watch,)))
        recent: deque[float] = deque(maxlen=WINDOW)
        alarms = []
        for i in range(3000):
            label = int(rng.random() < 0.3)
            # The scores fall by 0.3 from event 2000 on. The predictions are given (always
            # right), so no confusion-matrix measure moves: only a measure of the scores can.
            score = rng.uniform(0.4, 1.0) - (0.3 if i >= 2000 else 0.0)
            recent.append(score)
            alarms += monitor.update_values(label, score, label, None)
            if i % 97 == 0:
                assert monitor.window.measure("mean_score") == math.fsum(recent) / len(recent)
        values = monitor.window.measures()
        assert list(values)[-1] == "mean_score"
        assert values["mean_score"] == math.fsum(recent) / len(recent)
        drifts = [a for a in alarms if a.measure == "mean_score" and a.level == "drift"]
        assert drifts and all(a.event_count > 2000 for a in drifts)
        assert drifts[0].event_count < 2000 + WINDOW  # seen within a window of the change

        snapshot = monitor.snapshot()
        assert "mean_score" not in snapshot.normalized  # no normalization declared
        agent = AgentSnapshot(monitors=(snapshot,), rejected={}, consumer_lag={}, ready=True,
                              started_time=0.0)
        metrics = CollectorRegistry()
        metrics.register(SnapshotCollector(lambda: agent))
        with MetricsServer(metrics, "127.0.0.1", 0, lambda: True) as server:
            samples = scrape(server.url)
        key = (("measure", "mean_score"), ("model", "fraud"))
        assert samples[("driftwatch_measure", key)] == values["mean_score"]
        drift = (("detector", "page_hinkley"), ("level", "drift"), *key)
        assert samples[("driftwatch_alarms_total", drift)] == len(drifts)

    assert "mean_score" not in monitor.window.measures()
    with pytest.raises(ValueError, match=r"^measure: must be one of"):
        Watch("mean_score")
    with pytest.raises(ValueError, match="mean_score"):
        WatchSettings(measure="mean_score")


def test_registration_refuses_what_the_consumers_could_not_use() -> None:
    with pytest.raises(ValueError, match="already registered"):
        registry.register(registry.get("auc"))
    with pytest.raises(ValueError, match="built in"):
        registry.unregister("kappa")
    with pytest.raises(ValueError, match="only window measures"):
        registry.register(Measure("toy_rate", "toy", "A toy.", "never", kind="block"))
    with pytest.raises(ValueError, match="exactly one of counts"):
        Measure("toy", "toy", "A toy.", "never")
    with pytest.raises(ValueError, match="normalization needs a counts formula"):
        Measure("toy", "toy", "A toy.", "never", window=mean_score,
                normalization=registry.get("gmean").normalization)
    with pytest.raises(ValueError, match="lower-case"):
        Measure("Mean Score", "toy", "A toy.", "never", window=mean_score)
    assert registry.names() == tuple(m.name for m in registry.BUILTIN)
