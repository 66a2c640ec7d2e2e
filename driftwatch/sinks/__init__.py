"""What the agent publishes and where it goes: immutable snapshots
(:mod:`~driftwatch.sinks.snapshot`, and :mod:`~driftwatch.sinks.comparison_snapshot` per
comparison) read by the sinks through :class:`~driftwatch.sinks.sink.Published`
(:mod:`~driftwatch.sinks.sink`: the :class:`~driftwatch.sinks.sink.Sink` protocol). The sinks:
the Prometheus exposition (:mod:`driftwatch.sinks.prometheus`, pulled) and OpenTelemetry
metrics over OTLP (:mod:`driftwatch.sinks.otlp`, pushed; the ``otlp`` extra), started by
:func:`~driftwatch.sinks.build.start_sinks` as the ``exporters`` settings say. Alarm records
go to the alarm log (:mod:`~driftwatch.sinks.alarms`), and from it to a Kafka topic
(:mod:`driftwatch.kafka.producers`).
"""
