"""What the agent publishes: immutable snapshots (:mod:`~driftwatch.sinks.snapshot`, and
:mod:`~driftwatch.sinks.comparison_snapshot` per comparison) read by the Prometheus
exposition (:mod:`driftwatch.sinks.prometheus`), and the alarm log
(:mod:`~driftwatch.sinks.alarms`), whose records may also go to a Kafka topic
(:mod:`driftwatch.kafka.producers`).
"""
