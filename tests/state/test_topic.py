"""The state topic against a real broker (Tansu and Apache Kafka): saves, restores, chunks, and
exactness when a save is cut short at every possible record.

The "agent" here is the pure part: :class:`~driftwatch.core.monitor.Monitor` objects fed
through :class:`~driftwatch.state.topic.PartitionStates`, as the agent's loop feeds them;
the reference is the same monitors fed every event exactly once.
"""

from __future__ import annotations

import json
import logging
import random
import time
from typing import Any

import pytest
from kafka import KafkaConsumer, KafkaProducer
from kafka import TopicPartition as KafkaTopicPartition
from kafka.future import Future

from driftwatch.agent.partition_states import PartitionStates
from driftwatch.core.events import Event
from driftwatch.core.monitor import Monitor, MonitorConfig
from driftwatch.pipeline import progress
from driftwatch.state.checkpoint import CheckpointSettingError
from driftwatch.state.topic import (
    SaveRound,
    StateSaveError,
    StateTopicStore,
    StateTopicUnavailable,
    resumes_from,
)
from driftwatch.state.topic_layout import header
from tests.broker import Broker, free_port
from tests.integration.helpers import create_topics

CONFIG = MonitorConfig(window_size=50)
P0, P1 = ("events", 0), ("events", 1)

Stream = list[tuple[tuple[str, int], int, str, Event]]


def stream(seed: int, count: int, models: dict[str, list[tuple[str, int]]]) -> Stream:
    """``count`` events; each model's events go to one of its partitions at random.
    Offsets count up per partition, as Kafka's do."""
    rng = random.Random(seed)
    next_offset: dict[tuple[str, int], int] = {}
    records: Stream = []
    names = sorted(models)
    for _ in range(count):
        model = rng.choice(names)
        tp = rng.choice(models[model])
        offset = next_offset.get(tp, 0)
        next_offset[tp] = offset + 1
        label = int(rng.random() < 0.4)
        records.append((tp, offset, model, Event(label, rng.random() * 0.6 + 0.4 * label)))
    return records


class Owner:
    """What the agent keeps for its partitions: monitors, positions, PartitionStates."""

    def __init__(self) -> None:
        self.monitors: dict[str, Monitor] = {}
        self.positions: dict[tuple[str, int], int] = {}
        self.states = PartitionStates()
        self.exported: dict[str, object] = {}

    def feed(self, records: Stream) -> None:
        for tp, offset, model, event in records:
            if offset < self.positions.get(tp, 0):
                continue  # before this owner's resume point: not delivered by Kafka
            monitor = self.monitors.setdefault(model, Monitor(model, CONFIG))
            if self.states.take(model, tp, offset):
                monitor.update(event)
            self.positions[tp] = offset + 1

    def payload(self) -> dict[str, Any]:
        return self.states.payload({m: mon.export_state() for m, mon in self.monitors.items()},
                                   self.positions)

    def changed_payload(self) -> dict[str, Any]:
        """The agent's save: only the models that moved since the last one that succeeded."""
        self.exported = self.states.unsaved({m: progress(mon)
                                             for m, mon in self.monitors.items()})
        return self.states.payload({m: self.monitors[m].export_state()
                                    for m in self.exported}, self.positions)

    def save_changed(self, store: StateTopicStore) -> None:
        store.save(self.changed_payload())
        self.states.saved(self.exported, self.states.writer)

    def restore(self, store: StateTopicStore, partitions: set[tuple[str, int]]) -> None:
        restored = store.load(partitions)
        self.monitors.update({model: Monitor.restore(state, config=CONFIG)
                              for model, state in restored.monitors.items()})
        self.states.restored(restored)
        self.positions.update(restored.offsets)


def states_of(monitors: dict[str, Monitor]) -> dict[str, str]:
    return {model: json.dumps(monitor.export_state(), sort_keys=True)
            for model, monitor in monitors.items()}


def reference(records: Stream) -> dict[str, str]:
    monitors: dict[str, Monitor] = {}
    for _, _, model, event in records:
        monitors.setdefault(model, Monitor(model, CONFIG)).update(event)
    return states_of(monitors)


def store_for(broker: Broker, topic: str = "state", **kwargs: Any) -> StateTopicStore:
    return StateTopicStore({"bootstrap_servers": broker.bootstrap}, topic,
                           request_timeout_s=5.0, **kwargs)


def test_the_topic_is_created_once_and_a_save_restores_per_partition(
    broker: Broker,
) -> None:
    models = {"a": [P0], "b": [P0], "c": [P1]}
    records = stream(1, 400, models)
    store = store_for(broker)
    try:
        assert store.ensure_topic() is True
        assert store.ensure_topic() is False  # already there: left as it is
        owner = Owner()
        owner.feed(records)
        store.save(owner.payload())
        assert store.last_save_records == 5  # three models, two partitions

        only_p1 = Owner()
        only_p1.restore(store, {P1})
        assert set(only_p1.monitors) == {"c"}
        assert only_p1.positions == {P1: owner.positions[P1]}
        both = Owner()
        both.restore(store, {P0, P1})
        assert states_of(both.monitors) == reference(records)
        assert both.positions == owner.positions
        assert store.load({("events", 7)}).monitors == {}  # never saved: nothing
    finally:
        store.close()
    # That the topic is created compacted is checked where the broker can show it (Apache
    # Kafka): tests/state/test_topic_compaction.py.


def test_an_existing_topic_not_compacted_is_refused_where_the_broker_describes_it(
    broker: Broker, caplog: pytest.LogCaptureFixture
) -> None:
    """A state topic made by hand with the broker's default policy (delete) would keep every
    save and delete states with age. Apache Kafka describes its cleanup.policy and the store
    refuses it, naming the setting and the fix; Tansu 0.6 describes no configuration, so
    there the topic is used unchecked, and the log says so."""
    create_topics(broker.bootstrap, "by-hand", partitions=1)
    store = store_for(broker, "by-hand")
    try:
        if broker.kind == "apache":
            with pytest.raises(CheckpointSettingError, match=(
                    r"^state topic by-hand exists with cleanup\.policy=delete, not compact: .*"
                    r"--entity-name by-hand --add-config cleanup\.policy=compact")) as refused:
                store.ensure_topic()
            assert refused.value.key == ("checkpoint", "topic")
            with pytest.raises(CheckpointSettingError):
                store.save(Owner().payload())  # nor is a save written to it
            assert consume_all(broker, "by-hand") == []
        else:
            with caplog.at_level(logging.INFO, logger="driftwatch.state"):
                assert store.ensure_topic() is False
            assert "state topic by-hand: the broker describes no configuration for it; its " \
                "cleanup.policy is not checked" in caplog.text
    finally:
        store.close()


def consume_all(broker: Broker, topic: str) -> list[Any]:
    """Every record of partition 0 of ``topic``, read without a group."""
    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap, auto_offset_reset="earliest",
                             enable_auto_commit=False)
    try:
        tp = KafkaTopicPartition(topic, 0)
        consumer.assign([tp])
        end = consumer.end_offsets([tp])[tp]
        records: list[Any] = []
        while consumer.position(tp) < end:
            for batch in consumer.poll(timeout_ms=500).values():
                records.extend(batch)
        return records
    finally:
        consumer.close()


@pytest.mark.parametrize("state_partitions", [1, 2])
def test_a_save_cut_short_after_any_record_restores_exactly(broker: Broker,
                                                            state_partitions: int) -> None:
    """A crash can stop a save after any of its records: every prefix must restore to
    monitors that, fed the rest of the log, equal monitors that saw every event once (with
    one state partition, and with each input partition in its own)."""
    models = {"a": [P0], "b": [P0], "c": [P1], "d": [P1]}
    records = stream(2, 600, models)
    first, second = records[:200], records[200:400]
    owner = Owner()
    owner.feed(first)
    writer = store_for(broker, "cut", partitions=state_partitions)
    try:
        writer.save(owner.payload())
        owner.feed(second)
        cut = list(writer._records(owner.payload(), {}))
    finally:
        writer.close()
    assert len(cut) == 6
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, acks="all")
    try:
        for written in range(len(cut) + 1):
            topic = f"cut-{written}"
            store = store_for(broker, topic, partitions=state_partitions)
            copy = Owner()
            copy.feed(first)
            store.save(copy.payload())
            for home, key, value in cut[:written]:  # where the save puts it
                producer.send(topic, key=key, value=value, headers=header(state_partitions),
                              partition=home % state_partitions)
            producer.flush(timeout=10)
            restored = Owner()
            restored.restore(store, {P0, P1})
            restored.feed(records)  # the log again; Kafka delivers from the resume point
            assert states_of(restored.monitors) == reference(records), written
            store.close()
    finally:
        producer.close(timeout=5)


def test_a_save_writes_only_the_models_that_moved_and_a_quiet_one_holds_nothing_back(
    broker: Broker,
) -> None:
    """Model "quiet" takes events only at the start; later saves leave it out, yet a restore
    resumes where the last save was taken, not at the quiet model's old record, and is
    exact."""
    early = stream(7, 100, {"quiet": [P0], "busy": [P0], "other": [P1]})
    start = {tp: sum(r[0] == tp for r in early) for tp in (P0, P1)}
    late = [(tp, offset + start[tp], model, event)
            for tp, offset, model, event in stream(8, 400, {"busy": [P0], "other": [P1]})]
    records = early + late
    store = store_for(broker, "quiet")
    try:
        owner = Owner()
        owner.feed(early)
        owner.save_changed(store)
        assert store.last_save_records == 5  # three models, two partitions
        owner.save_changed(store)
        assert store.last_save_records == 2  # nothing moved: the metas only
        owner.feed(late)
        owner.save_changed(store)
        assert store.last_save_records == 4  # "busy", "other" and the metas
        restored = Owner()
        restored.restore(store, {P0, P1})
        assert restored.positions == owner.positions, "the quiet model held P0 back"
        assert set(restored.monitors) == {"quiet", "busy", "other"}
        restored.feed(records)
        assert states_of(restored.monitors) == reference(records)
    finally:
        store.close()


@pytest.mark.parametrize("state_partitions", [1, 2])
def test_a_changed_only_save_cut_short_after_any_record_restores_exactly(
    broker: Broker, state_partitions: int,
) -> None:
    """A crash can stop a changed-only save after any of its records, the metas among them:
    every prefix restores to monitors that, fed the log again, equal the reference; and a
    complete one resumes where it was taken."""
    models = {"a": [P0], "b": [P0], "c": [P1], "d": [P1]}
    drawn = stream(9, 600, models)
    quiet = [r for r in drawn[200:400] if r[2] in ("a", "c")]  # b and d stay quiet
    offsets: dict[tuple[str, int], int] = {}
    log: Stream = []
    for tp, _, model, event in drawn[:200] + quiet + drawn[400:]:  # numbered as Kafka does
        log.append((tp, offsets.get(tp, 0), model, event))
        offsets[tp] = offsets.get(tp, 0) + 1
    first, second = log[:200], log[200:200 + len(quiet)]
    counted = None
    for written in range(7):
        topic = f"cut-changed-{written}"
        store = store_for(broker, topic, partitions=state_partitions)
        try:
            owner = Owner()
            owner.feed(first)
            owner.save_changed(store)
            owner.feed(second)
            cut = list(store._records(owner.changed_payload(), {}))
            counted = len(cut)
            producer = KafkaProducer(bootstrap_servers=broker.bootstrap, acks="all")
            try:
                for home, key, value in cut[:written]:  # where the save puts it
                    producer.send(topic, key=key, value=value,
                                  headers=header(state_partitions),
                                  partition=home % state_partitions)
                producer.flush(timeout=10)
            finally:
                producer.close(timeout=5)
            restored = Owner()
            restored.restore(store_for(broker, topic, partitions=state_partitions),
                             {P0, P1})
            if written >= len(cut):
                assert restored.positions == owner.positions
            restored.feed(log)
            assert states_of(restored.monitors) == reference(log), written
        finally:
            store.close()
    assert counted == 4  # "a", "c" and two metas: "b" and "d" did not move


def test_after_the_offsets_went_back_a_restore_skips_no_new_event(broker: Broker) -> None:
    """P0 recreated (its offsets start again at 0; the agent reads on and takes its records
    as new events, as the loop does on ``beyond_log_end``): the next save writes every model
    again, so model "quiet", silent since the reset, does not keep a record covering an old
    offset above the new ones; its new events after that save are not skipped by a
    restore, which is exact."""
    old = stream(9, 120, {"quiet": [P0], "busy": [P0]})
    new = stream(10, 60, {"busy": [P0]}) + [
        (tp, offset + 60, model, event)
        for tp, offset, model, event in stream(11, 100, {"quiet": [P0], "busy": [P0]})]
    store = store_for(broker, "reset")
    try:
        owner = Owner()
        owner.feed(old)
        owner.save_changed(store)
        owner.states.reset(P0)  # the loop, on the first record below P0's offset
        owner.positions[P0] = 0
        owner.feed(new[:60])
        owner.save_changed(store)
        assert set(owner.exported) == {"quiet", "busy"}, "every model written again"
        owner.feed(new[60:])  # "quiet" takes events again; then a crash, nothing saved
        restored = Owner()
        restored.restore(store, {P0})
        assert restored.positions == {P0: 60}
        restored.feed(new)
        assert states_of(restored.monitors) == reference(old + new)
    finally:
        store.close()


def test_a_meta_lifts_the_covers_of_its_own_writers_records_only() -> None:
    """The resume rule (:func:`resumes_from`) on plain data: a record's cover rises to the
    meta's offset when the meta's writer wrote it, never falls, and stays where it is for
    another writer, no writer, or a partition without a meta."""
    metas = {P0: (500, "w1"), P1: (80, "w1")}
    assert resumes_from({P0: 300, P1: 90}, "w1", metas) == {P0: 500, P1: 90}
    assert resumes_from({P0: 300}, "w2", metas) == {P0: 300}
    assert resumes_from({P0: 300}, None, metas) == {P0: 300}
    assert resumes_from({("events", 2): 7}, "w1", metas) == {("events", 2): 7}
    assert resumes_from({P0: 300}, None, {P0: (500, None)}) == {P0: 300}


def test_a_state_over_the_record_bound_is_chunked_and_replaced_chunks_deleted(
    broker: Broker,
) -> None:
    records = stream(3, 300, {"big": [P0]})
    store = store_for(broker, "chunks", max_record_bytes=1024)
    owner = Owner()
    try:
        owner.feed(records[:150])
        store.save(owner.payload())
        chunks_first = store.last_save_records - 2  # the m and p records
        assert chunks_first >= 2
        owner.feed(records[150:])
        store.save(owner.payload())
        restored = Owner()
        restored.restore(store, {P0})
        assert states_of(restored.monitors) == reference(records)
    finally:
        store.close()
    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap, auto_offset_reset="earliest")
    try:
        consumer.assign([KafkaTopicPartition("chunks", 0)])
        seen: list[Any] = []
        for _ in range(20):
            for batch in consumer.poll(timeout_ms=200).values():
                seen.extend(batch)
    finally:
        consumer.close()
    assert max(len(r.value or b"") for r in seen) <= 1024
    tombstones = [r for r in seen if r.value is None]
    assert len(tombstones) == chunks_first  # the first save's chunks, deleted after the second


@pytest.mark.parametrize("state_partitions", [1, 2])
def test_a_model_on_two_partitions_is_counted_and_exact_for_one_owner(
    broker: Broker, state_partitions: int,
) -> None:
    """Counted as split by an owner of P1 alone when it reads the home's records: with one
    state partition always, with one per input partition never (it reads P1's only; the
    home's owner counts it). Exact for an owner of both either way."""
    records = stream(4, 300, {"spread": [P0, P1], "kept": [P0]})
    store = store_for(broker, "split", partitions=state_partitions)
    try:
        owner = Owner()
        owner.feed(records[:150])
        assert owner.states.split == {"spread"}
        store.save(owner.payload())
        # An owner of P1 alone restores it only when P1 is its home (where it came first).
        restored = store.load({P1})
        home = owner.states.homes["spread"]
        assert ("spread" in restored.split) == (home != P1 and state_partitions == 1)
        both = Owner()
        both.restore(store, {P0, P1})
        both.feed(records)
        assert states_of(both.monitors) == reference(records)
        assert "spread" in both.states.split
    finally:
        store.close()


def test_a_stale_record_of_a_former_owner_moves_the_resume_point_back_only(
    broker: Broker,
) -> None:
    """A member that lost its partitions without noticing (a zombie) may still write part of
    a save after the new owner's: its record is older than the new owner's meta record, and
    the restore must resume early enough for it."""
    models = {"a": [P0], "b": [P0]}
    records = stream(5, 600, models)
    store = store_for(broker, "zombie")
    try:
        old = Owner()
        old.feed(records[:200])
        store.save(old.payload())
        new = Owner()
        new.restore(store, {P0})
        new.feed(records[:400])
        store.save(new.payload())
        old.feed(records[:300])  # the zombie went on reading, and saves model "a" only
        zombie = [(key, value) for _, key, value in store._records(old.payload(), {})
                  if b'"a"' in key]
        producer = KafkaProducer(bootstrap_servers=broker.bootstrap, acks="all")
        try:
            for key, value in zombie:
                producer.send("zombie", key=key, value=value, headers=header(1))
            producer.flush(timeout=10)
        finally:
            producer.close(timeout=5)
        restored = Owner()
        restored.restore(store, {P0})
        assert restored.positions[P0] < new.positions[P0]
        restored.feed(records)
        assert states_of(restored.monitors) == reference(records)
    finally:
        store.close()


@pytest.mark.parametrize("state_partitions", [1, 2])
def test_whole_stream_writers_with_different_homes_restore_the_most_advanced(
    broker: Broker, state_partitions: int,
) -> None:
    """Whole-stream sidecars all save every partition under the same keys; a model whose
    events arrive on two partitions may be homed differently by each (the partition its
    first polled event came from), and a replaced writer's record stays behind. The restore
    takes the record covering the most, not the older one, and is exact."""
    records = stream(6, 600, {"spread": [P0, P1], "kept": [P1]})
    store = store_for(broker, "writers", partitions=state_partitions)
    try:
        first, second = Owner(), Owner()
        first.feed(records[:200])
        store.save(first.payload())
        second.feed(records[:400])
        home = second.states.homes["spread"]
        second.states.homes["spread"] = P1 if home == P0 else P0  # polled the other first
        store.save(second.payload())
        restored = Owner()
        restored.restore(store, {P0, P1})
        assert restored.positions == second.positions, "not the first writer's older offsets"
        assert restored.states.homes["spread"] == second.states.homes["spread"]
        restored.feed(records)
        assert states_of(restored.monitors) == reference(records)
    finally:
        store.close()


def test_an_unreachable_broker_is_a_failure_not_a_refused_state() -> None:
    """Broker trouble while restoring or saving is an OSError (the agent exits 1 and is
    restarted), not the CheckpointError of a state that cannot be used (exit 3)."""
    store = StateTopicStore({"bootstrap_servers": f"127.0.0.1:{free_port()}"}, "gone",
                            request_timeout_s=1.0)
    with pytest.raises(StateTopicUnavailable, match="state topic gone: cannot reach"):
        store.load({P0})
    with pytest.raises(StateSaveError, match="state topic gone"):
        store.save(Owner().payload())
    store.close()


def test_a_round_writes_its_snapshot_as_it_was_when_begun(broker: Broker) -> None:
    """A save in slices sends its joins and metas after its models: what they hold is
    encoded when the round begins, though the exported join state shares lists with the live
    join, which goes on counting (a join's per-model delay buckets did: counted twice)."""
    owner = Owner()
    owner.feed(stream(3, 50, {"a": [P0]}))
    buckets = [1, 2, 3]
    joins = {P0: ([P0], {"models": {"a": buckets}})}
    payload = owner.states.payload({}, owner.positions, joins)
    store = store_for(broker, "snapshot")
    try:
        saving = store.round(payload)
        buckets.append(4)  # the live join moved on before the round sent its join
        saving.wait()
        assert saving.done
        restored = store_for(broker, "snapshot").load({P0})
        assert restored.joins[P0] == {"models": {"a": [1, 2, 3]}}
    finally:
        store.close()


def test_a_restore_stepped_again_after_the_loop_was_away_is_not_a_broker_failure(
    broker: Broker
) -> None:
    """A restore's "no data" timeout counts the time its own polls waited for data, not the
    time the loop spent elsewhere between two steps. At 10 000 models a revoke save inside
    a rebalance callback held the loop for 5.4 s while a restore was under way; its next
    step found no data "for 5 s" and the agent exited 1 (benchmarks/fleet_kill.py,
    cooperative-sticky, 4 agents)."""
    owner = Owner()
    owner.feed(stream(7, 400, {"a": [P0], "b": [P0], "c": [P0]}))
    writer = store_for(broker, "away")
    writer.save(owner.payload())
    writer.close()
    store = StateTopicStore({"bootstrap_servers": broker.bootstrap}, "away",
                            request_timeout_s=1.0)
    reading = store.restoring({P0})
    try:
        assert not reading.step(0.0)  # the consumer started and polled once, for 1 ms
        time.sleep(2.0)  # the loop is busy elsewhere: twice the timeout
        while not reading.step(0.1):
            pass
        assert reading.result is not None
        assert states_of({model: Monitor.restore(state, config=CONFIG) for model, state
                          in reading.result.monitors.items()}) == states_of(owner.monitors)
    finally:
        reading.close()
        store.close()


def test_a_round_waits_for_the_next_acknowledgement_not_for_the_whole_stage(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A loaded broker acknowledges a stage of many model records slowly but steadily: the
    round fails only once no record was acknowledged for ``request_timeout_s``. (It failed
    when the whole stage took longer: the fleet benchmark's 4-agent run, a broker and
    producers on two cores, failed save after save at "N records not acknowledged within
    5 s", /readyz 503 and nothing committed for a minute, while acknowledgements came.)

    The acknowledgements are kafka-python's own futures, resolved here as a broker would
    resolve them, on a clock the test moves."""
    now = [0.0]
    monkeypatch.setattr("driftwatch.state.topic.time.monotonic", lambda: now[0])
    futures: list[Future] = []

    class Acknowledging:
        """The producer's ``send``: a future per record, resolved by the test."""

        def send(self, topic: str, **record: Any) -> Future:
            futures.append(Future())
            return futures[-1]

    owner = Owner()
    owner.feed(stream(5, 400, {f"m{i}": [P0] for i in range(20)}))
    payload = owner.payload()
    store = StateTopicStore({"bootstrap_servers": f"127.0.0.1:{free_port()}"}, "slow",
                            request_timeout_s=5.0)
    saving = SaveRound(store, Acknowledging(), 1, {**payload, "models": {}})
    saving.send_models(payload)
    saving.models_sent()
    assert len(futures) == 20 and not saving.poll()
    for future in futures[:19]:  # one acknowledgement every 4 s: 76 s for the stage
        now[0] += 4.0
        future.success(None)
        assert not saving.poll()
    now[0] += 5.5  # the last one: nothing for more than 5 s
    with pytest.raises(StateSaveError, match=r"1 record\(s\) awaited, none acknowledged for 5 s"):
        saving.poll()
    store.close()
