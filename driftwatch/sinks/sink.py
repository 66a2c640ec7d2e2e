"""The :class:`Sink` protocol: where what the agent publishes goes, and :class:`Published`,
what it publishes.

The agent's loop thread replaces immutable values (:class:`~driftwatch.sinks.snapshot.
AgentSnapshot`, one :class:`~driftwatch.sinks.comparison_snapshot.ComparisonSnapshot` per
comparison) wholesale; a sink never sees the monitors, only those values, read through
:class:`Published` when the sink needs them. That is what lets both kinds of sink share one
protocol:

- a **pull** sink (Prometheus, :mod:`driftwatch.sinks.prometheus.sink`) reads them when it is
  scraped, on its server's threads; its :meth:`Sink.publish` has nothing to do;
- a **push** sink (OpenTelemetry over OTLP, :mod:`driftwatch.sinks.otlp.sink`) reads them
  on its own interval and sends them; :meth:`Sink.publish` sends now, and :meth:`Sink.close`
  sends a last time before it returns, so a stopping agent's final state is exported.

What the agent publishes, and so what a sink receives: the measures of every model (the
snapshot; with the join's delayed-label, label-free and estimate views and the
champion/challenger comparisons), the alarm counts (``driftwatch_alarms_total``: the alarm
records themselves go to the log and the Kafka alarm topic, :mod:`driftwatch.sinks.alarms`,
not to a sink) and the agent's self-metrics (operations in the snapshot, the process and the
Python runtime). Which metric families that makes, and their names, are the Prometheus
exposition's (:mod:`driftwatch.sinks.prometheus.measures`): every sink sends the same names
and labels, so a dashboard reads the same series whatever carried them (docs/exporters.md).

:func:`driftwatch.sinks.build.start_sinks` builds the sinks the ``exporters`` settings
enable.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Protocol

from driftwatch.sinks.comparison_snapshot import ComparisonSnapshot
from driftwatch.sinks.snapshot import AgentSnapshot

__all__ = ["Published", "Sink"]


@dataclass(frozen=True)
class Published:
    """What the agent publishes, each read by calling it (any thread, cheap: an attribute the
    loop replaces).

    Attributes:
        snapshot: the latest :class:`AgentSnapshot` (measures, join views, operations).
        comparisons: the latest snapshot of each champion/challenger comparison; None when
            the agent runs none (no comparison families at all).
        ready: whether the agent is ready (``/readyz``).
        not_ready_reasons: what keeps it not ready (``kafka: why``, ``checkpoint: why``).
    """

    snapshot: Callable[[], AgentSnapshot]
    comparisons: Callable[[], tuple[ComparisonSnapshot, ...]] | None
    ready: Callable[[], bool]
    not_ready_reasons: Callable[[], Iterable[str]]


class Sink(Protocol):
    """Somewhere the agent's :class:`Published` values go. Built from settings with the
    :class:`Published` it reads; the agent calls :meth:`start` once before its loop and
    :meth:`close` once after it (also on a failed start), on the loop's thread."""

    name: str
    """The ``exporters`` key that configures it (``prometheus``, ``otlp``), for logs."""

    def start(self) -> None:
        """Begin publishing: register with a server (pull) or start the export interval
        (push). Raises ``OSError`` or ``ValueError`` naming what failed."""

    def publish(self) -> None:
        """Send what is published now (a push sink exports once; a pull sink, which is read
        when scraped, does nothing). Never raises for a failed delivery: it logs it."""

    def close(self) -> None:
        """Stop publishing, a push sink after a last :meth:`publish`; idempotent."""
