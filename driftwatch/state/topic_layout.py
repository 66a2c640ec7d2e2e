"""The state topic's layout: where each partition's records go, and refusing any other layout.

**The mapping.** Every record whose home is input partition ``(topic, p)`` (its meta ``p``
record, its models' ``m`` records and their ``c`` chunks, its join shard's ``j`` record) is
written to state partition ``p mod n``, ``n`` being the state topic's partition count as the
brokers report it. So a restore of input partitions ``P`` reads only the state partitions
``{p mod n : p in P}``: with ``n`` at least the input's partition count, one input
partition's restore reads one state partition, whatever the other partitions hold. Input
partitions of different topics with the same number share one, as do a join shard's topics.

**Why the layout must be checked.** Compaction keeps the last record of a key within a
partition, never across partitions. A key written to two partitions (once under another
layout, once under this one) has two live values, and a reader of one partition sees only
one of them; a key written to a partition the mapping does not name is not seen at all by
the restore that needs it, which then resumes a partition with a model's state missing: not
exact. Two layouts other than this one's ``n`` exist: records spread by key hash (driftwatch
before the mapping, with ``checkpoint.topic_partitions`` above 1) and the mapping with
another ``n`` (an administrator added partitions, which Kafka allows and which moves
``p mod n``). With one partition every layout is the same, so a single-partition topic is
always valid.

Every record carries the header :data:`HEADER`: the ``n`` it was placed with. A topic is
refused (:func:`refusal`, naming ``checkpoint.topic``) when a record it holds says another
``n`` than the topic's, or says none while the topic has more than one partition:

- at each restore, from every record read. This is what keeps a restore exact: a save under
  this layout writes all of an input partition's records to one state partition, so the
  partitions read hold whole saves (or prefixes of them, which the argument in
  :mod:`driftwatch.state.topic` covers) unless a record of another layout is among them,
  and then the restore refuses. Another layout's records in partitions not read are never
  mixed into the restore; they can only hide a newer state, as a stale writer's can.
- at start, from the first record of every partition (records written before an upgrade or
  before partitions were added come first; compaction never reorders). This is what keeps
  saved state from being silently passed over: a topic spread by key or grown since holds
  an input partition's state outside the partition its restore reads, which would then
  resume it as never saved.

Migrating in place is not done (why:
docs/brokers.md#why-driftwatch-does-not-migrate-a-state-topic-in-place).
"""

from __future__ import annotations

from collections.abc import Sequence

from driftwatch.state.checkpoint import CheckpointSettingError

__all__ = ["HEADER", "header", "misplaced", "refusal", "state_partition", "written_with"]

HEADER = "driftwatch-state-partitions"
"""Record header: the state topic's partition count the record was placed with (ASCII)."""


def state_partition(input_partition: int, partitions: int) -> int:
    """The state partition holding input partition ``input_partition``'s records."""
    return input_partition % partitions


def header(partitions: int) -> list[tuple[str, bytes]]:
    """The headers of a record placed by the mapping with ``partitions`` state partitions."""
    return [(HEADER, str(partitions).encode("ascii"))]


def written_with(headers: Sequence[tuple[str, bytes | None]] | None) -> int | None:
    """The partition count a record says it was placed with; None when it says none (or
    something that is not a count, which no driftwatch writes)."""
    for name, value in headers or ():
        if name == HEADER and value is not None and value.isdigit():
            return int(value)
    return None


def misplaced(found: int | None, partitions: int) -> bool:
    """Whether a record placed with ``found`` partitions (None: no header) may be read from a
    topic of ``partitions``."""
    return found != partitions and not (found is None and partitions == 1)


def refusal(topic: str, partitions: int, found: int | None) -> CheckpointSettingError:
    """The error refusing a state topic of ``partitions`` holding a record placed with
    ``found`` partitions (None: spread by key), naming ``checkpoint.topic`` and the fix."""
    if found is None:
        why = ("holds records spread over its partitions by key (written by a driftwatch "
               "before state partition p mod n held input partition p's state)")
    else:
        why = (f"holds records placed when it had {found} partition(s) (partitions were "
               f"added since): input partition p's state is in state partition p mod {found}"
               f", where a restore now reads p mod {partitions}")
    return CheckpointSettingError(("checkpoint", "topic"),
        f"state topic {topic} has {partitions} partitions and {why}; a restore would miss "
        "saved states, so the topic is not used. Name a new checkpoint.topic (its first "
        "start rebuilds the monitors from the retained log, as kafka.auto_offset_reset "
        f"says) or delete {topic} so that the agent creates it again")
