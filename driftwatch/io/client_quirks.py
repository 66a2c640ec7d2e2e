"""Work-arounds for the pinned kafka-python (3.0.12), each with the behaviour it restores.

Kept in one place so that each can be dropped when the client fixes it, and tested where it
matters (against a real broker, tests/io/test_kafka.py and tests/io/test_state_topic*.py).
"""

from __future__ import annotations

from typing import Any

__all__ = ["never_create_topics"]


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
