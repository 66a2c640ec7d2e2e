"""A save in slices against a real broker (Tansu and Apache Kafka): a crash between its
slices, or after its last model record but before its metas, restores exactly; a complete one
resumes where its snapshot was taken.

The "agent" is the pure part (:class:`tests.state.test_topic.Owner`: monitors fed through
:class:`~driftwatch.agent.partition_states.PartitionStates`), which goes on taking records
between the slices as the loop does; the reference is the same monitors fed every event once.
The last test takes the agent's own path: a round made void by a partition lost under way.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from driftwatch.agent.loop import Agent
from driftwatch.agent.sliced_save import SlicedSave
from driftwatch.kafka.offsets import TopicPartition
from driftwatch.kafka.source import Record
from driftwatch.pipeline import progress
from driftwatch.settings import Settings
from driftwatch.state.topic import StateTopicStore
from tests.broker import Broker
from tests.integration.helpers import wait_for
from tests.state.test_topic import P0, P1, Owner, reference, states_of, store_for, stream

MODELS = {"a": [P0], "b": [P0], "c": [P1], "d": [P1], "quiet": [P1]}


def _sliced_save(broker: Broker, topic: str, steps: int | None, *, before_metas: bool = False
                 ) -> tuple[Owner, SlicedSave, list[Any]]:
    """An owner that saved the first 200 records, read 200 more (model "quiet" only before),
    began a sliced save and took 40 records after each slice; the save is abandoned (the
    store closed: a crash) after ``steps`` slices, or after every model record was
    acknowledged but before the metas were sent, or (``steps`` None) run to its end."""
    records = stream(11, 900, {m: tps for m, tps in MODELS.items() if m != "quiet"})
    early = stream(12, 20, {"quiet": [P1]})
    log = [(tp, offset, model, event) for tp, offset, model, event in _renumbered(
        early + records)]
    store = store_for(broker, topic)
    owner = Owner()
    try:
        owner.feed(log[:200])
        owner.save_changed(store)
        owner.feed(log[200:400])
        changed = owner.states.unsaved({m: progress(mon) for m, mon in owner.monitors.items()})
        assert set(changed) == {"a", "b", "c", "d"}, "the quiet model is not written"

        def export(models: Sequence[str]) -> tuple[dict[str, Any], dict[str, object]]:
            payload = owner.states.payload({m: owner.monitors[m].export_state()
                                            for m in models}, owner.positions)
            return payload, {m: progress(owner.monitors[m]) for m in models}

        saving = SlicedSave(store.round(owner.states.payload({}, owner.positions)),
                            owner.positions, list(changed), owner.states.writer, slice_s=0.0)
        fed = 400
        if before_metas:
            saving.saving.send_models(export(list(changed))[0])
            store._connect().flush(timeout=10)
            assert not saving.saving.done
        elif steps is None:
            while not saving.step(export):
                owner.feed(log[fed:fed + 40])
                fed += 40
            owner.states.saved(saving.exported, saving.writer)
        else:
            for _ in range(steps):
                assert not saving.step(export)  # one model per slice: not done
                owner.feed(log[fed:fed + 40])
                fed += 40
            store._connect().flush(timeout=10)  # what was sent lands; the rest never is
    finally:
        store.close()
    return owner, saving, log


def _renumbered(records: list[Any]) -> list[Any]:
    """Offsets counted up per partition in log order, as Kafka numbers them."""
    offsets: dict[Any, int] = {}
    numbered = []
    for tp, _, model, event in records:
        numbered.append((tp, offsets.get(tp, 0), model, event))
        offsets[tp] = offsets.get(tp, 0) + 1
    return numbered


def _restored(broker: Broker, topic: str) -> Owner:
    restored = Owner()
    restored.restore(store_for(broker, topic), {P0, P1})
    return restored


def test_a_sliced_save_cut_between_any_two_slices_restores_exactly(broker: Broker) -> None:
    for steps in range(4):
        topic = f"sliced-{steps}"
        _, _, log = _sliced_save(broker, topic, steps)
        restored = _restored(broker, topic)
        restored.feed(log)
        assert states_of(restored.monitors) == reference(log), steps


def test_a_sliced_save_cut_before_its_metas_restores_exactly(broker: Broker) -> None:
    _, saving, log = _sliced_save(broker, "sliced-metas", None, before_metas=True)
    restored = _restored(broker, "sliced-metas")
    assert restored.positions != saving.offsets  # the save before's metas: not this one's
    restored.feed(log)
    assert states_of(restored.monitors) == reference(log)


def test_a_complete_sliced_save_resumes_at_its_snapshot_quiet_models_included(
    broker: Broker,
) -> None:
    _, saving, log = _sliced_save(broker, "sliced-done", None)
    assert saving.saving.done
    restored = _restored(broker, "sliced-done")
    assert restored.positions == saving.offsets, "a model held the resume point back"
    assert set(restored.monitors) == set(MODELS)
    restored.feed(log)
    assert states_of(restored.monitors) == reference(log)


def test_the_agent_voids_a_round_when_partitions_go_and_saves_the_rest_exactly(
    broker: Broker,
) -> None:
    """The agent's own path (``Agent.checkpoint(whole=False)``): a round under way when a
    partition is lost is void (a new epoch): nothing becomes durable or is committed for
    it, and the next round, begun at once, saves what is left; a new agent restoring the
    kept partition from the state topic then equals the first one's monitors."""
    settings = Settings(kafka={"bootstrap_servers": broker.bootstrap, "topics": ["events"]},
                        checkpoint={"backend": "kafka", "topic": "agent-void"})
    agent = Agent(settings, snapshot_interval_s=0.0)
    log = stream(13, 600, {"a": [P0], "b": [P0], "c": [P1], "d": [P1]})
    for tp, offset, model, event in log:
        value = json.dumps({"model": model, "label": event.y_true, "score": event.y_score})
        agent.process(Record(tp[0], tp[1], offset, None, value.encode(), 0))
    restored = Agent(settings, snapshot_interval_s=0.0)
    try:
        agent.checkpointer.slice_s = 0.0  # one model per slice
        assert agent.checkpoint(whole=False)  # begun, not done
        assert agent.checkpointer.sliced is not None
        assert agent.checkpointer.durable == {}
        agent._on_revoked({TopicPartition(*P1)}, True)  # lost: a new epoch
        assert agent.checkpoint(whole=False), "a void round is no failure"
        assert agent.checkpointer.sliced is None and agent.checkpointer.failures == 0
        assert agent.checkpointer.durable == {} and agent.checkpointer.due()
        while agent.checkpointer.sliced is not None or agent.checkpointer.durable == {}:
            assert agent.checkpoint(whole=False)
        assert agent.checkpointer.durable == {TopicPartition(*P0): sum(
            tp == P0 for tp, _, _, _ in log)}
        assert restored.handover is not None
        restored.handover.assigned({TopicPartition(*P0)})
        assert set(restored.monitors.by_model) == {"a", "b"}
        assert {m: json.dumps(mon.export_state(), sort_keys=True)
                for m, mon in restored.monitors.by_model.items()} == \
            {m: json.dumps(mon.export_state(), sort_keys=True)
             for m, mon in agent.monitors.by_model.items()}
    finally:
        for each in (agent, restored):
            assert isinstance(each.checkpointer.store, StateTopicStore)
            each.checkpointer.store.close()


def test_a_round_when_only_rejected_records_came_saves_their_offsets(broker: Broker) -> None:
    """Records since the last save that moved no model (all rejected) still need a round:
    no model record, the metas with the new offsets; it completes and they become durable.
    (A round of no models once waited for models that never came, and nothing more was
    saved or committed until the next rebalance.)"""
    settings = Settings(kafka={"bootstrap_servers": broker.bootstrap, "topics": ["events"]},
                        checkpoint={"backend": "kafka", "topic": "agent-rejected"})
    agent = Agent(settings, snapshot_interval_s=0.0)
    try:
        for offset in range(20):
            value = json.dumps({"model": "a", "label": offset % 2, "score": 0.25})
            agent.process(Record("events", 0, offset, None, value.encode(), 0))
        while agent.checkpointer.sliced is not None or not agent.checkpointer.durable:
            assert agent.checkpoint(whole=False)
        for offset in range(20, 30):
            agent.process(Record("events", 0, offset, None, b"not json", 0))
        assert list(agent.saved_state.unsaved()) == []
        saves = agent.checkpointer.saves
        assert agent.checkpoint(whole=False)
        wait_for(lambda: agent.checkpoint(whole=False) and agent.checkpointer.sliced is None,
                 30, "the round done", interval_s=0.01)
        assert agent.checkpointer.saves == saves + 1
        assert agent.checkpointer.durable == {TopicPartition("events", 0): 30}
    finally:
        assert isinstance(agent.checkpointer.store, StateTopicStore)
        agent.checkpointer.store.close()
