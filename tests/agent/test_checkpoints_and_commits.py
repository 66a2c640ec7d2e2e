"""The agent without Kafka: restore (all or nothing, a clear refusal), and the coupling of
checkpoints and commits, with a plain object in place of the Kafka source."""

import json
import os
import re
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from driftwatch.agent.checkpointer import Checkpointer
from driftwatch.agent.loop import BEYOND_LOG_END, FINAL_SAVE_ATTEMPTS, Agent
from driftwatch.agent.readiness import Readiness
from driftwatch.agent.start import kafka_source
from driftwatch.core.events import Event
from driftwatch.core.monitor import Monitor, MonitorConfig
from driftwatch.exits import EXIT_CHECKPOINT, EXIT_INVALID
from driftwatch.kafka.offsets import TopicPartition
from driftwatch.kafka.source import Record
from driftwatch.settings import Settings
from driftwatch.sources import MemorySource
from driftwatch.state.checkpoint import (
    FILENAME,
    CheckpointDirectoryError,
    CheckpointError,
    CheckpointStore,
)


def settings(directory: Path) -> Settings:
    return Settings(checkpoint={"backend": "file", "directory": str(directory)})


def saved_monitor(model: str) -> dict:
    monitor = Monitor(model, MonitorConfig())
    for i in range(50):
        monitor.update(Event(i % 2, i / 50, ts=float(i)))
    return monitor.export_state()


def test_restore_loads_monitors_and_positions(tmp_path: Path) -> None:
    CheckpointStore(tmp_path).save(
        {"offsets": {"events:0": 50}, "monitors": {"a": saved_monitor("a")}}
    )
    agent = Agent(settings(tmp_path))
    agent.restore()
    assert agent.monitors.get("a").events == 50
    assert agent.positions.offsets == {("events", 0): 50}


def test_an_unreadable_monitor_state_is_refused_and_nothing_is_loaded(tmp_path: Path) -> None:
    bad = saved_monitor("b") | {"version": 99}
    CheckpointStore(tmp_path).save(
        {"offsets": {"events:0": 50}, "monitors": {"a": saved_monitor("a"), "b": bad}}
    )
    agent = Agent(settings(tmp_path))
    with pytest.raises(CheckpointError, match="version 99"):
        agent.restore()
    assert len(agent.monitors) == 0 and agent.positions.offsets == {}


def test_last_processed_time_moves_only_with_a_model_s_events(tmp_path: Path) -> None:
    now = [1000.0]
    agent = Agent(settings(tmp_path), snapshot_interval_s=0.0, wall_clock=lambda: now[0])
    CheckpointStore(tmp_path).save({"offsets": {}, "monitors": {"a": saved_monitor("a")}})
    agent.restore()
    agent._publish_snapshot()
    # Restored and silent: the time the agent first published it (its start).
    assert dict(agent.snapshot.last_processed) == {"a": 1000.0}
    now[0] = 1100.0
    agent.monitors.get("b").update(Event(1, 0.9, ts=1.0))
    agent._publish_snapshot()
    assert dict(agent.snapshot.last_processed) == {"a": 1000.0, "b": 1100.0}
    now[0] = 1200.0
    agent.monitors.get("a").update(Event(0, 0.1, ts=2.0))
    agent._publish_snapshot()
    assert dict(agent.snapshot.last_processed) == {"a": 1200.0, "b": 1100.0}


# ------------------------------------------------------------------------------------------
# The checkpoint/commit coupling, with plain objects in place of Kafka


class Clock:
    """A monotonic clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Source:
    """What the agent asks of its source when it checkpoints and publishes: commits recorded."""

    def __init__(self) -> None:
        self.commits_made: list[dict[TopicPartition, int]] = []
        self.ready = self.reachable = True
        self.reachability_changed_at = 0.0
        self.problem: str | None = None
        self.commits = self.commit_failures = self.reconnects = 0

    def commit(self, offsets: dict[TopicPartition, int]) -> bool:
        self.commits_made.append(dict(offsets))
        self.commits += 1
        return True

    def lag(self, *, refresh: bool = True) -> dict[tuple[str, int], int]:
        return {}


class DeadLetters:
    def __init__(self, deliver: bool) -> None:
        self.deliver = deliver
        self.sent: list[Record] = []
        self.failed = 0

    def send(self, record: Record, rejected: object) -> None:
        self.sent.append(record)

    def flush(self, timeout_s: float | None = None) -> bool:
        return self.deliver


def event(offset: int, model: str = "m", partition: int = 0, value: bytes | None = None) -> Record:
    data = value if value is not None else json.dumps(
        {"model": model, "label": offset % 2, "score": (offset % 10) / 10}).encode()
    return Record("events", partition, offset, None, data, 1_700_000_000_000 + offset)


def make_agent(directory: Path, clock: Clock, **checkpoint: Any) -> tuple[Agent, Source]:
    agent = Agent(Settings(checkpoint={"backend": "file", "directory": str(directory),
                                       **checkpoint}), clock=clock)
    source = Source()
    agent.source = source  # type: ignore[assignment]
    return agent, source


def break_saves(directory: Path) -> None:
    """A real failure of the next save: a directory where the checkpoint file goes, so the
    atomic rename fails (IsADirectoryError), whoever runs the test (root included)."""
    path = directory / FILENAME
    if path.exists():
        path.unlink()
    path.mkdir()
    (path / "keep").write_text("x")


def test_a_commit_follows_a_save_and_carries_exactly_the_saved_offsets(tmp_path: Path) -> None:
    clock = Clock()
    agent, source = make_agent(tmp_path, clock)
    for offset in range(40):
        agent.process(event(offset, partition=offset % 2))
    assert not agent.checkpointer.due() and source.commits_made == []
    clock.now += agent.checkpointer.interval_s
    assert agent.checkpointer.due()
    assert agent.checkpoint()
    saved = CheckpointStore(tmp_path).load()
    assert saved is not None
    assert saved["offsets"] == {"events:0": 39, "events:1": 40}
    assert source.commits_made == [{TopicPartition("events", 0): 39,
                                    TopicPartition("events", 1): 40}]
    assert saved["monitors"]["m"]["events"] == 40
    assert not agent.checkpointer.due()


def test_nothing_consumed_is_never_saved_but_restored_offsets_are_committed(
        tmp_path: Path) -> None:
    """No save while nothing was consumed since the last one or the restore (an agent that
    never reached its brokers writes nothing, at its stop neither); the offsets the store
    already covers are committed all the same, so the group's commit catches up with a
    restored checkpoint at once (the kill tests' final runs need it). Fails if the agent
    saves on schedule whatever it consumed."""
    clock = Clock()
    agent, source = make_agent(tmp_path, clock)
    for _ in range(3):
        clock.now += agent.checkpointer.interval_s
        assert agent.checkpointer.due() and agent.checkpoint()
    assert agent._final_checkpoint(source)
    assert not (tmp_path / FILENAME).exists() and agent.checkpointer.saves == 0
    assert not agent.checkpointer.due(), "the next one is an interval away"

    agent.process(event(0))
    agent.process(event(1))
    clock.now += agent.checkpointer.interval_s
    assert agent.checkpoint() and agent.checkpointer.saves == 1
    written = (tmp_path / FILENAME).stat().st_mtime_ns

    restarted, source = make_agent(tmp_path, clock)
    restarted.restore()
    clock.now += restarted.checkpointer.interval_s
    assert restarted.checkpoint() and restarted._final_checkpoint(source)
    assert restarted.checkpointer.saves == 0
    assert (tmp_path / FILENAME).stat().st_mtime_ns == written, "not written again"
    assert source.commits_made == [{TopicPartition("events", 0): 2}] * 2


def test_a_failing_save_is_retried_with_backoff_counted_not_ready_and_never_committed(
    tmp_path: Path,
) -> None:
    clock = Clock()
    agent, source = make_agent(tmp_path, clock)
    agent.readiness.update(True)
    for offset in range(10):
        agent.process(event(offset))
    assert agent.checkpoint() and len(source.commits_made) == 1
    agent._update_readiness()
    assert agent.ready

    break_saves(tmp_path)
    for offset in range(10, 20):
        agent.process(event(offset))
    delays = []
    for _ in range(4):
        clock.now += 1000
        assert not agent.checkpoint()
        delays.append(agent.checkpointer._due_at - clock.now)
    assert delays == [1.0, 2.0, 4.0, 8.0], "retried with backoff"
    assert source.commits_made == [{TopicPartition("events", 0): 10}], "never committed"
    assert agent.checkpointer.durable == {TopicPartition("events", 0): 10}
    assert not agent.ready and not agent.snapshot.ready, "/readyz and the metric agree at once"
    agent.publish_now()
    operations = agent.snapshot.operations
    assert operations.checkpoint_save_failures == 4 and operations.checkpoint_saves == 1
    assert operations.not_ready == {"checkpoint"}
    assert "IsADirectoryError" in (agent.checkpointer.last_error or "")

    (tmp_path / FILENAME / "keep").unlink()
    (tmp_path / FILENAME).rmdir()  # the disk is back
    clock.now += 1000
    assert agent.checkpoint()
    assert source.commits_made[-1] == {TopicPartition("events", 0): 20}
    assert agent.ready and not agent.checkpointer.failing


def test_the_final_checkpoint_failing_commits_nothing(tmp_path: Path) -> None:
    agent, source = make_agent(tmp_path, Clock())
    agent.process(event(0))
    break_saves(tmp_path)
    assert not agent._final_checkpoint(source)
    assert source.commits_made == []
    assert agent.checkpointer.failures == FINAL_SAVE_ATTEMPTS


def test_no_checkpoint_while_dead_letters_are_undelivered(tmp_path: Path) -> None:
    clock = Clock()
    agent, source = make_agent(tmp_path, clock)
    dead = DeadLetters(deliver=False)
    agent.dead_letter = dead  # type: ignore[assignment]
    agent.process(event(0, value=b"not json"))
    assert len(dead.sent) == 1
    assert not agent.checkpoint()
    assert source.commits_made == [] and not (tmp_path / FILENAME).exists()
    dead.deliver = True
    clock.now += agent.checkpointer.interval_s
    assert agent.checkpoint()
    assert source.commits_made == [{TopicPartition("events", 0): 1}]


def test_a_long_save_stretches_the_interval(tmp_path: Path) -> None:
    clock = Clock()

    class SlowStore(CheckpointStore):
        def save(self, payload: Any) -> Path:
            clock.now += 3.0  # this save takes 3 s
            return super().save(payload)

    checkpointer = Checkpointer(SlowStore(tmp_path), 5.0, clock=clock)
    assert checkpointer.save(lambda: {"x": 1}, {})
    assert checkpointer.last_save_seconds == 3.0
    assert checkpointer._due_at == clock.now + 3.0 / Checkpointer.MAX_SAVE_SHARE  # not + 5 s


def test_without_checkpoints_offsets_are_committed_on_the_same_schedule(tmp_path: Path) -> None:
    clock = Clock()
    agent = Agent(Settings(checkpoint={"enabled": False, "directory": str(tmp_path / "no")}),
                  clock=clock)
    source = Source()
    agent.source = source  # type: ignore[assignment]
    agent.process(event(0))
    clock.now += agent.checkpointer.interval_s
    assert agent.checkpointer.due() and agent.checkpoint()
    assert source.commits_made == [{TopicPartition("events", 0): 1}]
    assert not (tmp_path / "no").exists()
    assert agent.snapshot.operations.checkpoint_saves == 0


def test_rejection_counts_survive_a_restart(tmp_path: Path) -> None:
    agent, _ = make_agent(tmp_path, Clock())
    for offset, value in enumerate([b"not json", b"{}", b"not json"]):
        agent.process(event(offset, value=value))
    assert agent.checkpoint()
    restarted, _ = make_agent(tmp_path, Clock())
    restarted.restore()
    assert restarted.rejections.rejected["not_json"] == 2
    assert restarted.rejections.rejected["missing_field"] == 1
    assert restarted.rejections.rejected == agent.rejections.rejected


def test_other_models_are_skipped_counted_and_the_count_survives_a_restart(
    tmp_path: Path,
) -> None:
    def only_a() -> Agent:
        agent = Agent(Settings(checkpoint={"backend": "file", "directory": str(tmp_path)},
                               events={"only_models": ["a"]}), clock=Clock())
        agent.source = Source()  # type: ignore[assignment]
        return agent

    agent = only_a()
    for offset, model in enumerate(["a", "b", "b", "a", "c"]):
        agent.process(event(offset, model=model))
    agent.process(event(5, value=b"not json"))  # malformed: rejected, whatever its model
    assert agent.monitors.get("a") is not None and agent.monitors.get("a").events == 2
    assert len(agent.monitors) == 1, "no monitor for a skipped model"
    assert agent.rejections.skipped == {"unwatched_model": 3}
    assert agent.rejections.rejected["not_json"] == 1 and agent.positions.offsets == {
        TopicPartition("events", 0): 6}, "skipped records advance the offset"
    agent.publish_now()
    assert agent.snapshot.skipped == {"unwatched_model": 3}
    assert agent.checkpoint()
    restarted = only_a()
    restarted.restore()
    assert restarted.rejections.skipped == {"unwatched_model": 3}


def test_only_partitions_the_checkpoint_covers_get_an_offset(tmp_path: Path) -> None:
    agent, _ = make_agent(tmp_path, Clock())
    agent.process(event(0, partition=1))
    assert agent._on_assigned({TopicPartition("events", 0), TopicPartition("events", 1)}) == {
        TopicPartition("events", 1): 1
    }


def test_a_position_that_jumps_back_is_counted(tmp_path: Path) -> None:
    agent, _ = make_agent(tmp_path, Clock())
    for offset in (0, 1, 2, 0, 1):
        agent.process(event(offset))
    agent.publish_now()
    assert agent.snapshot.operations.offset_resets == {("events", 0, BEYOND_LOG_END): 1}
    assert agent.monitors.get("m").events == 5, "the new log's records are new events"


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        ({"monitors": {}}, "'offsets' must be an object, got nothing"),
        ({"offsets": {}}, "'monitors' must be an object, got nothing"),
        ({"offsets": [["events:0", 5]], "monitors": {}}, "'offsets' must be an object, got a list"),
        ({"offsets": {}, "monitors": []}, "'monitors' must be an object, got a list"),
        ({"offsets": {"events:0": "5"}, "monitors": {}}, "offsets"),
        ({"offsets": {"events": 5}, "monitors": {}}, "offsets"),
        ({"offsets": {}, "monitors": {"a": "state"}}, "monitor 'a' must be an object"),
        ({"offsets": {}, "monitors": {"a": {"window": 5}}}, "monitor state"),
        ({"offsets": {}, "monitors": {}, "rejected": {"invalid_json": -1}}, "rejected"),
        ({"offsets": {}, "monitors": {}, "rejected": ["invalid_json"]}, "rejected"),
        ({"offsets": {}, "monitors": {}, "skipped": {"unwatched_model": True}}, "skipped"),
        ({"offsets": {}, "monitors": {}, "skipped": []}, "'skipped' must be an object"),
    ],
)
def test_a_malformed_payload_is_a_clean_refusal(
    tmp_path: Path, payload: dict[str, Any], message: str
) -> None:
    CheckpointStore(tmp_path).save(payload)
    agent = Agent(settings(tmp_path))
    with pytest.raises(CheckpointError, match=re.escape(message)):
        agent.restore()
    assert len(agent.monitors) == 0 and agent.positions.offsets == {}


def test_an_unwritable_checkpoint_directory_is_found_at_construction(tmp_path: Path) -> None:
    afile = tmp_path / "a-file"
    afile.write_text("")
    with pytest.raises(CheckpointDirectoryError, match="a-file"):
        Agent(settings(afile))
    with pytest.raises(CheckpointDirectoryError, match="a-file"):
        Agent(settings(afile / "below"))


def test_readiness_needs_failures_and_successes_to_last() -> None:
    clock = Clock()
    readiness = Readiness(not_ready_after_s=10, ready_after_s=10, clock=clock)
    assert not readiness.update(False)
    assert readiness.update(True), "at start, ready as soon as the source is"
    for step, raw in enumerate([False, True] * 5):  # a flapping source
        clock.now += 4
        assert readiness.update(raw), f"step {step}: no failure lasted 10 s"
    clock.now += 4
    readiness.update(False)
    clock.now += 9.9
    assert readiness.update(False)
    clock.now += 0.1
    assert not readiness.update(False)
    for raw in [True, False] * 3:
        clock.now += 4
        assert not readiness.update(raw), "successes must last 10 s"
    readiness.update(True)
    clock.now += 10
    assert readiness.update(True)


def test_readiness_dates_an_outage_from_the_first_failed_request() -> None:
    """A probe that failed after its 5 s timeout began the outage 5 s earlier."""
    clock = Clock()
    readiness = Readiness(not_ready_after_s=5, ready_after_s=10, clock=clock)
    assert readiness.update(True)
    clock.now += 30
    assert not readiness.update(False, since=clock.now - 5.0)


def run_cli(tmp_path: Path, checkpoint: dict[str, Any]) -> tuple[int, str]:
    """``driftwatch run`` as a process, up to the point where it would reach for Kafka:
    opening the checkpoint directory and restoring the checkpoint come first."""
    config = tmp_path / "driftwatch.yaml"
    config.write_text(json.dumps({"checkpoint": checkpoint, "metrics": {"port": 0,
                                                                       "host": "127.0.0.1"}}))
    environment = {k: v for k, v in os.environ.items() if not k.startswith("DRIFTWATCH_")}
    done = subprocess.run([sys.executable, "-m", "driftwatch", "run", "--config", str(config)],
                          capture_output=True, text=True, timeout=60, env=environment)
    return done.returncode, done.stderr


@pytest.mark.parametrize("payload", [{"monitors": {}}, {"offsets": [], "monitors": {}},
                                     {"offsets": {}, "monitors": {"m": {"window": None}}}])
def test_run_refuses_a_malformed_checkpoint_with_exit_3_and_no_traceback(
    tmp_path: Path, payload: dict[str, Any]
) -> None:
    state = tmp_path / "state"
    CheckpointStore(state).save(payload)
    before = (state / FILENAME).read_bytes()
    code, stderr = run_cli(tmp_path, {"backend": "file", "directory": str(state)})
    assert code == EXIT_CHECKPOINT, stderr
    assert "cannot restore the checkpoint" in stderr and str(state / FILENAME) in stderr
    assert "Traceback" not in stderr
    assert (state / FILENAME).read_bytes() == before


def test_run_refuses_an_unwritable_checkpoint_directory_like_a_bad_setting(
    tmp_path: Path,
) -> None:
    afile = tmp_path / "state"
    afile.write_text("")
    code, stderr = run_cli(tmp_path, {"backend": "file", "directory": str(afile)})
    assert code == EXIT_INVALID
    assert stderr.startswith("checkpoint.directory (DRIFTWATCH_CHECKPOINT__DIRECTORY): ")
    assert str(afile) in stderr and "Traceback" not in stderr


def test_readyz_and_the_ready_metric_come_from_one_snapshot(tmp_path: Path) -> None:
    """/readyz and driftwatch_ready answer from the same published snapshot, so they never
    disagree: while the loop is held in the middle of publishing a readiness change (a
    checkpoint save failed), the HTTP threads still answer the old state, both of them; once
    it is published, the new one, both of them (and the 503 names its reason, and why)."""
    config = Settings(checkpoint={"backend": "file", "directory": str(tmp_path)},
                      metrics={"host": "127.0.0.1", "port": 0})
    agent = Agent(config, source=lambda hook: MemorySource([event(0)], on_assigned=hook))

    def answers() -> tuple[int, float | None, str]:
        try:
            with urllib.request.urlopen(f"{url}/readyz", timeout=10) as response:
                status, body = response.status, response.read().decode()
        except urllib.error.HTTPError as error:
            status, body = error.code, error.read().decode()
        with urllib.request.urlopen(f"{url}/metrics", timeout=10) as response:
            text = response.read().decode()
        ready = [sample.value for family in text_string_to_metric_families(text)
                 for sample in family.samples if sample.name == "driftwatch_ready"]
        return status, ready[0] if ready else None, body

    with ExitStack() as resources:
        source = agent._start(resources)
        assert agent.metrics_server is not None
        url = agent.metrics_server.url.removesuffix("/metrics")
        agent.process_batch(source.poll())
        agent._update_readiness()
        assert answers() == (200, 1.0, "ready")

        publishing, release = threading.Event(), threading.Event()
        latest = agent.monitors.latest

        def held() -> Any:
            publishing.set()
            assert release.wait(30)
            return latest()

        agent.monitors.latest = held  # type: ignore[method-assign]
        break_saves(tmp_path)
        saving = threading.Thread(target=agent.checkpoint)
        saving.start()
        try:
            assert publishing.wait(30), "the failed save did not publish its readiness"
            assert answers() == (200, 1.0, "ready"), "the old state until it is published"
        finally:
            release.set()
            saving.join(30)
        status, ready, body = answers()
        assert (status, ready) == (503, 0.0)
        assert body.startswith("not ready: checkpoint: the last save failed (IsADirectoryError")
        assert body.endswith("; nothing is committed until a save succeeds"), body


def test_the_first_contact_checks_every_topic_the_agent_uses_unless_through_a_proxy(
        tmp_path: Path) -> None:
    """The first contact's handshakes connect directly: through a proxy
    (kafka.client_options.proxy_url) they would find no broker, so they are skipped."""
    settings = {"kafka": {"topics": ["scores"], "group_id": "g", "dead_letter_topic": "bad",
                          "alarms_topic": "alarms"}}
    agent = Agent(Settings(**settings))
    source = kafka_source(agent.settings, agent.checkpointer.store, agent._on_assigned,
                          agent._on_revoked)
    assert source.first_contact is not None and source.first_contact.group == "g"
    assert [(use.topic, use.setting, sorted(use.needs), use.role)
            for use in source.first_contact.uses] == [
        ("scores", "kafka.topics", ["READ"], "input"),
        ("g-state", "checkpoint.topic", ["READ", "WRITE"], "state"),
        ("bad", "kafka.dead_letter_topic", ["WRITE"], "output"),
        ("alarms", "kafka.alarms_topic", ["WRITE"], "output")]
    settings["kafka"]["client_options"] = {"proxy_url": "socks5://127.0.0.1:1080"}
    proxied = kafka_source(Settings(**settings), None, lambda partitions: None, None)
    assert proxied.first_contact is None
