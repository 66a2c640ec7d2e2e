"""Metric names kept one release after their rename, as copies of the new families.

0.2.0 renamed the families that export settings so that they read as what they are,
following the Prometheus naming conventions (a value a rule compares against is a
``…_threshold`` with its unit as the suffix; a switch is a 0/1 gauge named for what it
switches), and dropped the agent's own start time, which duplicated prometheus_client's
``process_start_time_seconds``:

=====================================  ===========================================
deprecated (removed in 0.3.0)          use
=====================================  ===========================================
``driftwatch_auc_floor``               ``driftwatch_auc_floor_threshold``
``driftwatch_auc_max_drop``            ``driftwatch_auc_max_drop_threshold``
``driftwatch_no_events_seconds``       ``driftwatch_no_events_threshold_seconds``
``driftwatch_batch_labels``            ``driftwatch_batch_labels_enabled``
``driftwatch_start_time_seconds``      ``process_start_time_seconds``
=====================================  ===========================================

Until 0.3.0 the old names are still exported (unless ``metrics.export_deprecated_metrics`` is
false), with a ``# HELP`` that starts "Deprecated: use <new> (removed in 0.3.0)", so that
rules and dashboards written for 0.1.0 keep working while they move.
:class:`~driftwatch.sinks.prometheus.families.Families` writes each sample of a new family
under the old name too: the same values from the same snapshot, nothing computed twice.

``process_start_time_seconds`` comes from prometheus_client's process collector, which reads
``/proc``: on Linux (the agent's container image) it is exported; elsewhere (macOS, Windows)
the process collector exports nothing, and after 0.3.0 there is no start time there (the
dashboard's uptime panel stays empty). The deprecated ``driftwatch_start_time_seconds``
keeps the agent's own clock reading until then.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

__all__ = ["DEPRECATED_NAMES", "REMOVED_IN", "START_TIME", "deprecated_help"]

REMOVED_IN = "0.3.0"
"""The release that stops exporting the deprecated names."""

DEPRECATED_NAMES: Mapping[str, str] = MappingProxyType({
    "driftwatch_auc_floor": "driftwatch_auc_floor_threshold",
    "driftwatch_auc_max_drop": "driftwatch_auc_max_drop_threshold",
    "driftwatch_no_events_seconds": "driftwatch_no_events_threshold_seconds",
    "driftwatch_batch_labels": "driftwatch_batch_labels_enabled",
})
"""Each deprecated gauge and the family whose samples it repeats."""

START_TIME = "driftwatch_start_time_seconds"
"""Deprecated in favour of ``process_start_time_seconds`` (prometheus_client's process
collector, Linux only); the exporter keeps filling it from the agent's snapshot until
:data:`REMOVED_IN`, as it always did."""


def deprecated_help(new: str, help_text: str) -> str:
    """The ``# HELP`` of a deprecated family: the replacement and the release it goes in
    first, so that a reader of ``/metrics`` or ``docs/metrics.md`` sees it at once."""
    return f"Deprecated: use {new} (removed in {REMOVED_IN}). {help_text}"
