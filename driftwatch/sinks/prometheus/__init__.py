"""The Prometheus exposition: :mod:`~driftwatch.sinks.prometheus.server` and
:mod:`~driftwatch.sinks.prometheus.connections` (the HTTP server), the collectors that
render the agent's snapshot: :mod:`~driftwatch.sinks.prometheus.collector` with
:mod:`~driftwatch.sinks.prometheus.families` and
:mod:`~driftwatch.sinks.prometheus.budget_families`,
:mod:`~driftwatch.sinks.prometheus.join_collector` (delayed labels, label-free signals) and
:mod:`~driftwatch.sinks.prometheus.comparison_collector` (champion and challenger), gathered
for every sink by :mod:`~driftwatch.sinks.prometheus.measures`, and the sink that registers
them with the server (:mod:`~driftwatch.sinks.prometheus.sink`).
"""
