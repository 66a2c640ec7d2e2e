"""The agent's runtime around the pure core: Kafka in, Prometheus and alarms out, checkpoints.

One module per concern: :mod:`~driftwatch.io.source` (the Kafka source, which commits only the
offsets it is given), :mod:`~driftwatch.io.offsets` (what it commits, where a partition
resumes), :mod:`~driftwatch.io.producers` (dead letters and alarms to Kafka),
:mod:`~driftwatch.io.decode` (records into events) with :mod:`~driftwatch.io.fastdecode` (its
fast path for plainly valid records) and :mod:`~driftwatch.io.decode_join` (records into the
join's predictions and labels), :mod:`~driftwatch.io.checkpoint` (state on disk),
:mod:`~driftwatch.io.checkpointer` (when to save, what is durable),
:mod:`~driftwatch.io.readiness` (``/readyz`` without flapping),
:mod:`~driftwatch.io.state_topic`, :mod:`~driftwatch.io.state_records`,
:mod:`~driftwatch.io.partition_states` and :mod:`~driftwatch.io.join_shards` (state in a
compacted Kafka topic, handed over per input partition), :mod:`~driftwatch.io.alarms` (the
alarm log), :mod:`~driftwatch.io.snapshot` (what the agent shows, as one value),
:mod:`~driftwatch.io.collector`, :mod:`~driftwatch.io.families`,
:mod:`~driftwatch.io.join_metrics` and :mod:`~driftwatch.io.comparisons` (metrics from that
snapshot), :mod:`~driftwatch.io.server` and :mod:`~driftwatch.io.connections` (the HTTP
server). Nothing here imports the tools built on it (the agent, replay, compare, the demo,
the commands).
"""
