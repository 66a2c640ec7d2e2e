"""A fleet of 10 000 models: what one agent's ``/metrics`` costs (issue 25).

``python -m benchmarks fleet --scrape`` (or ``python -m benchmarks.fleet --scrape``) runs the
scrape part, ``--kill`` the kill part (:mod:`benchmarks.fleet_kill`: 8 partitions, 1, 2 and 4
agents, a SIGKILL at a random moment: restore time per partition, handover gap, longest loop
pause, RSS per agent, scrape of each agent, group churn, union of metrics against the
reference), neither both.

Scrape part: N models (10 000; ``--quick`` 1 000), each a real
:class:`~driftwatch.core.monitor.Monitor` with the default watches and window (d = 1 000)
(:data:`DISTINCT` of them, the others copies) fed 1 200 events of its own binormal stream (AUC about
0.8, 10 % positives) through the column path
(:meth:`~driftwatch.core.monitor.Monitor.update_columns`, what a replay uses), so every window is
full and every default series is defined. Only the monitors' snapshots are kept (a scrape reads
nothing else); each monitor is dropped once it has given its snapshot, so the fleet fits in memory.
The snapshots go into an :class:`~driftwatch.sinks.snapshot.AgentSnapshot` served by the agent's
real registry (the snapshot and join collectors, process and platform collectors, as ``driftwatch
run`` registers them, alert thresholds from the default settings) and the real
:class:`~driftwatch.sinks.prometheus.server.MetricsServer` on a loopback port; each scrape is an
HTTP GET of ``/metrics``.

Reported per export level (``metrics.per_model``, when the settings have it):

- size (MB of the text body, and gzip'd when the scraper asks for it) and samples;
- time to answer a GET (median of several; the agent process's CPU time in brackets, less
  sensitive to a busy machine), in three states of the fleet: every model
  changed since the last scrape (the worst case: every model had events), one model in ten
  changed, none changed;
- the reference, measured in the same run: prometheus_client's own ``generate_latest``
  over one collector of the same number of plain gauge samples (labels ``model`` and
  ``measure``, formatted values), the least a scrape through prometheus_client can cost;
  the ratio is the scrape's time over it.
"""

from __future__ import annotations

import argparse
import gzip
import statistics
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import replace

import numpy as np
from prometheus_client import CollectorRegistry, PlatformCollector, ProcessCollector
from prometheus_client.exposition import generate_latest
from prometheus_client.metrics_core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from benchmarks import fleet_kill
from driftwatch.core.monitor import Monitor, MonitorConfig
from driftwatch.core.report import Snapshot
from driftwatch.settings import Settings
from driftwatch.sinks.prometheus.collector import SnapshotCollector
from driftwatch.sinks.prometheus.deprecated import DEPRECATED_NAMES
from driftwatch.sinks.prometheus.exposition import encode
from driftwatch.sinks.prometheus.families import Families
from driftwatch.sinks.prometheus.join_collector import JoinCollector
from driftwatch.sinks.prometheus.rendered import RenderedFamily
from driftwatch.sinks.prometheus.server import MetricsServer
from driftwatch.sinks.snapshot import AgentSnapshot

PARTS = ("scrape", "kill")
"""The fleet benchmark's parts, each printing its table."""

MODELS = 10_000
QUICK_MODELS = 1_000
WINDOW = 1_000
EVENTS_PER_MODEL = 1_200
"""More than the window, so that every window is full and its measures are defined."""
DISTINCT = 1_000
"""Monitors actually fed; the other models' snapshots are copies of theirs under their own
ids (a scrape's cost depends on the series and their digits, not on which values they are;
feeding 10 000 monitors would take minutes for nothing more)."""
SERVER_TIMEOUT = 120.0
"""``metrics.request_timeout_seconds`` of the benchmark's server, above the 10 s default so
that a slow scrape is measured rather than cut (the default closes a connection whose
answer takes longer: Prometheus would see the target down)."""
REFERENCE_REPEATS = 3
REPEATS = 5
QUICK_REPEATS = 3
CHANGED_SHARE = 0.1
"""Share of models with events between two scrapes in the middle state."""


def fleet_snapshots(models: int, seed: int = 25) -> list[Snapshot]:
    """``models`` snapshots of real monitors with full default windows (see the module
    docstring and :data:`DISTINCT`); the monitors themselves are dropped."""
    rng = np.random.default_rng(seed)
    config = MonitorConfig(window_size=WINDOW)
    snapshots = []
    base = 1.7e9
    times = [base + i for i in range(EVENTS_PER_MODEL)]
    for index in range(min(models, DISTINCT)):
        labels = (rng.random(EVENTS_PER_MODEL) < 0.1).astype(np.int64)
        scores = rng.normal(1.19 * labels, 1.0)
        monitor = Monitor(f"model-{index:05d}", config)
        monitor.update_columns(labels.tolist(), scores.tolist(), times)
        snapshots.append(monitor.snapshot())
    return [replace(snapshots[index % DISTINCT], model=f"model-{index:05d}")
            for index in range(models)]


def agent_snapshot(snapshots: list[Snapshot], now: float) -> AgentSnapshot:
    return AgentSnapshot(monitors=tuple(snapshots), rejected={"too_many_models": 0},
                         consumer_lag={("events", p): 0 for p in range(8)}, ready=True,
                         started_time=now - 3600,
                         last_processed={s.model: now for s in snapshots})


def changed(snapshots: list[Snapshot], share: float) -> list[Snapshot]:
    """The fleet one scrape later with ``share`` of its models changed (new snapshot
    objects, one more event each); the others are the same objects, as the agent's
    :meth:`~driftwatch.pipeline.Monitors.snapshots` reuses an unchanged monitor's."""
    every = round(1 / share) if share > 0 else 0
    return [replace(s, events=s.events + 1) if every and i % every == 0 else s
            for i, s in enumerate(snapshots)]


class _PlainGauges(Collector):
    """The reference: ``samples`` plain gauge samples with (model, measure) labels, in
    families of the exporter's average size."""

    def __init__(self, samples: int, families: int) -> None:
        self.samples, self.families = samples, families

    def collect(self) -> Iterator[Metric]:
        per_family = max(1, self.samples // self.families)
        left = self.samples
        for f in range(self.families):
            family = GaugeMetricFamily(f"reference_gauge_{f}", "A plain gauge.",
                                       labels=("model", "measure"))
            for i in range(min(per_family if f < self.families - 1 else left, left)):
                family.add_metric((f"model-{i:05d}", "auc"), 0.123456789 + i * 1e-7)
            left -= len(family.samples)
            yield family


class _SampleBySample(Collector):
    """The scrape as it was built before its per-model families were written as text:
    the same samples (:class:`~driftwatch.sinks.prometheus.families.Families`' own), added
    one by one to prometheus_client's families, which ``generate_latest`` formats."""

    def __init__(self, source: Callable[[], AgentSnapshot], settings: Settings) -> None:
        self.source, self.settings = source, settings

    def collect(self) -> Iterator[Metric]:
        agent = self.source()
        metrics = self.settings.metrics
        families = Families(metrics.export_deprecated_metrics, metrics.per_model)
        families.fill(replace(agent, monitors=()), None)
        plain: dict[str, CounterMetricFamily | GaugeMetricFamily] = {}
        for family in families.all():
            if isinstance(family, RenderedFamily):
                kind = CounterMetricFamily if family.type == "counter" else GaugeMetricFamily
                plain[family.name] = kind(family.name, family.documentation,
                                          labels=family.label_names)
        aliases = {new: old for old, new in DEPRECATED_NAMES.items() if old in plain}
        thresholds = self.settings.alerts.thresholds
        for snap in agent.monitors:
            samples = families._model_samples(snap, agent.last_processed.get(snap.model),
                                              thresholds(snap.model))
            for family, labels, value in families._level_samples(
                    snap, list(samples), families.level) if families.level != "all" else samples:
                plain[family.name].add_metric(list(labels), value)
                if family.name in aliases:
                    plain[aliases[family.name]].add_metric(list(labels), value)
        return iter([plain.get(family.name, family) for family in families.all()])


def _get(url: str, gzip_ok: bool) -> tuple[float, bytes]:
    request = urllib.request.Request(url)
    if gzip_ok:
        request.add_header("Accept-Encoding", "gzip")
    started = time.perf_counter()
    with urllib.request.urlopen(request, timeout=120) as response:
        body = response.read()
    return time.perf_counter() - started, body


def _median(times: list[float]) -> float:
    return statistics.median(times)


def _cpu(repeats: int, run: Callable[[], object]) -> float:
    """Median CPU seconds of ``run()``."""
    times = []
    for _ in range(repeats):
        started = time.process_time()
        run()
        times.append(time.process_time() - started)
    return _median(times)


def _collector_cpu(collector: Collector, fresh: list[AgentSnapshot], ours: bool) -> float:
    """Median CPU seconds of one exposition of ``collector`` over each of ``fresh`` in turn
    (each a fleet whose every model changed)."""
    registry = CollectorRegistry(auto_describe=False)
    current = [fresh[0]]
    registry.register(collector)
    collector.source = lambda: current[0]  # type: ignore[attr-defined]
    times = []
    for snapshot in fresh:
        current[0] = snapshot
        started = time.process_time()
        encode(registry, generate_latest) if ours else generate_latest(registry)
        times.append(time.process_time() - started)
    return _median(times)


def _levels(settings: Settings) -> list[str]:
    """The export levels the settings offer (``metrics.per_model``), or ``all`` alone."""
    field = type(settings.metrics).model_fields.get("per_model")
    if field is None:
        return ["all"]
    args = getattr(field.annotation, "__args__", ())
    return [str(level) for level in args] or ["all"]


def _registry(source: Callable[[], AgentSnapshot], settings: Settings) -> CollectorRegistry:
    """The registry ``driftwatch run`` builds (:mod:`driftwatch.agent.start`)."""
    registry = CollectorRegistry(auto_describe=True)
    registry.register(SnapshotCollector(source, settings.alerts.thresholds,
                                        deprecated=settings.metrics.export_deprecated_metrics,
                                        per_model=settings.metrics.per_model))
    registry.register(JoinCollector(lambda: source().join))
    ProcessCollector(registry=registry)
    PlatformCollector(registry=registry)
    return registry


def scrape_row(level: str, snapshots: list[Snapshot], repeats: int) -> str:
    """One level's row of the table (its columns: :func:`scrape_table`)."""
    settings = Settings() if level == "all" else Settings.model_validate(
        {"metrics": {"per_model": level}})
    now = time.time()
    current = [agent_snapshot(snapshots, now)]
    registry = _registry(lambda: current[0], settings)
    with MetricsServer(registry, "127.0.0.1", 0, ready=lambda: True,
                       request_timeout=SERVER_TIMEOUT) as server:
        cpu = time.process_time()
        first, body = _get(server.url, False)
        first_cpu = time.process_time() - cpu
        text = body.decode()
        samples = sum(1 for line in text.splitlines() if line and line[0] != "#")
        families = sum(1 for line in text.splitlines() if line.startswith("# TYPE"))

        def scrape_state(share: float) -> tuple[float, float]:
            """Median wall and CPU seconds of a GET after ``share`` of the models changed."""
            walls, cpus = [], []
            for _ in range(repeats):
                current[0] = agent_snapshot(changed(snapshots, share), now)
                cpu = time.process_time()
                walls.append(_get(server.url, False)[0])
                cpus.append(time.process_time() - cpu)
            return _median(walls), _median(cpus)

        all_changed, all_cpu = scrape_state(1.0)
        some_changed, _ = scrape_state(CHANGED_SHARE)
        none_changed, _ = scrape_state(0.0)
        gzip_times, zipped = [], b""
        for _ in range(repeats):
            elapsed, zipped = _get(server.url, True)
            gzip_times.append(elapsed)
        assert gzip.decompress(zipped).startswith(b"# HELP")
    plain = CollectorRegistry(auto_describe=False)
    plain.register(_PlainGauges(samples, families))
    plain_cpu = _cpu(REFERENCE_REPEATS, lambda: generate_latest(plain))
    # The collector alone, ours and the one before, each on fresh snapshots (all changed).
    fresh = [agent_snapshot(changed(snapshots, 1.0), now) for _ in range(REFERENCE_REPEATS)]
    ours_cpu = _collector_cpu(SnapshotCollector(
        lambda: fresh[0], settings.alerts.thresholds,
        deprecated=settings.metrics.export_deprecated_metrics,
        per_model=settings.metrics.per_model), fresh, ours=True)
    before_cpu = _collector_cpu(_SampleBySample(lambda: fresh[0], settings), fresh, ours=False)
    models = len(snapshots)
    return (f"| {level} | {len(body) / 1e6:.2f} | {len(zipped) / 1e6:.2f} | {samples} "
            f"| {samples / models:.1f} | {len(body) / models:.0f} | {first:.2f} ({first_cpu:.2f}) "
            f"| {all_changed:.2f} ({all_cpu:.2f}) | {some_changed:.2f} | {none_changed:.2f} "
            f"| {_median(gzip_times):.2f} | {plain_cpu:.2f} | {all_cpu / plain_cpu:.2f} "
            f"| {ours_cpu:.2f} | {before_cpu:.2f} | {ours_cpu / before_cpu:.2f} |")


def scrape_table(models: int, repeats: int) -> None:
    started = time.perf_counter()
    snapshots = fleet_snapshots(models)
    print(f"{models} models (d = {WINDOW}, {EVENTS_PER_MODEL} events each, "
          f"{min(models, DISTINCT)} distinct) built and snapshotted in "
          f"{time.perf_counter() - started:.1f} s; GET times in seconds, median of {repeats} "
          f"(CPU seconds of the agent's process in brackets)\n")
    print("| level | MB (text) | MB (gzip) | samples | samples per model | bytes per model "
          "| first scrape | all changed | 10 % changed | none changed | gzip GET "
          "| plain gauges CPU | all changed / plain | collector CPU "
          "| sample by sample CPU | collector / sample by sample |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for level in _levels(Settings()):
        print(scrape_row(level, snapshots, repeats))
        sys.stdout.flush()


def main(quick: bool, parts: tuple[str, ...] = PARTS, broker: str = "apache") -> None:
    models = QUICK_MODELS if quick else MODELS
    repeats = QUICK_REPEATS if quick else REPEATS
    if "scrape" in parts:
        scrape_table(models, repeats)
    if "kill" in parts:
        print()
        fleet_kill.main(quick, broker)
    left = [part for part in PARTS if part not in parts]
    if left:
        print(f"\n(parts not run: {', '.join(left)})")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(prog="python -m benchmarks.fleet", description=__doc__)
    parser.add_argument("--quick", action="store_true", help=f"{QUICK_MODELS} models")
    parser.add_argument("--scrape", action="store_true", help="the scrape part")
    parser.add_argument("--kill", action="store_true", help="the kill part")
    parser.add_argument("--broker", choices=("tansu", "apache", "both"), default="apache",
                        help="the kill part's broker")
    parser.add_argument("--models", type=int, help="how many models of the scrape part "
                        "(default: 10 000; the kill part's: python -m benchmarks.fleet_kill)")
    args = parser.parse_args()
    if args.models:
        MODELS = QUICK_MODELS = args.models
    chosen = tuple(part for part in PARTS if getattr(args, part))
    main(args.quick, chosen or PARTS, args.broker)
