"""The ``/metrics`` body with per-model families written as text
(driftwatch.sinks.prometheus.exposition, .rendered): byte for byte what prometheus_client
writes for the same samples, in both formats, and the text kept between scrapes only while a
model's snapshot is the same."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Iterator

import pytest
from hypothesis import given
from hypothesis import strategies as st
from prometheus_client import CollectorRegistry
from prometheus_client.exposition import choose_encoder
from prometheus_client.metrics_core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector
from prometheus_client.utils import floatToGoString

from driftwatch.core.estimation.config import EstimationConfig
from driftwatch.core.monitor import Monitor, MonitorConfig, Snapshot
from driftwatch.settings import AlertsSettings
from driftwatch.sinks.prometheus.collector import SnapshotCollector
from driftwatch.sinks.prometheus.exposition import encode
from driftwatch.sinks.prometheus.families import Families
from driftwatch.sinks.prometheus.rendered import RenderedFamily, format_value
from driftwatch.sinks.snapshot import AgentSnapshot

T0 = 1_700_000_000.0

ACCEPT = (
    "",  # the text format 0.0.4
    "application/openmetrics-text; version=1.0.0",
    "application/openmetrics-text; version=1.0.0; escaping=allow-utf-8",
    "text/plain; version=1.0.0; escaping=underscores",
)


def _monitor_snapshots() -> list[Snapshot]:
    """Real monitors' snapshots (filled window, full and estimated), and copies with the
    values formatting has to get right: label values to escape, non-ASCII ids, counts
    past 10^7 (Go's exponent form), tiny, negative and infinite values."""
    plain = Monitor("plain", MonitorConfig(window_size=200))
    estimated = Monitor("estimated", MonitorConfig(
        window_size=200, estimation=EstimationConfig(calibration="first_n", first_n=100)))
    for i in range(600):
        label = int(i % 7 == 0)
        score = (i * 7919 % 1000) / 1000 + 0.3 * label
        plain.update_values(label, score, None, T0 + i)
        estimated.update_values(label, min(score, 1.0), None, T0 + i)
    base = plain.snapshot()
    odd = dataclasses.replace(
        base, model='quote" back\\slash\nnewline', events=12_345_678,
        values={**base.values, "auc": 1e-320, "kappa": -0.25, "gmean": math.inf})
    return [base, estimated.snapshot(), odd,
            dataclasses.replace(base, model="модель-β", events=10_000_000),
            dataclasses.replace(base, model="tiny", positives=0, events=0)]


def _agent(snapshots: list[Snapshot]) -> AgentSnapshot:
    return AgentSnapshot(monitors=tuple(snapshots), rejected={"bad_json": 3},
                         consumer_lag={("events", 0): 7}, ready=True, started_time=T0,
                         last_processed={s.model: T0 + 99.5 for s in snapshots})


class _Reference(Collector):
    """The same families filled sample by sample into prometheus_client's own families:
    what the exposition was before its per-model families were written as text."""

    def __init__(self, agent: AgentSnapshot, thresholds: Callable[[str], object],
                 deprecated: bool) -> None:
        self.agent, self.thresholds, self.deprecated = agent, thresholds, deprecated

    def collect(self) -> Iterator[Metric]:
        families = Families(self.deprecated)
        families.fill(dataclasses.replace(self.agent, monitors=()), None)
        families.dropped.add_metric([], 0)  # the collector adds its running total
        plain: dict[str, CounterMetricFamily | GaugeMetricFamily] = {}
        for family in families.all():
            if isinstance(family, RenderedFamily):
                kind = CounterMetricFamily if family.type == "counter" else GaugeMetricFamily
                plain[family.name] = kind(family.name, family.documentation,
                                          labels=family.label_names)
        aliases = {new: old for old, new in (
            ("driftwatch_auc_floor", "driftwatch_auc_floor_threshold"),
            ("driftwatch_auc_max_drop", "driftwatch_auc_max_drop_threshold"),
            ("driftwatch_no_events_seconds", "driftwatch_no_events_threshold_seconds"),
            ("driftwatch_batch_labels", "driftwatch_batch_labels_enabled"),
        )} if self.deprecated else {}
        for snap in self.agent.monitors:
            samples = families._model_samples(  # the samples, unformatted
                snap, self.agent.last_processed.get(snap.model),
                self.thresholds(snap.model))  # type: ignore[arg-type]
            for family, labels, value in samples:
                plain[family.name].add_metric(list(labels), value)
                if family.name in aliases:
                    plain[aliases[family.name]].add_metric(list(labels), value)
        return iter([plain.get(family.name, family) for family in families.all()])


@pytest.mark.parametrize("deprecated", [True, False])
@pytest.mark.parametrize("accept", ACCEPT)
def test_the_body_is_byte_for_byte_prometheus_clients(accept: str, deprecated: bool) -> None:
    agent = _agent(_monitor_snapshots())
    thresholds = AlertsSettings.model_validate(
        {"models": {"plain": {"auc_floor": 0.65, "batch_labels": True}}}).thresholds
    registry = CollectorRegistry(auto_describe=True)
    registry.register(SnapshotCollector(lambda: agent, thresholds, deprecated=deprecated))
    reference = CollectorRegistry(auto_describe=True)
    reference.register(_Reference(agent, thresholds, deprecated))
    encoder, _ = choose_encoder(accept)
    ours = encode(registry, encoder)
    theirs = encoder(reference)
    assert ours == theirs
    assert b'model="quote\\" back\\\\slash\\nnewline"' in ours
    assert b"1.2345678e+07" in ours and "модель-β".encode() in ours


def test_rendered_samples_parse_back_to_the_values() -> None:
    agent = _agent(_monitor_snapshots())
    registry = CollectorRegistry(auto_describe=True)
    registry.register(SnapshotCollector(lambda: agent))
    assert registry.get_sample_value(
        "driftwatch_events_processed_total", {"model": "модель-β"}) == 10_000_000
    odd = 'quote" back\\slash\nnewline'
    assert registry.get_sample_value(
        "driftwatch_measure", {"model": odd, "measure": "auc"}) == 1e-320
    assert registry.get_sample_value(
        "driftwatch_measure", {"model": odd, "measure": "gmean"}) == math.inf


def test_a_models_text_is_reused_only_while_its_snapshot_is_the_same() -> None:
    snapshots = _monitor_snapshots()
    rendered = Families().fill(_agent(snapshots), None)
    again = Families().fill(_agent(snapshots), None, rendered)
    assert all(again[s.model] is rendered[s.model] for s in snapshots)
    changed = [dataclasses.replace(snapshots[0], events=snapshots[0].events + 1),
               *snapshots[1:]]
    families = Families()
    third = families.fill(_agent(changed), None, again)
    assert third[changed[0].model] is not again[changed[0].model]
    assert all(third[s.model] is again[s.model] for s in changed[1:])
    assert f'driftwatch_events_processed_total{{model="plain"}} ' \
           f'{float(changed[0].events)!r}\n' in families.processed.body()
    # The thresholds and the last-processed time are part of the text too.
    moved = dataclasses.replace(_agent(changed), last_processed={
        s.model: T0 + 100.0 for s in changed})
    fourth = Families().fill(moved, None, third)
    assert all(fourth[s.model] is not third[s.model] for s in changed)


@given(st.one_of(st.floats(allow_nan=True, allow_infinity=True),
                 st.integers(-(2**70), 2**70)))
def test_values_are_formatted_as_prometheus_client_formats_them(value: float) -> None:
    assert format_value(value) == floatToGoString(value)
