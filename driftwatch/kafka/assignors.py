"""The group's partition assignors by name (``kafka.assignment_strategy``), and what a
rebalance tells the source under each.

Two rebalance protocols (KIP-429, "Kafka Consumer Incremental Rebalance Protocol"), as
kafka-python 3.0.12 implements them and as measured on Apache Kafka 4.4 and Tansu 0.6
(eight partitions; a second member joins, later leaves by closing, a third joins and is
SIGKILLed; docs/brokers.md has the numbers):

- **Eager** (``range``, ``roundrobin``): before every JoinGroup each member is revoked *all*
  its partitions (``on_partitions_revoked`` with the whole assignment), and after SyncGroup
  assigned its whole new assignment, kept partitions included: the agent saves, drops and
  restores every partition at every rebalance.
- **Cooperative** (``cooperative-sticky``): a member keeps its partitions across the
  JoinGroup. After SyncGroup the client compares what it owns with what it was given: only
  the difference is revoked (``on_partitions_revoked``) and only the new partitions are
  assigned (``on_partitions_assigned``); a member that gave some up rejoins at once (the
  second round) so that the new owner gets them, never while the old one still holds them.
  Kept partitions keep their position and their paused flag. A member evicted (session
  timeout) owns nothing the others must wait for: its partitions are assigned to the
  survivors in one round. ``on_partitions_lost`` comes only to a member that finds itself
  evicted, as with eager.

A group's members must agree on the protocol: a member whose assignors share none with the
group's is refused at JoinGroup (``InconsistentGroupProtocolError``, both brokers) until the
last member of the other kind has left, and kafka-python refuses to mix an eager and a
cooperative assignor in one consumer, so KIP-429's two rolling bounces are not available
(docs/running.md, changing the assignment strategy).
"""

from __future__ import annotations

from typing import Any, Literal

from kafka.coordinator.assignors.cooperative_sticky import (  # type: ignore[import-untyped]
    CooperativeStickyAssignor,
)
from kafka.coordinator.assignors.range import (  # type: ignore[import-untyped]
    RangePartitionAssignor,
)
from kafka.coordinator.assignors.roundrobin import (  # type: ignore[import-untyped]
    RoundRobinPartitionAssignor,
)

__all__ = ["AssignmentStrategy", "assignors"]

AssignmentStrategy = Literal["cooperative-sticky", "range", "roundrobin"]

_ASSIGNORS: dict[str, Any] = {
    "cooperative-sticky": CooperativeStickyAssignor,
    "range": RangePartitionAssignor,
    "roundrobin": RoundRobinPartitionAssignor,
}


def assignors(strategy: AssignmentStrategy) -> list[Any]:
    """kafka-python's ``partition_assignment_strategy`` for ``strategy``: its one assignor
    (one only: every member then offers exactly the group's protocol)."""
    return [_ASSIGNORS[strategy]]

