"""What the agent publishes: one immutable snapshot (:mod:`~driftwatch.sinks.snapshot`) read by
the Prometheus exposition (:mod:`driftwatch.sinks.prometheus`), and the alarm log
(:mod:`~driftwatch.sinks.alarms`), whose records may also go to a Kafka topic
(:mod:`driftwatch.kafka.producers`).
"""
