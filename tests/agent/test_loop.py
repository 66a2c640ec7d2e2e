"""The agent's whole loop (:meth:`Agent.run`) on an in-memory source: alarms, rejections and
dead letters, the model limit, checkpoint-then-commit and the offsets committed, stop,
restart and joined records. Every expectation comes from plain monitors fed the same events
here, or from the checkpoint on disk."""

from __future__ import annotations

import json
import logging
import math
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pytest

from driftwatch.agent.loop import LONG_PAUSE_S, Agent
from driftwatch.core.events import Event
from driftwatch.core.join import Label, Prediction
from driftwatch.core.monitor import Alarm, Monitor
from driftwatch.kafka.offsets import TopicPartition
from driftwatch.kafka.source import Record
from driftwatch.pipeline import MemoryDeadLetter
from driftwatch.replay.run import Replay
from driftwatch.replay.run import run as replay_run
from driftwatch.replay.sources import JsonLinesSource, agent_records
from driftwatch.settings import Settings
from driftwatch.simulate import delayed_labels, generate
from driftwatch.sources import MemorySource, OnAssignedHook
from driftwatch.state.checkpoint import CheckpointSaveError, CheckpointStore

TOPIC = "events"
BASE_MS = 1_700_000_000_000


def settings(directory: Path, **sections: Any) -> Settings:
    return Settings.model_validate({
        "checkpoint": {"backend": "file", "directory": str(directory), "interval_seconds": 1},
        "metrics": {"host": "127.0.0.1", "port": 0},
        **sections,
    })


def records(values: Iterable[bytes | None], partitions: int = 1) -> list[Record]:
    """The values as Kafka records, dealt round-robin over ``partitions``."""
    result = []
    next_offset = [0] * partitions
    for index, value in enumerate(values):
        partition = index % partitions
        result.append(Record(TOPIC, partition, next_offset[partition], None, value,
                             BASE_MS + index))
        next_offset[partition] += 1
    return result


def stream_values(model: str = "m", length: int = 6000, seed: int = 1) -> list[bytes]:
    return [json.dumps({"model": model, "label": e.y_true, "score": e.y_score,
                        "ts": e.ts}).encode()
            for e in generate("sudden_auc_drop", seed=seed, length=length)]


class Run:
    """One :meth:`Agent.run` over ``source_records`` until they are all processed."""

    def __init__(self, config: Settings, source_records: list[Record], *, batch: int = 97,
                 dead_letter: MemoryDeadLetter | None = None,
                 source_class: type[MemorySource[Record]] = MemorySource,
                 clock: Callable[[], float] | None = None) -> None:
        self.alarms: list[Alarm] = []
        self.stop = threading.Event()
        self.sources: list[MemorySource[Record]] = []

        def build(on_assigned: OnAssignedHook) -> MemorySource[Record]:
            source = source_class(source_records, batch=batch, on_assigned=on_assigned,
                                  on_exhausted=self.stop.set)
            self.sources.append(source)
            return source

        self.agent = Agent(config, on_alarm=self.alarms.append, source=build,
                           dead_letter=dead_letter, snapshot_interval_s=0.0,
                           **({} if clock is None else {"clock": clock}))

    def __call__(self) -> Run:
        thread = threading.Thread(target=self._run, daemon=True)
        self.error: BaseException | None = None
        thread.start()
        thread.join(60)
        assert not thread.is_alive(), "the loop did not stop"
        return self

    def _run(self) -> None:
        try:
            self.agent.run(self.stop)
        except BaseException as error:  # handed to the test
            self.error = error

    @property
    def source(self) -> MemorySource[Record]:
        return self.sources[-1]


def reference(config: Settings, values: Iterable[bytes | None],
              max_models: int | None = None) -> tuple[dict[str, Monitor], list[Alarm]]:
    """Plain monitors fed each valid record's event by hand, in order: what the agent's
    monitors and alarms must be."""
    monitors: dict[str, Monitor] = {}
    alarms: list[Alarm] = []
    limit = config.limits.max_models if max_models is None else max_models
    for value in values:
        try:
            obj = json.loads(value or b"")
            event = Event(obj["label"], obj["score"], ts=obj.get("ts"))
        except (ValueError, KeyError, TypeError):
            continue
        model = obj.get("model", "default")
        if model not in monitors:
            if len(monitors) >= limit:
                continue
            monitors[model] = Monitor(model, config.monitoring.monitor_config(model))
        alarms += monitors[model].update(event)
    return monitors, alarms


def same_state(a: Monitor, b: Monitor) -> bool:
    """Whether two monitors hold the same state (NaN equal to NaN, as in a checkpoint)."""
    return json.dumps(a.export_state(), sort_keys=True) == \
        json.dumps(b.export_state(), sort_keys=True)


def test_the_loop_raises_the_alarms_plain_monitors_raise(tmp_path: Path) -> None:
    config = settings(tmp_path)
    values = stream_values("a", seed=1) + stream_values("b", seed=2)
    values = [v for pair in zip(values[:6000], values[6000:], strict=True) for v in pair]
    run = Run(config, records(values, partitions=3))()
    assert run.error is None
    monitors, alarms = reference(config, values)
    assert alarms, "the drifting stream raises alarms"
    assert run.alarms == alarms
    for model, monitor in monitors.items():
        assert same_state(run.agent.monitors.get(model), monitor)


def test_rejections_are_counted_and_dead_lettered_with_their_reason(tmp_path: Path) -> None:
    config = settings(tmp_path)
    bad = {3: b"not json", 10: b"[1, 2]", 17: b'{"model": "m", "score": 0.5}',
           25: b'{"model": "m", "label": 1, "score": "high"}', 31: None}
    values: list[bytes | None] = list(stream_values(length=40))
    for index, value in bad.items():
        values[index] = value
    dead = MemoryDeadLetter()
    run = Run(config, records(values), dead_letter=dead, batch=3)()
    assert run.error is None
    reasons = {3: "not_json", 10: "not_object", 17: "missing_field", 25: "bad_score",
               31: "empty"}
    assert [(record.offset, rejected.reason) for record, rejected in dead.sent] == \
        sorted(reasons.items())
    rejected = run.agent.snapshot.rejected
    assert {reason: count for reason, count in rejected.items() if count} == \
        dict.fromkeys(reasons.values(), 1)
    assert run.agent.monitors.get("m").events == 40 - len(bad)
    assert run.source.committed == {TopicPartition(TOPIC, 0): 40}, "bad records are passed"
    assert dead.flushes == run.agent.checkpointer.saves >= 1, \
        "flushed before each checkpoint, and only then (not at each of the 14 loop passes)"


def test_models_beyond_the_limit_are_rejected_and_dead_lettered(tmp_path: Path) -> None:
    config = settings(tmp_path, limits={"max_models": 2})
    values = [json.dumps({"model": f"m{i % 3}", "label": i % 2, "score": (i % 7) / 7}).encode()
              for i in range(300)]
    dead = MemoryDeadLetter()
    run = Run(config, records(values), dead_letter=dead)()
    assert run.error is None
    assert len(run.agent.monitors) == 2
    assert [r.offset for r, rejected in dead.sent] == list(range(2, 300, 3))
    assert {rejected.reason for _, rejected in dead.sent} == {"too_many_models"}
    assert run.agent.snapshot.rejected["too_many_models"] == 100
    monitors, _ = reference(config, values)
    assert {m: monitor.events for m, monitor in monitors.items()} == \
        {m: run.agent.monitors.get(m).events for m in ("m0", "m1")} == {"m0": 100, "m1": 100}


class TickingClock:
    """A monotonic clock that moves ``step`` seconds at every read: checkpoints fall due
    every few batches, whatever the machine's speed."""

    def __init__(self, step: float) -> None:
        self.now, self.step = 1000.0, step

    def __call__(self) -> float:
        self.now += self.step
        return self.now


class CheckingSource(MemorySource[Record]):
    """Checks, at every commit, that the checkpoint on disk already covers exactly the
    offsets committed (the save came first)."""

    directory: Path
    seen: list[dict[str, int]]

    def commit(self, offsets: Any) -> bool:
        saved = CheckpointStore(self.directory).load()
        assert saved is not None, "a commit before any checkpoint"
        plain = {f"{tp.topic}:{tp.partition}": offset for tp, offset in offsets.items()}
        assert saved["offsets"] == plain, "committed offsets the disk does not hold"
        self.seen.append(plain)
        return super().commit(offsets)


def test_every_commit_carries_exactly_the_offsets_of_a_checkpoint_already_saved(
    tmp_path: Path,
) -> None:
    config = settings(tmp_path)
    values = stream_values(length=3000)
    CheckingSource.directory = tmp_path
    CheckingSource.seen = []
    run = Run(config, records(values, partitions=2), batch=50, source_class=CheckingSource,
              clock=TickingClock(0.05))()
    assert run.error is None
    assert len(CheckingSource.seen) > 3, "commits were made along the way"
    assert CheckingSource.seen[-1] == {f"{TOPIC}:0": 1500, f"{TOPIC}:1": 1500}
    assert run.source.committed == {TopicPartition(TOPIC, 0): 1500,
                                    TopicPartition(TOPIC, 1): 1500}


def test_undeliverable_dead_letters_postpone_the_checkpoint_and_nothing_is_committed(
    tmp_path: Path,
) -> None:
    dead = MemoryDeadLetter()
    dead.deliverable = False
    values = [b"not json", *stream_values(length=20)]
    run = Run(settings(tmp_path), records(values), dead_letter=dead)()
    assert isinstance(run.error, CheckpointSaveError)
    assert run.source.commit_log == []
    assert CheckpointStore(tmp_path).load() is None


def test_stop_ends_the_loop_after_the_batch_and_commits_what_it_processed(
    tmp_path: Path,
) -> None:
    values = stream_values(length=4000)
    config = settings(tmp_path, checkpoint={"backend": "file", "directory": str(tmp_path),
                                            "interval_seconds": 3600})
    run = Run(config, records(values), batch=100)
    first_alarm: list[int] = []

    def stop_at_first_alarm(alarm: Alarm) -> None:
        if not first_alarm:
            first_alarm.append(alarm.event_count)
            run.stop.set()

    run.agent.on_alarm = stop_at_first_alarm
    run()
    assert run.error is None and first_alarm
    processed = run.agent.monitors.get("m").events
    assert processed % 100 == 0 and processed - 100 < first_alarm[0] <= processed, \
        "the batch of the alarm is finished, no further one"
    assert run.source.commit_log == [{TopicPartition(TOPIC, 0): processed}]
    saved = CheckpointStore(tmp_path).load()
    assert saved is not None and saved["offsets"] == {f"{TOPIC}:0": processed}


def test_a_restart_reads_only_what_the_checkpoint_does_not_cover(tmp_path: Path) -> None:
    values = stream_values(length=5000)
    config = settings(tmp_path, checkpoint={"backend": "file", "directory": str(tmp_path),
                                            "interval_seconds": 3600})
    first = Run(config, records(values[:2000]))()
    assert first.error is None
    second = Run(config, records(values))()
    assert second.error is None
    monitors, alarms = reference(config, values)
    assert first.alarms + second.alarms == alarms, "every event once into the monitors"
    assert same_state(second.agent.monitors.get("m"), monitors["m"])
    assert second.source.committed == {TopicPartition(TOPIC, 0): 5000}


def test_predictions_and_labels_are_joined_into_the_monitor(tmp_path: Path) -> None:
    join = {"enabled": True, "kind_field": "kind", "max_pending": 500,
            "score_drift": {"enabled": False}}
    config = settings(tmp_path, join=join)
    stream = list(delayed_labels(generate("sudden_auc_drop", seed=4, length=4000), seed=5,
                                 model="m", mean_delay=30.0))

    def value(record: Prediction | Label) -> bytes:
        if isinstance(record, Prediction):
            fields: dict[str, Any] = {"kind": "prediction", "model": record.model,
                                      "score": record.y_score}
        else:
            fields = {"kind": "label", "label": record.y_true}
        return json.dumps({**fields, "event_id": record.event_id, "ts": record.ts}).encode()

    run = Run(config, records([value(r) for r in stream]))()
    assert run.error is None
    delayed = config.join.delayed_labels(lambda model: 0.5)
    monitor = Monitor("m", config.monitoring.monitor_config("m"))
    alarms = []
    for r in stream:
        joined = delayed.add_prediction(r)[0] if isinstance(r, Prediction) \
            else delayed.add_label(r)
        if joined is not None:
            alarms += monitor.update(joined.event())
    assert monitor.events > 3000 and alarms
    assert run.alarms == alarms
    assert same_state(run.agent.monitors.get("m"), monitor)


@pytest.mark.parametrize("batch", [1, 7])
def test_memory_source_resumes_where_on_assigned_says(batch: int) -> None:
    source_records = records([b"x"] * 10, partitions=2)

    def hook(partitions: set[Any]) -> dict[Any, int]:
        return {(TOPIC, 0): 3}

    source = MemorySource(source_records, batch=batch, on_assigned=hook)
    seen = []
    while batch_records := source.poll():
        seen += [(r.partition, r.offset) for r in batch_records]
    assert seen == [(p, o) for p, o in ((r.partition, r.offset) for r in source_records)
                    if p == 1 or o >= 3]
    assert source.exhausted and source.lag() == {}


def test_the_agent_on_a_file_gives_the_replay_of_the_file(tmp_path: Path) -> None:
    """One pipeline: the agent's loop over a JSON Lines file (a replay source through
    agent_records) and ``replay`` of the same file give the same alarms, rejections and
    monitors, the records of a model beyond the limit and bad lines included."""
    config = settings(tmp_path, limits={"max_models": 2})
    lines = stream_values("a", seed=7, length=3000) + stream_values("b", seed=8, length=3000)
    lines = [v for pair in zip(lines[:3000], lines[3000:], strict=True) for v in pair]
    for index, bad in enumerate([b"not json", b'{"model": "a", "score": 0.2}', b"",
                                 b'{"model": "c", "label": 1, "score": 0.5}',
                                 b'{"model": "a", "label": 1, "score": 0.5, "ts": "2024-01-01"}']):
        lines.insert(700 * (index + 1), bad)
    path = tmp_path / "records.jsonl"
    path.write_bytes(b"".join(line + b"\n" for line in lines))
    dead = MemoryDeadLetter()
    run_ = Run(config, list(agent_records(JsonLinesSource(str(path)))), dead_letter=dead)()
    assert run_.error is None
    fmt = config.events.event_format()
    replayed = replay_run(JsonLinesSource(str(path)),
                          Replay(fmt, config.monitoring.monitor_config, 2), str(path))
    assert replayed.alarms and [found.alarm for found in replayed.alarms] == run_.alarms
    assert [(b.position, b.reason) for b in replayed.bad_records] == \
        [(record.offset, rejected.reason) for record, rejected in dead.sent]
    assert {r: n for r, n in replayed.rejected.items() if n} == \
        {r: n for r, n in run_.agent.snapshot.rejected.items() if n}
    assert list(replayed.snapshots) == ["a", "b"]
    for model, snapshot in replayed.snapshots.items():
        assert json.dumps(run_.agent.monitors.get(model).snapshot().values, sort_keys=True) \
            == json.dumps(snapshot.values, sort_keys=True)
        assert run_.agent.monitors.get(model).events == snapshot.events


def test_every_turn_of_the_loop_records_its_pause_between_two_polls(tmp_path: Path) -> None:
    """``driftwatch_loop_pause_seconds``: one observation per poll (the batch, the snapshot,
    a save, until the next poll), each as long as the clock moved meanwhile (0.05 s per
    read here, so none falls in the first bucket, 0.01 s)."""
    values = stream_values(length=1000)
    run = Run(settings(tmp_path), records(values), batch=100, clock=TickingClock(0.05))()
    assert run.error is None
    polls = 1000 // 100 + 1  # the last poll finds the stream exhausted and stops the loop
    pauses = run.agent._operations({}).loop_pause_seconds
    assert pauses.buckets[0] == (0.01, 0)
    assert pauses.buckets[-1][1] == polls
    assert pauses.sum >= 0.05 * polls


def test_a_pause_longer_than_half_a_second_is_logged_with_where_its_time_went(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """Each turn here takes more than LONG_PAUSE_S (the clock moves 0.2 s at every read):
    each is logged, its parts (the records, the restore, the publish, the save) adding up to
    the pause the histogram records, with the CPU its thread used meanwhile."""
    caplog.set_level(logging.INFO, logger="driftwatch.agent.loop")
    run = Run(settings(tmp_path), records(stream_values(length=300)), batch=100,
              clock=TickingClock(0.2))()
    assert run.error is None
    logged = [r for r in caplog.records if r.getMessage().startswith("the loop paused")]
    polls = 300 // 100 + 1
    assert len(logged) == polls
    assert [r.args[1] for r in logged] == [100, 100, 100, 0]  # type: ignore[index]
    for each in logged:
        total, _, *parts, cpu = each.args  # type: ignore[misc]
        assert total > LONG_PAUSE_S and math.isclose(total, sum(parts))
        assert 0 <= cpu < total  # the real thread's CPU: a ticking clock's turn costs little
    assert sum(r.args[0] for r in logged) == pytest.approx(  # type: ignore[index]
        run.agent._operations({}).loop_pause_seconds.sum)
