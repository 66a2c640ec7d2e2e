"""The agent's runtime around the pure core: Kafka in, Prometheus and alarms out, checkpoints.

One module per concern: :mod:`~driftwatch.io.source` (the Kafka source, which commits only the
offsets it is given), :mod:`~driftwatch.io.producers` (dead letters and alarms to Kafka),
:mod:`~driftwatch.io.decode` (records into events), :mod:`~driftwatch.io.checkpoint` (state on
disk), :mod:`~driftwatch.io.state_topic`, :mod:`~driftwatch.io.state_records`,
:mod:`~driftwatch.io.partition_states` and :mod:`~driftwatch.io.join_shards` (state in a
compacted Kafka topic, handed over per input partition), :mod:`~driftwatch.io.alarms` (the
alarm log), :mod:`~driftwatch.io.collector`,
:mod:`~driftwatch.io.join_metrics` and :mod:`~driftwatch.io.comparisons` (metrics from the
agent's snapshot), :mod:`~driftwatch.io.server` and :mod:`~driftwatch.io.connections` (the
HTTP server). Nothing here imports the tools built on it (the agent, replay, compare, the
demo, the commands).
"""
