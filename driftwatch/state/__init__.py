"""Saved state: checkpoints in a file (:mod:`~driftwatch.state.checkpoint`, which also holds
the encoding and the errors both backends share), or in a compacted Kafka topic
(:mod:`~driftwatch.state.topic`, its records :mod:`~driftwatch.state.topic_records` and its
cleanup policy :mod:`~driftwatch.state.topic_policy`). When to save is the agent's
(:mod:`driftwatch.agent.checkpointer`).
"""
