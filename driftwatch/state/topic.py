"""The monitors' state in a compacted Kafka topic, restored by whoever owns an input partition.

State lives where the input lives. When a replica dies, a Pod is replaced or the group
rebalances, the new owner of an input partition reads that partition's monitors from the
state topic and resumes at the matching offset, as a Kafka Streams task restores its store
from its changelog; no window is lost and nothing needs a disk.

Records (key and value are JSON; the key's first element says what the record is):

- ``["p", topic, partition]`` → ``{"offset": next_offset, "rejected": {reason: count},
  "skipped": count}``: the input partition's *meta* record: the first offset not reflected
  in the saved state, and the rejection counts and the count of other models' records
  skipped (``events.only_models``) among the partition's records below it.
- ``["m", topic, partition, model]`` → ``{"covers": {"topic:partition": next_offset, ...},
  "state": Monitor.export_state()}``: one model's monitor, stored under its *home*
  partition (the one its first event came from), with, per input partition it took events
  from, the first offset its state does not reflect. A state larger than ``max_record_bytes``
  is cut into ``["c", topic, partition, model, save, i]`` chunk records and the ``m`` record
  says ``{"covers": ..., "save": save, "chunks": n}``; the chunks of the save before are
  deleted (tombstones) once the new ``m`` record is written, so compaction keeps the topic at
  about one copy of the state. The model's champion/challenger comparisons ride along
  (``"comparisons": {name: state}``): they take exactly the records its monitor takes.
- ``["j", topic, partition, ""]`` → ``{"covers": ..., "state": DelayedLabels.export_state()}``
  (or chunks, as for a model): with ``join``, one join *shard*'s pending predictions and
  labels, watermarks, recently joined ids, label-free watches and counts, stored under the
  shard's first partition (:mod:`driftwatch.agent.join_shards`), with the offsets it covers.

One record per model (or per chunk) keeps every record under the broker's message size limit
whatever the number of models, and lets a new owner read only what it needs to restore.

**Why a restore is exact without transactions** (in full:
docs/state.md#the-argument-for-exactness). Every record of input partition ``(topic, p)`` goes
to state partition ``p mod n`` (``n`` in the header; :mod:`driftwatch.state.topic_layout`). A
save writes the model records, then (once they are acknowledged, acks=all) the join records,
then (once those are) the meta records, and only then commits offsets. Every ``m`` record is a
consistent pair (a state and the offsets it covers), so a restore resumes each partition at
the *smallest* offset any of its records covers and each model skips the records below its
own; a partition without a meta record restores nothing. Whole-stream sidecars writing the
same keys are exact for the same reason, but not with ``join`` (they keep the file). A load
keeps the last record per key.

**Changed-only saves** (docs/state.md#changed-only-saves). A save writes only the models that
moved since its writer's last successful one; records and metas name their ``"writer"`` (one
owner while its partitions stay the same). A meta's offsets are those of the save's snapshot,
where it chose what moved, and it is written last: a model it left out took nothing from
its writer's record's covers up to them. So a record's cover is lifted to the meta's offset
when the meta's writer wrote it (:func:`resumes_from`, the one place of that rule), and a
quiet model does not hold its partition's resume point back. A save may be sent in slices
across the loop's iterations (:class:`SaveRound`): each model's record is still a
consistent pair, taken when it is exported.
"""

from __future__ import annotations

import logging
import math
import time
import uuid
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, NoReturn

import kafka.errors as kafka_errors  # type: ignore[import-untyped]
from kafka import KafkaConsumer, KafkaProducer  # type: ignore[import-untyped, unused-ignore]
from kafka import TopicPartition as _KafkaTopicPartition
from kafka.admin import KafkaAdminClient  # type: ignore[import-untyped]
from kafka.errors import KafkaError  # type: ignore[unused-ignore]

from driftwatch.kafka.client_quirks import never_create_topics  # a restore creates no topic
from driftwatch.kafka.first_contact import state_topic_refused
from driftwatch.state.checkpoint import CheckpointError, decode_offsets, encode_offsets
from driftwatch.state.topic_layout import header, misplaced, refusal, state_partition, written_with
from driftwatch.state.topic_policy import TOPIC_CONFIG, create_or_check
from driftwatch.state.topic_records import dumps as _dumps
from driftwatch.state.topic_records import key as _key
from driftwatch.state.topic_records import loads as _loads
from driftwatch.state.topic_records import parse_key as _parse_key

__all__ = ["TOPIC_CONFIG", "Restored", "StateRead", "StateSaveError", "StateTopicStore",
           "StateTopicUnavailable", "resumes_from"]

log = logging.getLogger(__name__)

TopicPartition = tuple[str, int]  # (topic, partition); the agent's NamedTuple is one

_PRODUCER_OVERHEAD = 64 * 1024
"""Room above ``max_record_bytes`` in the producer's request size for the key and headers."""


class StateSaveError(OSError):
    """A save to the state topic failed (broker unreachable, a record refused, a timeout).
    An ``OSError``, as a failed file save is: retried with backoff, counted, nothing committed
    meanwhile."""


class StateTopicUnavailable(OSError):
    """The state topic could not be read to its end (broker unreachable, a fetch failing or
    no data for ``request_timeout_s``): nothing was restored. An ``OSError``, unlike the
    :class:`~driftwatch.state.checkpoint.CheckpointError` of a state that cannot be used: the
    agent stops with a failure and is restarted, rather than refusing its state."""


@dataclass(frozen=True, slots=True)
class Restored:
    """What the state topic holds for a set of input partitions.

    Attributes:
        offsets: per restored partition, where to resume: the smallest offset its meta
            record or any restored model covers. Partitions without a meta record are absent.
        monitors: model → monitor state, for the models whose home is a restored partition.
        covers: model → {partition: first offset its state does not reflect}.
        homes: model → its home partition.
        rejected_below: per restored partition, the meta's offset: rejections below it are
            already in ``rejected``.
        rejected: per restored partition, the saved rejection counts.
        skipped: per restored partition, the saved count of other models' records skipped.
        split: models stored under a partition not being restored whose state covers one
            that is: their events on these partitions go to a new, partial monitor.
        joins: per restored shard (its first input partition), the join's state
            (:class:`~driftwatch.agent.join_shards.JoinShards`).
        join_covers: per restored shard, {partition: first offset its join lacks}.
        comparisons: the comparisons' states (by name) saved with the restored models.
    """

    offsets: dict[TopicPartition, int] = field(default_factory=dict)
    monitors: dict[str, dict[str, Any]] = field(default_factory=dict)
    covers: dict[str, dict[TopicPartition, int]] = field(default_factory=dict)
    homes: dict[str, TopicPartition] = field(default_factory=dict)
    rejected_below: dict[TopicPartition, int] = field(default_factory=dict)
    rejected: dict[TopicPartition, dict[str, int]] = field(default_factory=dict)
    split: frozenset[str] = frozenset()
    joins: dict[TopicPartition, dict[str, Any]] = field(default_factory=dict)
    join_covers: dict[TopicPartition, dict[TopicPartition, int]] = field(default_factory=dict)
    comparisons: dict[str, dict[str, Any]] = field(default_factory=dict)
    skipped: dict[TopicPartition, int] = field(default_factory=dict)


def resumes_from(covers: Mapping[TopicPartition, int], writer: object,
                 metas: Mapping[TopicPartition, tuple[int, object]]
                 ) -> dict[TopicPartition, int]:
    """A record's *effective* covers: per partition, the first offset its state does not
    reflect, given ``covers`` (what the record says), ``writer`` (the record's ``"writer"``:
    one owner while its partitions stay the same, :attr:`~driftwatch.agent.partition_states.
    PartitionStates.writer`) and ``metas`` (per partition, its meta record's offset and
    writer).

    A save writes only the models that moved since its writer's last successful save, and
    its meta records only once every record of it is acknowledged, at the offsets where it
    decided what moved. A model it left out took no record of any partition from the offsets
    its writer's record covers up to the meta's. So where the meta's writer wrote the
    record, the record holds the model's state at the meta's offset too: its cover is lifted
    to the meta's, and a model that went quiet does not hold the partition's resume point
    back. A record of another writer (an earlier epoch, a former owner, a zombie, a
    whole-stream sibling) or of none keeps its own covers, as every record did before
    changed-only saves. The proof: docs/state.md#changed-only-saves.
    """
    lifted = dict(covers)
    if writer is None:
        return lifted
    for tp, offset in covers.items():
        meta = metas.get(tp)
        if meta is not None and meta[1] == writer and meta[0] > offset:
            lifted[tp] = meta[0]
    return lifted


@dataclass(slots=True)
class Parsed:
    """The records of a restore, parsed (:meth:`StateTopicStore._parse_record`), by kind."""

    metas: dict[TopicPartition, dict[str, Any]] = field(default_factory=dict)
    heads: dict[tuple[TopicPartition, str], dict[str, Any]] = field(default_factory=dict)
    join_heads: dict[TopicPartition, dict[str, Any]] = field(default_factory=dict)
    chunks: dict[tuple[TopicPartition, str, str, int], bytes] = field(default_factory=dict)


class StateTopicStore:
    """Saves the monitors of owned input partitions to a compacted topic; restores them.

    Parameters:
        client_config: connection and security options for kafka-python clients (bootstrap
            servers, SASL, TLS), as the agent's producers get them.
        topic: the state topic; created with ``cleanup.policy=compact`` by
            :meth:`ensure_topic` when missing.
        partitions: the state topic's partition count when it is created; None: as many as
            the largest of ``input_topics`` has then (1 when none is known). Input partition
            ``p``'s records go to state partition ``p mod n``, ``n`` the count the topic
            has (:mod:`driftwatch.state.topic_layout`), and a restore reads only the state
            partitions of the input partitions it restores: with ``n`` at least the input's
            partition count, one input partition's share.
        input_topics: the input topics, asked for their partition counts when ``partitions``
            is None and the topic is created.
        replication_factor: the topic's replication factor when it is created; -1 leaves it to
            the broker's ``default.replication.factor``.
        max_record_bytes: largest record value written; a bigger model state is chunked. Keep
            it below the broker's ``message.max.bytes`` (1 MiB by default).
        request_timeout_s: bound on each blocking step (create, flush, a restore's fetches
            waiting for data).

    A save (:meth:`save`, or a :class:`SaveRound` sent in slices) is: the records of the
    models given, then the joins', then every partition's meta record, each group sent once
    the one before is acknowledged (acks=all); :class:`StateSaveError` when anything was not
    acknowledged. See the module docstring for why that is exact without transactions.
    """

    def __init__(self, client_config: Mapping[str, Any], topic: str, *,
                 partitions: int | None = 1, input_topics: Collection[str] = (),
                 replication_factor: int = -1, max_record_bytes: int = 512 * 1024,
                 request_timeout_s: float = 5.0) -> None:
        if not topic:
            raise ValueError("topic must be a non-empty topic name")
        if max_record_bytes < 1024:
            raise ValueError(f"max_record_bytes must be >= 1024, got {max_record_bytes}")
        self.client_config = dict(client_config)
        self.topic = topic
        self.partitions = partitions
        self.input_topics = tuple(input_topics)
        self.replication_factor = replication_factor
        self.max_record_bytes = max_record_bytes
        self.request_timeout_s = request_timeout_s
        self._producer: Any = None
        self._chunk_saves: dict[tuple[TopicPartition, str], tuple[str, int]] = {}
        """(home, model) → (save id, chunk count) of the chunks last written, to delete them
        when they are replaced."""
        self._topic_ready = False
        self._state_partitions: int | None = None
        """The topic's partition count, once its layout was checked (the ``n`` of
        ``p mod n``)."""
        self.last_save_bytes = 0
        """Bytes of record values (and keys) the last save wrote."""
        self.last_save_records = 0
        self.last_load_bytes = 0
        """Bytes of record keys and values the last :meth:`load` read (superseded records and
        tombstones included: what the broker sent)."""
        self.last_load_records = 0
        """Records the last :meth:`load` read."""
        self.last_load_partitions: frozenset[int] = frozenset()
        """The state partitions the last :meth:`load` read."""

    # -- topic ------------------------------------------------------------------------------

    def ensure_topic(self) -> bool:
        """Create the topic (compacted) when it is missing; True when this call created it.
        One that exists needs no CREATE permission, and is refused when not compacted
        (:func:`~driftwatch.state.topic_policy.create_or_check`, which says what raises) or
        when its records are not where this layout puts them (the first record of each
        partition is checked: :mod:`driftwatch.state.topic_layout`).

        Raises:
            StateSaveError: the broker could not be asked or refused the topic.
            CheckpointSettingError: the topic is not compacted, or holds records of another
                layout (``key`` is ``checkpoint.topic``).
        """
        timeout_ms = int(self.request_timeout_s * 1000)
        try:
            admin = KafkaAdminClient(**self.client_config, request_timeout_ms=timeout_ms,
                                     bootstrap_timeout_ms=timeout_ms)
        except KafkaError as error:
            raise StateSaveError(f"state topic {self.topic}: cannot reach the broker: "
                                 f"{error}") from error
        try:
            largest = None if self.partitions is not None else self._largest_input(admin)
            partitions = self.partitions or largest or 1
            created = create_or_check(admin, self.topic, partitions=partitions,
                                      replication_factor=self.replication_factor,
                                      timeout_ms=timeout_ms)
        except KafkaError as error:
            raise StateSaveError(f"cannot create state topic {self.topic} "
                                 f"(cleanup.policy=compact): {error}") from error
        finally:
            admin.close()
        try:
            consumer = self._consumer()
        except StateTopicUnavailable as error:
            raise StateSaveError(str(error)) from error
        try:  # Apache Kafka answers CreateTopics before its metadata shows the topic
            deadline = time.monotonic() + self.request_timeout_s
            while not (partitions := self._layout(consumer)) and time.monotonic() < deadline:
                time.sleep(0.1)
        except StateTopicUnavailable as error:
            raise StateSaveError(str(error)) from error
        except KafkaError as error:
            raise StateSaveError(f"state topic {self.topic}: checking its layout failed: "
                                 f"{error}") from error
        finally:
            consumer.close()
        if not partitions:
            raise StateSaveError(f"state topic {self.topic}: the brokers know no partitions "
                                 "of it yet")
        self._topic_ready = True
        if created:
            log.info("created state topic %s (%d partition(s), cleanup.policy=compact)",
                     self.topic, partitions)
        if created and self.partitions is None and largest is None:
            log.warning("state topic %s: no input topic known to size it by (%s); created "
                        "with 1 partition, so every restore reads all of it: set "
                        "checkpoint.topic_partitions to the input's partition count",
                        self.topic, ", ".join(self.input_topics) or "none named")
        return created

    def _largest_input(self, admin: Any) -> int | None:
        """The largest partition count among ``input_topics``; None when none exists (or
        none is named: a ``topic_pattern``)."""
        described = admin.describe_topics(list(self.input_topics)) if self.input_topics else []
        return max((len(topic["partitions"]) for topic in described
                    if topic.get("error_code") == 0), default=None)

    # -- save -------------------------------------------------------------------------------

    def save(self, payload: Mapping[str, Any]) -> None:
        """Write one save and wait for it: ``payload`` is what
        :meth:`~driftwatch.agent.partition_states.PartitionStates.payload` builds (a
        :class:`SaveRound` sent at once and waited for).

        Raises:
            StateSaveError: a record was not acknowledged by all in-sync replicas within
                ``request_timeout_s``; what was written is consistent (module docstring).
            BrokerRefused: the brokers refuse the agent's principal WRITE (or CREATE) on the
                topic: retrying cannot help.
        """
        saving = self.round(payload)
        saving.send_models(payload)
        saving.wait()

    def round(self, payload: Mapping[str, Any]) -> SaveRound:
        """Begin a save whose joins and metas are ``payload``'s (its snapshot); its models
        follow in any number of :meth:`SaveRound.send_models` calls.

        Raises: as :meth:`save`.
        """
        if not self._topic_ready:
            self.ensure_topic()
        producer = self._connect()
        partitions = self._state_partitions
        assert partitions is not None  # the topic is ensured
        try:
            known = len(producer.partitions_for(self.topic) or ())
        except kafka_errors.AuthorizationError as error:
            raise state_topic_refused(self.topic, "WRITE", error) from error
        except KafkaError as error:
            raise StateSaveError(f"saving to state topic {self.topic}: "
                                 f"{type(error).__name__}: {error}") from error
        if known != partitions:  # an administrator added partitions since the check
            raise refusal(self.topic, known, partitions)
        return SaveRound(self, producer, partitions, payload)

    def _saved(self, homes: Collection[tuple[TopicPartition, str]],
               chunked: Mapping[tuple[TopicPartition, str], tuple[str, int]],
               written: int, records: int) -> None:
        """A round succeeded: the chunks it replaced are gone, its own are the ones to
        delete next time."""
        for home in homes:
            self._chunk_saves.pop(home, None)
        self._chunk_saves.update(chunked)
        self.last_save_bytes, self.last_save_records = written, records

    def _records(self, payload: Mapping[str, Any],
                 chunked: dict[tuple[TopicPartition, str], tuple[str, int]]
                 ) -> Iterator[tuple[int, bytes, bytes | None]]:
        """The save's records, in order, each with its home input partition's number (which
        places it); ``chunked`` gets the chunks written per model."""
        # Models first, then the joins, metas last: a join's record is written only after
        # the models its pairs went to, a meta only after the states it vouches for.
        writer = payload.get("writer")
        entries = [("m", saved["home"], model, saved)
                   for model, saved in payload.get("models", {}).items()]
        entries += [("j", saved["home"], "", saved)
                    for saved in payload.get("joins", ())]
        for kind, (home_topic, home_partition), name, saved in entries:
            home: TopicPartition = (home_topic, home_partition)
            document = {"covers": encode_offsets(dict(saved["covers"])),
                        "writer": writer, "state": saved["state"]}
            if saved.get("comparisons"):
                document["comparisons"] = saved["comparisons"]
            value = _dumps(document)
            if len(value) <= self.max_record_bytes:
                yield home_partition, _key(kind, *home, name), value
            else:
                save = uuid.uuid4().hex[:12]
                pieces = [value[i:i + self.max_record_bytes]
                          for i in range(0, len(value), self.max_record_bytes)]
                for index, piece in enumerate(pieces):
                    yield home_partition, _key("c", *home, name, save, index), piece
                yield home_partition, _key(kind, *home, name), _dumps({
                    "covers": encode_offsets(dict(saved["covers"])), "writer": writer,
                    "save": save, "chunks": len(pieces)})
                chunked[(home, name)] = (save, len(pieces))
            # The chunks this record replaces are deleted after it (tombstones).
            previous = self._chunk_saves.get((home, name))
            if previous is not None:
                old_save, count = previous
                for index in range(count):
                    yield home_partition, _key("c", *home, name, old_save, index), None
        for tp, meta in payload.get("partitions", ()):
            yield tp[1], _key("p", *tp), _dumps({"offset": meta["offset"],
                                         "rejected": meta["rejected"],
                                         "skipped": meta.get("skipped", 0),
                                         "writer": writer})

    def _connect(self) -> Any:
        if self._producer is None:
            timeout_ms = int(self.request_timeout_s * 1000)
            try:
                self._producer = KafkaProducer(
                    **self.client_config, acks="all", linger_ms=5,
                    max_request_size=self.max_record_bytes + _PRODUCER_OVERHEAD,
                    max_block_ms=timeout_ms, bootstrap_timeout_ms=timeout_ms,
                    request_timeout_ms=timeout_ms)
            except KafkaError as error:
                raise StateSaveError(f"state topic {self.topic}: cannot create a producer: "
                                     f"{error}") from error
        return self._producer

    def close(self) -> None:
        """Close the producer (bounded by ``request_timeout_s``)."""
        producer, self._producer = self._producer, None
        if producer is not None:
            try:
                producer.close(timeout=self.request_timeout_s)
            except KafkaError as error:
                log.warning("closing the state topic producer: %s", error)

    # -- restore ----------------------------------------------------------------------------

    def load(self, partitions: Collection[TopicPartition]) -> Restored:
        """Read the state partitions of ``partitions`` (``p mod n``) to their end and
        return what they hold for ``partitions``: :meth:`restoring` run to its end in one go.

        Raises:
            StateTopicUnavailable: the topic cannot be read to its end (broker trouble).
            CheckpointError: a record is not one the agent writes, is not in the partition
                its home maps to, or a model's chunks are missing. Nothing is half-loaded.
            CheckpointSettingError: the topic holds records of another layout
                (:mod:`driftwatch.state.topic_layout`; ``key`` is ``checkpoint.topic``).
        """
        reading = self.restoring(partitions)
        try:
            while not reading.step(math.inf):
                pass
        finally:
            reading.close()
        assert reading.result is not None
        return reading.result

    def restoring(self, partitions: Collection[TopicPartition]) -> StateRead:
        """An incremental :meth:`load` of ``partitions``: :meth:`StateRead.step` does at most
        about a given time of work (a poll of the state partitions, or parsing some records),
        so an agent restores between its polls instead of inside the rebalance. Close it."""
        return StateRead(self, partitions)

    def _parse_record(self, raw_key: bytes, partition: int, value: bytes,
                      parsed: Parsed) -> None:
        """Parse one record (the last value of its key) into ``parsed``: the one place a
        record's key and value are read."""
        key = _parse_key(raw_key, self.topic)
        kind, tp = key[0], (key[1], key[2])
        if self._state_partitions is not None \
                and state_partition(tp[1], self._state_partitions) != partition:
            raise CheckpointError(f"state topic {self.topic}: record {raw_key[:100]!r} is "
                                  f"in partition {partition}, not in {tp[1]} mod "
                                  f"{self._state_partitions}: it was not written by the "
                                  "agent's save")
        if kind == "c":
            parsed.chunks[(tp, key[3], key[4], key[5])] = value
            return
        document = _loads(value, self.topic, raw_key)
        if kind == "p":
            parsed.metas[tp] = document
        elif kind == "j":
            parsed.join_heads[tp] = document
        else:
            parsed.heads[(tp, key[3])] = document

    def _assemble(self, wanted: set[TopicPartition], parsed: Parsed) -> Restored:
        """What the parsed records hold for the ``wanted`` input partitions."""
        metas, heads = parsed.metas, parsed.heads
        join_heads, chunks = parsed.join_heads, parsed.chunks
        restored = Restored()
        split = set()
        lifts: dict[TopicPartition, tuple[int, object]] = {}
        for tp in wanted & metas.keys():
            meta = metas[tp]
            offset, rejected = meta.get("offset"), meta.get("rejected", {})
            skipped = meta.get("skipped", 0)
            if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0 \
                    or not isinstance(rejected, dict) or isinstance(skipped, bool) \
                    or not isinstance(skipped, int) or skipped < 0:
                raise CheckpointError(f"state topic {self.topic}: the record of {tp[0]}"
                                      f"[{tp[1]}] is malformed")
            restored.offsets[tp] = offset
            lifts[tp] = (offset, meta.get("writer"))
            restored.rejected_below[tp] = offset
            restored.rejected[tp] = {str(r): int(c) for r, c in rejected.items()}
            restored.skipped[tp] = skipped
        chosen: dict[str, tuple[TopicPartition, dict[str, Any], dict[TopicPartition, int]]] = {}
        for (home, model), head in heads.items():
            covers = resumes_from(self._covers(head, f"model {model!r}"), head.get("writer"),
                                  lifts)
            if home not in restored.offsets:
                if any(tp in restored.offsets for tp in covers):
                    split.add(model)
                continue
            if model not in chosen or sum(covers.values()) > sum(chosen[model][2].values()):
                chosen[model] = (home, head, covers)
        for model, (home, head, covers) in chosen.items():
            document = self._document(home, model, head, chunks)
            restored.monitors[model] = document["state"]
            compared = document.get("comparisons", {})
            if not isinstance(compared, dict):
                raise CheckpointError(f"state topic {self.topic}: model {model!r}: its "
                                      "comparisons must be an object")
            restored.comparisons.update(compared)
            restored.covers[model] = covers
            restored.homes[model] = home
            for tp, offset in covers.items():
                if tp in restored.offsets:
                    restored.offsets[tp] = min(restored.offsets[tp], offset)
            if "save" in head:
                self._chunk_saves[(home, model)] = (str(head["save"]), int(head["chunks"]))
        for home, head in join_heads.items():
            covers = resumes_from(self._covers(head, f"the join of {home[0]}[{home[1]}]"),
                                  head.get("writer"), lifts)
            if not any(tp in restored.offsets for tp in covers):
                continue  # its partitions' first save was cut short: nothing to resume
            restored.joins[home] = self._document(home, "", head, chunks)["state"]
            restored.join_covers[home] = covers
            for tp, offset in covers.items():
                if tp in restored.offsets:
                    restored.offsets[tp] = min(restored.offsets[tp], offset)
            if "save" in head:
                self._chunk_saves[(home, "")] = (str(head["save"]), int(head["chunks"]))
        return Restored(restored.offsets, restored.monitors, restored.covers, restored.homes,
                        restored.rejected_below, restored.rejected, frozenset(split),
                        restored.joins, restored.join_covers, restored.comparisons,
                        restored.skipped)

    def _covers(self, head: Mapping[str, Any], what: str) -> dict[TopicPartition, int]:
        covers_part = head.get("covers")
        if not isinstance(covers_part, dict):
            raise CheckpointError(f"state topic {self.topic}: {what}: no covers")
        return decode_offsets(covers_part)

    def _document(self, home: TopicPartition, model: str, head: Mapping[str, Any],
                  chunks: Mapping[tuple[TopicPartition, str, str, int], bytes]
                  ) -> dict[str, Any]:
        """The record's document (its chunks joined), whose ``state`` is an object."""
        where = f"state topic {self.topic}: model {model!r} of {home[0]}[{home[1]}]"
        document = dict(head)
        if "state" not in head:
            save, count = head.get("save"), head.get("chunks")
            if not isinstance(save, str) or not isinstance(count, int) or count < 1:
                raise CheckpointError(f"{where}: neither a state nor its chunks")
            pieces = [chunks.get((home, model, save, index)) for index in range(count)]
            if any(piece is None for piece in pieces):
                raise CheckpointError(f"{where}: chunks of save {save} are missing")
            document = _loads(b"".join(p for p in pieces if p is not None), self.topic,
                              b"chunks")
        if not isinstance(document.get("state"), dict):
            raise CheckpointError(f"{where}: the state must be an object")
        return document

    def _consumer(self) -> Any:
        """A consumer without a group (a restore creates no topic and commits nothing)."""
        timeout_ms = int(self.request_timeout_s * 1000)
        try:
            return never_create_topics(KafkaConsumer(
                **self.client_config, group_id=None, enable_auto_commit=False,
                auto_offset_reset="earliest", fetch_max_bytes=64 * 1024 * 1024,
                max_partition_fetch_bytes=self.max_record_bytes + _PRODUCER_OVERHEAD,
                request_timeout_ms=max(timeout_ms, 1000) + 500,
                bootstrap_timeout_ms=timeout_ms))
        except KafkaError as error:
            raise StateTopicUnavailable(f"state topic {self.topic}: cannot reach the broker: "
                                        f"{error}") from error

    def _layout(self, consumer: Any) -> int:
        """The topic's partition count ``n`` (0 when it does not exist), once its layout is
        checked: at the first call, the first record of every partition must have been
        placed with ``n`` partitions (records of an earlier layout come first: compaction
        never reorders); later, ``n`` must not have changed. Refused otherwise
        (:func:`~driftwatch.state.topic_layout.refusal`)."""
        count = len(consumer.partitions_for_topic(self.topic) or ())
        checked = self._state_partitions
        if checked is not None and count != checked:
            raise refusal(self.topic, count, checked)
        if checked is not None or count == 0:
            return count
        timeout_ms = int(self.request_timeout_s * 1000)
        tps = [_KafkaTopicPartition(self.topic, p) for p in range(count)]
        consumer.assign(tps)
        begins = consumer.beginning_offsets(tps, timeout_ms=timeout_ms)
        ends = consumer.end_offsets(tps, timeout_ms=timeout_ms)
        pending = {tp for tp in tps if ends[tp] > begins[tp]}
        if pending:
            consumer.assign(sorted(pending))
            consumer.seek_to_beginning(*pending)
        for batches in self._polled(consumer, lambda: bool(pending),
                                    lambda: f"from {len(pending)} of its partitions"):
            for tp, messages in batches.items():
                if tp in pending and messages:
                    found = written_with(messages[0].headers)
                    if misplaced(found, count):
                        raise refusal(self.topic, count, found)
                    pending.discard(tp)
                    consumer.pause(tp)
        consumer.resume(*consumer.paused())  # a read after this seeks where it starts
        self._state_partitions = count
        return count

    def _polled(self, consumer: Any, more: Callable[[], bool], where: Callable[[], str]
                ) -> Iterator[dict[Any, list[Any]]]:
        """``consumer``'s batches, polled while ``more()``; :class:`StateTopicUnavailable`
        once ``request_timeout_s`` passes without data (``where()`` says what was awaited)."""
        deadline = time.monotonic() + self.request_timeout_s
        while more():
            batches = consumer.poll(timeout_ms=200)
            if batches:
                deadline = time.monotonic() + self.request_timeout_s
            elif time.monotonic() > deadline:
                raise StateTopicUnavailable(f"state topic {self.topic}: no data for "
                                            f"{self.request_timeout_s:.0f} s {where()}")
            yield batches


POLL_SLICE_S = 0.05
"""The longest wait of one poll of the state partitions inside a :meth:`StateRead.step` (the
step's budget bounds it too)."""


class StateRead:
    """One restore of input partitions, done a step at a time (:meth:`StateTopicStore.
    restoring`): first the state partitions of ``partitions`` are read to the end they had
    when the read began, keeping the last value per key (tombstones applied); then the
    records are parsed one by one (the JSON decoding: most of the cost); then assembled into
    :attr:`result`. Each :meth:`step` stops once its budget is spent (a poll waits at most
    :data:`POLL_SLICE_S` or the budget's rest; one record's parse is the unit of work), so
    a step overruns its budget by at most one poll or one record.

    The reader's store counts what it read in ``last_load_records`` / ``last_load_bytes`` /
    ``last_load_partitions`` once the read is over. Raises from :meth:`step` what
    :meth:`StateTopicStore.load` raises; :class:`StateTopicUnavailable` once its polls have
    waited ``request_timeout_s`` in all without data while the end is not reached (the time
    the loop spends elsewhere between two steps does not count).
    """

    def __init__(self, store: StateTopicStore, partitions: Collection[TopicPartition]) -> None:
        self.store = store
        self.wanted = {(str(t), int(p)) for t, p in partitions}
        self.result: Restored | None = None
        """What the state topic holds for the partitions, once :meth:`step` returned True."""
        self._consumer: Any = None
        self._state_partitions = 0
        self._tps: list[Any] = []
        self._ends: dict[Any, int] = {}
        self._silent_s = 0.0
        """Seconds this read's polls have waited since its last data: the loop's time
        elsewhere between two steps (a revoke save in a rebalance callback can take seconds)
        does not count."""
        self._latest: dict[bytes, tuple[int, bytes]] = {}
        self._records = self._bytes = 0
        self._to_parse: Iterator[tuple[bytes, tuple[int, bytes]]] | None = None
        self._parsed = Parsed()

    def step(self, budget_s: float) -> bool:
        """Do about ``budget_s`` seconds of the restore; True once :attr:`result` is there."""
        deadline = time.monotonic() + budget_s
        if self.result is not None:
            return True
        if self._to_parse is None:
            if not self._read(deadline):
                return False
            self._to_parse = iter(list(self._latest.items()))
            self._latest = {}
        store, parsed = self.store, self._parsed
        for raw_key, (partition, value) in self._to_parse:
            store._parse_record(raw_key, partition, value, parsed)
            if time.monotonic() >= deadline:
                return False
        self.result = store._assemble(self.wanted, parsed)
        self._parsed = Parsed()
        return True

    def close(self) -> None:
        """Close the reader's consumer (idempotent)."""
        consumer, self._consumer = self._consumer, None
        if consumer is not None:
            consumer.close()

    def _read(self, deadline: float) -> bool:
        """Poll the state partitions until ``deadline``; True once read to their end."""
        store = self.store
        timeout_ms = int(store.request_timeout_s * 1000)
        try:
            if self._consumer is None:
                self._start()
                if not self._tps:
                    self._finish()
                    return True
            consumer = self._consumer
            while not all(consumer.position(tp, timeout_ms=timeout_ms) >= self._ends[tp]
                          for tp in self._tps):
                if self._silent_s > store.request_timeout_s:
                    raise StateTopicUnavailable(
                        f"state topic {store.topic}: no data for "
                        f"{store.request_timeout_s:.0f} s before its end")
                polled = time.monotonic()
                wait_s = min(POLL_SLICE_S, max(deadline - polled, 0.0))
                batches = consumer.poll(timeout_ms=max(1, int(wait_s * 1000)))
                self._silent_s = 0.0 if batches else \
                    self._silent_s + time.monotonic() - polled
                for messages in batches.values():
                    self._take(messages)
                if time.monotonic() >= deadline:  # at least one poll per step
                    return False
            self._finish()
            return True
        except KafkaError as error:
            self.close()
            raise StateTopicUnavailable(f"state topic {store.topic}: reading failed: "
                                        f"{error}") from error
        except BaseException:
            self.close()
            raise

    def _start(self) -> None:
        """The consumer, the layout checked, the state partitions assigned from their start,
        and the end each is read to."""
        store = self.store
        store.last_load_records = store.last_load_bytes = 0
        store.last_load_partitions = frozenset()
        self._consumer = consumer = store._consumer()
        count = self._state_partitions = store._layout(consumer)
        if not count or not self.wanted:
            return
        wanted = sorted({state_partition(p, count) for _, p in self.wanted})
        self._tps = [_KafkaTopicPartition(store.topic, p) for p in wanted]
        consumer.assign(self._tps)
        consumer.seek_to_beginning(*self._tps)
        self._ends = consumer.end_offsets(self._tps,
                                          timeout_ms=int(store.request_timeout_s * 1000))

    def _take(self, messages: list[Any]) -> None:
        """Keep the last value of each key (a tombstone deletes it)."""
        count, latest = self._state_partitions, self._latest
        for message in messages:
            self._records += 1
            self._bytes += len(message.key or b"") + len(message.value or b"")
            found = written_with(message.headers)
            if misplaced(found, count):  # an older writer's, after the check
                raise refusal(self.store.topic, count, found)
            if message.key is None:
                continue
            if message.value is None:
                latest.pop(message.key, None)
            else:
                latest[message.key] = (message.partition, message.value)

    def _finish(self) -> None:
        store = self.store
        store.last_load_records, store.last_load_bytes = self._records, self._bytes
        store.last_load_partitions = frozenset(tp.partition for tp in self._tps)
        self.close()


class SaveRound:
    """One save to the state topic, sent without stopping the loop.

    Its models are sent in slices (:meth:`send_models`, each model's record a consistent
    pair of its state and the offsets it covers when exported); once every one is
    acknowledged its join records are sent, once those are its meta records (the offsets and
    counts of its snapshot, ``payload``'s), and once those are the save is done. The order
    is the one the argument for exactness needs (module docstring), enforced by waiting for
    acknowledgements, never by flushing in the loop: :meth:`poll` looks at the futures and
    moves on. :meth:`wait` does the rest at once (a revoke, the last save,
    :meth:`StateTopicStore.save`).
    """

    def __init__(self, store: StateTopicStore, producer: Any, partitions: int,
                 payload: Mapping[str, Any]) -> None:
        self._store = store
        self._producer = producer
        self._partitions = partitions
        self._headers = header(partitions)
        writer = payload.get("writer")
        self._futures: list[Any] = []
        self._chunked: dict[tuple[TopicPartition, str], tuple[str, int]] = {}
        # Encoded now, at the snapshot: an exported state may share mutable parts with the
        # live one (the join's counts), which the loop goes on changing until they are sent.
        self._stages: list[list[tuple[int, bytes, bytes | None]]] = [
            self._encoded({"joins": list(payload.get("joins", ())), "writer": writer}),
            self._encoded({"partitions": list(payload["partitions"]), "writer": writer})]
        self._homes: list[tuple[TopicPartition, str]] = [
            ((saved["home"][0], saved["home"][1]), "") for saved in payload.get("joins", ())]
        self._models_open = True
        self._deadline: float | None = None
        self._awaited = 0  # records unacknowledged when the deadline was last set
        self.written = 0
        self.records = 0
        self.done = False

    def send_models(self, payload: Mapping[str, Any]) -> None:
        """Send ``payload``'s model records (a slice of the round's models)."""
        assert self._models_open, "the round's models are all sent"
        self._homes += [((saved["home"][0], saved["home"][1]), model)
                        for model, saved in payload["models"].items()]
        self._send(self._encoded({"models": payload["models"],
                                  "writer": payload.get("writer")}))

    def models_sent(self) -> None:
        """No more models: the joins and metas follow as the models are acknowledged."""
        self._models_open = False

    def poll(self) -> bool:
        """Move on as far as the acknowledgements allow, without waiting; True once every
        record, metas included, is acknowledged.

        Raises:
            StateSaveError: a record was refused, or, once all were sent, none of the
                awaited ones was acknowledged for ``request_timeout_s``.
            BrokerRefused: the brokers refuse WRITE on the topic.
        """
        while not self.done and not self._models_open:
            pending = [future for future in self._futures if not future.is_done]
            for future in self._futures:
                if future.is_done and future.exception is not None:
                    self._raise(future.exception)
            if pending:
                now = time.monotonic()
                # The wait is for the next acknowledgement, not for the whole stage: a stage
                # of thousands of model records (tens of MB) may take a loaded broker longer
                # than request_timeout_s to acknowledge while it keeps acknowledging.
                if self._deadline is None or len(pending) < self._awaited:
                    self._deadline = now + self._store.request_timeout_s
                    self._awaited = len(pending)
                elif now > self._deadline:
                    raise StateSaveError(
                        f"saving to state topic {self._store.topic}: {len(pending)} record(s) "
                        f"awaited, none acknowledged for {self._store.request_timeout_s:.0f} s")
                return False
            self._futures, self._deadline = [], None
            if not self._stages:
                self.done = True
                self._store._saved(self._homes, self._chunked, self.written, self.records)
                break
            self._send(self._stages.pop(0))
        return self.done

    def wait(self) -> None:
        """Send what is left and wait for every acknowledgement (bounded by
        ``request_timeout_s`` per stage). Raises as :meth:`poll`."""
        self.models_sent()
        while not self.poll():
            try:
                self._producer.flush(timeout=self._store.request_timeout_s)
            except KafkaError as error:
                self._raise(error)
            if not self.poll():
                time.sleep(0.001)

    def _encoded(self, payload: Mapping[str, Any]) -> list[tuple[int, bytes, bytes | None]]:
        try:
            return list(self._store._records(payload, self._chunked))
        except (ValueError, TypeError) as error:
            self._raise(error)

    def _send(self, records: Iterable[tuple[int, bytes, bytes | None]]) -> None:
        try:
            for home, key, value in records:
                self._futures.append(self._producer.send(
                    self._store.topic, key=key, value=value, headers=self._headers,
                    partition=state_partition(home, self._partitions)))
                self.written += len(key) + (len(value) if value is not None else 0)
                self.records += 1
        except (KafkaError, ValueError, TypeError) as error:
            self._raise(error)

    def _raise(self, error: BaseException) -> NoReturn:
        topic = self._store.topic
        if isinstance(error, kafka_errors.AuthorizationError):
            raise state_topic_refused(topic, "WRITE", error) from error
        raise StateSaveError(f"saving to state topic {topic}: {type(error).__name__}: "
                             f"{error}") from error
