"""``checkpoint``: saving the monitors' state across restarts, rollouts and rebalances."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field

from driftwatch.settings.common import Name, _Section


class CheckpointSettings(_Section):
    """Monitor state saved to a compacted Kafka topic (or a file), so that a restart, a
    rollout or a rebalance does not blind the monitors for a window.

    With ``backend: kafka`` (what ``auto`` picks, unless ``kafka.assignment`` is
    ``all_partitions`` with ``join``) the state lives where the input lives: one record per
    model (with its champion/challenger comparisons), keyed by the input partition its
    events come from, and with ``join`` one per input partition holding the predictions and
    labels pending there, in the compacted topic ``topic`` (default
    ``<kafka.group_id>-state``, created with ``cleanup.policy=compact`` when missing). The
    replica that is assigned an input partition restores that partition's models from the
    topic and resumes at the offset they cover; a replica that loses a partition saves it
    first (when it can) and stops exporting its models at once. No disk is needed, so Pods
    need neither a PersistentVolume nor the Recreate strategy. ``backend: file`` keeps the
    state in ``directory`` (one replica per directory), as ``replay`` does. Whole-stream
    sidecars (``kafka.assignment: all_partitions``) use the topic too: every replica of the
    model writes the same keys, each record a state with the offsets it covers, and a
    replica replaced with an empty disk restores the window from them.

    The checkpoint is the only resume point. It holds the monitors, the rejection counts and
    the offsets they cover, written atomically; offsets are committed to the consumer group
    right after each successful save, and exactly those, so a committed offset never passes
    what the disk holds. A partition the checkpoint does not cover (a first start, a new
    partition, one moved from another replica, or every partition when ``enabled`` is
    false) is read from where ``kafka.auto_offset_reset`` says, never from the group's
    commit: with the default (earliest) the monitors are rebuilt from the retained log.
    A save that fails is retried with backoff (1 s doubling to 60 s), counted, makes
    ``/readyz`` answer 503, and is never followed by a commit.

    ``interval_seconds`` (5 s) was chosen by measurement (benchmarks/checkpoint.py, 2-core
    machine): a save of 1 model (window 1000) takes about 16 ms (0.3 % of 5 s), of 100
    models 0.3-0.4 s (under 8 %), of 1000 models 2-4 s (28 MB). After a crash everything
    since the last save is read again: at most one interval of records, a few seconds of
    catch-up, and no event is lost or counted twice. So that saving never takes more than a
    tenth of the loop's time, the interval stretches to ten times the last save's duration
    when that is longer (1000 models: every 20-40 s).
    """

    backend: Literal["auto", "kafka", "file"] = Field(
        default="auto",
        description=(
            "Where the state is saved. kafka: the compacted topic checkpoint.topic, restored "
            "per input partition by whichever replica owns it (replicas hand over without "
            "losing a window). file: checkpoint.directory, one replica per directory. auto: "
            "kafka (whole-stream sidecars, kafka.assignment all_partitions, too: every "
            "replica writes its model's state to the topic, so a replaced replica restores "
            "it), or file for a whole-stream agent with join (several writers of the join's "
            "records would not be exact)."
        ),
    )
    topic: Name | None = Field(
        default=None,
        description=(
            "The state topic (backend kafka); default <kafka.group_id>-state, or with "
            "events.only_models <kafka.group_id>-state-<first 12 hex digits of the SHA-256 "
            "of the sorted model ids joined by newlines>, so that agents watching different "
            "models never mix their state (the agent logs the name). Created with "
            "cleanup.policy=compact when missing. An existing one must be compacted: with "
            "delete every restore reads every save of retention.ms and states older than "
            "that are dropped, so the agent refuses to start on it (exit 2); compact,delete "
            "is used with a warning; unchecked where the broker describes no topic "
            "configuration (Tansu)."
        ),
    )
    topic_partitions: int | None = Field(
        default=None,
        ge=1,
        le=10_000,
        description=(
            "Partitions of the state topic when the agent creates it. Input partition p's "
            "state is kept in state partition p mod n, so a restore reads only the state "
            "partitions of the partitions assigned: with n at least the input's partition "
            "count, one input partition's share, whatever the others hold. Unset (default): "
            "as many as the largest of kafka.topics has then (1, logged, with topic_pattern "
            "or when no input topic exists yet: every restore then reads all of it). An "
            "existing topic keeps its count; one holding records spread by key over several "
            "partitions (driftwatch before this layout) or written before partitions were "
            "added is refused (exit 2): name a new checkpoint.topic or delete it."
        ),
    )
    topic_replication_factor: int = Field(
        default=-1,
        ge=-1,
        le=100,
        description=(
            "Replication factor of the state topic when the agent creates it; -1 takes the "
            "broker's default.replication.factor (use 3 in production clusters). -1 needs "
            "Kafka 2.4+: on an older broker the agent refuses to start until it is set."
        ),
    )
    max_record_bytes: int = Field(
        default=512 * 1024,
        ge=1024,
        le=100 * 1024 * 1024,
        description=(
            "Largest record written to the state topic; a model whose state is bigger is "
            "split into chunks of this size (a model of window 1000 takes about 30 kB). Keep "
            "it below the broker's message.max.bytes (1 MiB by default)."
        ),
    )
    enabled: bool = Field(
        default=True,
        description=(
            "Save and restore the monitors' state. When false nothing is saved, the agent "
            "rebuilds its monitors from the log at every start (kafka.auto_offset_reset), "
            "and commits processed offsets every interval_seconds only so that the group's "
            "lag is visible to Kafka tools."
        ),
    )
    directory: Path = Field(
        default=Path("driftwatch-state"),
        description=(
            "Directory for the state files. Relative to the working directory by default, "
            "so a local run works without privileges; in Kubernetes point it at a "
            "persistent volume (the Helm chart does)."
        ),
    )
    interval_seconds: float = Field(
        default=5.0,
        ge=1,
        le=86_400,
        description=(
            "Save the state this often (and on shutdown), then commit the offsets it covers. "
            "After a crash the records since the last save are read again (nothing is lost "
            "or counted twice). Stretched to 10 x the last save's duration when that is "
            "longer, so saves take at most a tenth of the time. With the state topic a save "
            "writes only the models that took records since the last one, in slices across "
            "loop iterations: its duration here is the loop time its slices took, and the "
            "next is due this long after it is done."
        ),
    )
