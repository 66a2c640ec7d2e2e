"""Work-arounds for the pinned kafka-python (3.0.12), each with the behaviour it restores.

Kept in one place so that each can be dropped when the client fixes it, and tested where it
matters (against a real broker, tests/kafka/test_source_and_producers.py and
tests/state/test_topic*.py).
"""

from __future__ import annotations

from typing import Any

__all__ = ["finish_interrupted_joins", "never_create_topics"]


def never_create_topics(consumer: Any) -> Any:
    """Make ``consumer``'s metadata requests ask the broker not to create missing topics, and
    return it.

    A reader must never create what it reads: with ``auto.create.topics.enable`` (Apache
    Kafka's default), a metadata request naming a topic that does not exist yet (or is
    misspelt) creates it with the broker's defaults, so an agent started before its input
    topic would create it with the default partition count, and a restore before the first
    save would create the state topic uncompacted. kafka-python 3.0.12 accepts
    ``allow_auto_create_topics=False`` but does not pass it to the metadata it keeps (its
    ``ClusterMetadata`` is built without it), so the flag is set there. The client's
    bootstrap request asks for no topic, so setting it after construction misses nothing.
    """
    consumer._client.cluster.config["allow_auto_create_topics"] = False
    return consumer


def finish_interrupted_joins(consumer: Any) -> Any:
    """Make a rejoin of ``consumer``'s group that its poll's timeout interrupted finish at the
    next poll, and return the consumer.

    The group's leader rejoins by itself when the metadata of the subscribed topics changes
    (kafka-python compares the metadata its last assignment used with the current one). But
    kafka-python 3.0.12 keeps no flag for that rejoin: the comparison is all, and the leader
    updates its side when it computes the new assignment, before it sends SyncGroup. If the
    poll's timeout ends before the SyncGroup answer, the next poll sees nothing left to join
    and never collects it: the member applies no assignment and sends no heartbeat; it is
    evicted and never rejoins, never ready, and each poll returns at once (a core spent).
    On Apache Kafka every start takes that path once (the first assignment is computed
    before the topic's metadata arrives: an empty one, then the metadata rejoin), and with
    the tests' polls of 200 ms 2 of 17 agent starts hung (docs/brokers.md; the test:
    tests/kafka/test_source_and_producers.py).

    The fix is the Java client's: a rejoin, once seen to be needed, is requested (the flag
    that a completed join clears), so an interrupted one is awaited again at the next poll.
    """
    coordinator = consumer._coordinator
    needs_rejoin = coordinator.need_rejoin

    def need_rejoin() -> bool:
        if needs_rejoin():
            coordinator.rejoin_needed = True  # cleared once the join completes
            return True
        return False

    coordinator.need_rejoin = need_rejoin
    return consumer
