"""The Kafka client: what the agent says to its brokers and what it makes of their answers.

:mod:`~driftwatch.kafka.source` (the record source, which commits only the offsets it is
given), :mod:`~driftwatch.kafka.offsets` (what it commits, where a partition resumes),
:mod:`~driftwatch.kafka.producers` (dead letters and alarms to Kafka),
:mod:`~driftwatch.kafka.first_contact` and :mod:`~driftwatch.kafka.handshake` (the first
contact with the brokers, and what each way of failing it means),
:mod:`~driftwatch.kafka.broker_health` (reachable or not, since when) and
:mod:`~driftwatch.kafka.client_quirks` (work-arounds for the pinned kafka-python). The state
topic's own client code is in :mod:`driftwatch.state`.
"""
