"""The source's assignment bookkeeping under incremental rebalances (KIP-429): a revoke names
only the partitions leaving, and the kept ones keep what the source knows of them. The
same on real brokers: tests/integration/test_handover.py."""

from __future__ import annotations

from driftwatch.kafka.offsets import Offsets, TopicPartition


def test_a_partial_revoke_keeps_the_kept_partitions_commits_and_lag() -> None:
    told: list[tuple[set[TopicPartition], bool]] = []
    offsets = Offsets(on_assigned=None, on_revoked=lambda tps, lost: told.append((tps, lost)),
                      ignore_committed=False, auto_offset_reset="earliest",
                      request_timeout_s=1.0)
    every = [TopicPartition("t", p) for p in range(4)]
    offsets.assign(None, every)  # no hook, nothing held: the consumer is not touched
    offsets.record_commit({tp: 5 + tp.partition for tp in every})
    offsets.lag = {("t", p): 10 * p for p in range(4)}

    offsets.revoke(every[2:], lost=False)

    assert told == [(set(every[2:]), False)]
    assert offsets.assigned == frozenset(every[:2])
    assert offsets.committed == {every[0]: 5, every[1]: 6}
    assert offsets.lag == {("t", 0): 0, ("t", 1): 10}, "the new owner reports the others' lag"
    assert offsets.to_commit({tp: 9 for tp in every}) == {every[0]: 9, every[1]: 9}

    offsets.assign(None, every[2:3])  # a later round adds one: the kept ones are untouched
    assert offsets.assigned == frozenset(every[:3])
    assert offsets.committed == {every[0]: 5, every[1]: 6}
    offsets.revoke(every[:3], lost=True)
    assert offsets.assigned == frozenset() and offsets.lag == {}
    assert told[-1] == (set(every[:3]), True)
