"""Where the agent's records come from: the :class:`Source` protocol
(:mod:`~driftwatch.sources.protocol`), the sources by name, built-in and from plug-ins
(:mod:`~driftwatch.sources.registry`, settings ``source``), and the sources that need no
broker: :class:`MemorySource` (a list) and :mod:`~driftwatch.sources.jsonl` (a file or
standard input). The Kafka source is :mod:`driftwatch.kafka.source`."""

from driftwatch.sources.memory import MemorySource
from driftwatch.sources.protocol import (
    LocalSource,
    OnAssignedHook,
    Source,
    SourceContext,
    SourceRecord,
)
from driftwatch.sources.record import Record, TopicPartition

__all__ = ["LocalSource", "MemorySource", "OnAssignedHook", "Record", "Source", "SourceContext",
           "SourceRecord", "TopicPartition"]
