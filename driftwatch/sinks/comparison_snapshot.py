"""What a scrape shows of one champion/challenger comparison, as an immutable value: the
agent's :class:`~driftwatch.agent.comparisons.Comparisons` builds it on its loop thread, the
sinks read it (:mod:`driftwatch.sinks.prometheus.comparison_collector`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class ComparisonSnapshot:
    """What a scrape shows of one comparison: counts and :meth:`PairedWindow.statistics`."""

    name: str
    model: str
    events: int
    unpaired: Mapping[str, int]
    statistics: Mapping[str, float] = field(default_factory=dict)
