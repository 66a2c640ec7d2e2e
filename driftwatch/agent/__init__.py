"""The agent: its loop (:mod:`~driftwatch.agent.loop`) and what the loop uses.

:mod:`~driftwatch.agent.positions` (offsets per partition, where each resumes),
:mod:`~driftwatch.agent.rejections` (counts, dead letters),
:mod:`~driftwatch.agent.start` (what it opens, in which order),
:mod:`~driftwatch.agent.saved_state` (what it saves and restores),
:mod:`~driftwatch.agent.handover` (the state topic's partitions coming and going),
:mod:`~driftwatch.agent.publish` (the snapshot ``/metrics`` shows),
:mod:`~driftwatch.agent.checkpointer` (when to save, what is durable),
:mod:`~driftwatch.agent.readiness` (``/readyz`` without flapping),
:mod:`~driftwatch.agent.partition_states` and :mod:`~driftwatch.agent.join_shards` (the
state topic's bookkeeping per input partition) and :mod:`~driftwatch.agent.comparisons`
(champion and challenger). What the agent talks to lives beside it: :mod:`driftwatch.kafka`,
:mod:`driftwatch.sinks`, :mod:`driftwatch.state` and :mod:`driftwatch.decoding`.
"""

from driftwatch.agent.loop import Agent

__all__ = ["Agent"]
