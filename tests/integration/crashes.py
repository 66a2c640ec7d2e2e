"""SIGKILL a real ``driftwatch run`` at random moments and check that nothing was lost.

Shared by the short test (tests/integration/test_kills.py) and the long benchmark
(benchmarks/kills.py). One :class:`KillRun` produces a seeded stream of three models (with
drift, and a few invalid records) slowly into a one-partition topic of a real broker, runs the
agent as a process with the **default checkpoint settings**, kills it with SIGKILL again and
again, restarts it each time, then lets a last run finish the stream and stop cleanly.

Kill moments, in turn:

- ``early``: as soon as the agent has processed records it had not saved yet, before its
  first checkpoint save of this run where possible: the window the 5 s/30 s commit/save
  mismatch of earlier versions lost (its loss showed as ``lost`` here);
- ``save``: while a save is under way that replaces an existing checkpoint (the state
  directory holds the save's temporary file); a kill counts as *confirmed* mid-save when that
  file is still there after the process died;
- ``random``: a uniformly random moment 2 to 12 s after the agent is ready.

After every kill the invariant is checked directly: the group's committed offset is never
past the offset of the checkpoint on disk. At the end, the final checkpoint and every
monitor-state sample of ``/metrics`` must equal an offline reference: the pure
:class:`~driftwatch.core.monitor.Monitor` fed the same records once each.

Group timing: kills wait until the agent is ready (Tansu can keep a group stuck when a member
dies during its join), and a SIGKILLed member keeps its partition until its session times out,
so the restarts use ``session_timeout_ms=3000`` to keep them short.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kafka import TopicPartition as KafkaTopicPartition
from kafka.admin import KafkaAdminClient
from prometheus_client import CollectorRegistry, generate_latest

from driftwatch.agent.loop import TOO_MANY_MODELS
from driftwatch.core.monitor import Monitor
from driftwatch.decoding.decoder import REJECTION_REASONS, Decoded, decode
from driftwatch.settings import Settings
from driftwatch.simulate import generate
from driftwatch.sinks.prometheus.collector import SnapshotCollector
from driftwatch.sinks.snapshot import AgentSnapshot
from driftwatch.state.checkpoint import FILENAME
from tests.integration.helpers import (
    TOPIC,
    AgentProcess,
    Labels,
    Metrics,
    agent_settings,
    create_topics,
    event_json,
    produce,
    wait_for,
)

KINDS = ("early", "save", "random")

MONITORING = {
    "defaults": {
        # A larger window than the default makes each save last long enough (milliseconds:
        # about 1 MB written and fsynced) for a kill to land inside it; AUC, error-stream and
        # normalized G-mean detectors as usual.
        "window_size": 20_000,
        "sample_every": 25,
    }
}


def stream(seed: int, per_model: int) -> list[bytes]:
    """Three models interleaved (a sudden AUC drop, a gradual one, a stationary one), and one
    invalid record every 997 events, so rejection counts are part of the state too."""
    parts = [
        [event_json(e, "drop") for e in generate("sudden_auc_drop", seed=seed, length=per_model,
                                                 auc=0.95, drop=0.3)],
        [event_json(e, "slide") for e in generate("gradual_auc_drop", seed=seed + 1,
                                                  length=per_model, auc=0.9, drop=0.3)],
        [event_json(e, "steady") for e in generate("stationary", seed=seed + 2,
                                                   length=per_model)],
    ]
    values: list[bytes] = []
    for i, triple in enumerate(zip(*parts, strict=True)):
        values.extend(triple)
        if i % 997 == 996:
            values.append(b'{"model": "drop", "label": 1, "score": "high"}')
    return values


@dataclass(frozen=True)
class Reference:
    """What an agent that never stopped must end with, computed offline."""

    state: dict[tuple[str, Labels], float]
    """The monitor-state samples of ``/metrics`` (``Metrics.state``)."""
    monitors: dict[str, str]
    """Each model's ``Monitor.export_state()`` as canonical JSON (NaN compares equal)."""
    processed: int


def reference(values: Sequence[bytes], settings: Settings) -> Reference:
    """Feed every record once, in order, to the pure monitors, as the agent's loop does."""
    event_format = settings.events.event_format()
    monitors: dict[str, Monitor] = {}
    rejected = dict.fromkeys((*REJECTION_REASONS, TOO_MANY_MODELS), 0)
    for value in values:
        result = decode(value, None, event_format)
        if isinstance(result, Decoded):
            monitor = monitors.get(result.model)
            if monitor is None:
                config = settings.monitoring.monitor_config(result.model)
                monitor = monitors[result.model] = Monitor(result.model, config)
            monitor.update(result.event)
        else:
            rejected[result.reason] += 1
    snapshot = AgentSnapshot(monitors=tuple(m.snapshot() for m in monitors.values()),
                             rejected=rejected, consumer_lag={}, ready=True, started_time=0.0)
    registry = CollectorRegistry()
    registry.register(SnapshotCollector(lambda: snapshot))
    state = Metrics.parse(generate_latest(registry).decode()).state()
    return Reference(state, {model: canonical(m.export_state()) for model, m in monitors.items()},
                     sum(m.events for m in monitors.values()))


def canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, allow_nan=True)


@dataclass
class Kill:
    kind: str
    seconds_after_ready: float
    before_first_save: bool = False
    """No checkpoint was saved by this run yet when it was killed."""
    mid_save: bool = False
    """The save's temporary file outlived the process: killed inside a save."""
    checkpoint_offset: int | None = None
    committed_offset: int | None = None


@dataclass
class KillReport:
    kills: list[Kill] = field(default_factory=list)
    expected: int = 0
    processed: int = 0
    seconds: float = 0.0

    @property
    def lost(self) -> int:
        return max(0, self.expected - self.processed)

    @property
    def double_counted(self) -> int:
        return max(0, self.processed - self.expected)

    def count(self, predicate: Callable[[Kill], bool]) -> int:
        return sum(1 for kill in self.kills if predicate(kill))


class KillRun:
    """One stream, one agent (restarted after each kill), one group, one state directory;
    a context manager that kills the agent on leaving."""

    def __init__(self, bootstrap: str, directory: Path, port: int, *, seed: int,
                 per_model: int, produce_seconds: float, topic: str = TOPIC,
                 group: str = "killed", log: Callable[[str], None] = lambda line: None) -> None:
        self.bootstrap = bootstrap
        self.topic = topic
        self.group = group
        self.rng = random.Random(seed)
        self.values = stream(seed, per_model)
        self.produce_seconds = produce_seconds
        self.state_dir = directory / "killed-state"
        self.log = log
        settings = agent_settings(bootstrap, port=port, group=group,
                                  checkpoint_dir=self.state_dir, topic=topic,
                                  overrides={"monitoring": MONITORING,
                                             "kafka": {"session_timeout_ms": 3000}})
        # The default checkpoint settings: only the directory is the test's.
        settings["checkpoint"] = {"backend": "file", "directory": str(self.state_dir)}
        self.settings = settings
        self.agent = AgentProcess(settings, directory, "killed")
        self.report = KillReport(expected=len(self.values) - self._invalid())
        self._producing: threading.Thread | None = None
        self._produce_errors: list[BaseException] = []

    def __enter__(self) -> KillRun:
        return self

    def __exit__(self, *exc_info: object) -> None:
        """The agent does not outlive the run, whatever ended it (a failed assertion)."""
        self.agent.kill()

    def _invalid(self) -> int:
        return sum(1 for v in self.values if b'"high"' in v)

    # -- the stream ---------------------------------------------------------------------------

    def start_producing(self, part: slice = slice(None)) -> None:
        """Produce ``part`` of the stream (all of it by default) over ``produce_seconds``;
        parts are produced in the order of the calls, and each call waits for the one
        before to end."""
        if self._producing is None:
            create_topics(self.bootstrap, self.topic)
        else:
            self._producing.join(timeout=300)
        values = self.values[part]
        chunks = max(1, int(self.produce_seconds / 0.25))
        size = -(-len(values) // chunks)

        def run() -> None:
            try:
                for start in range(0, len(values), size):
                    produce(self.bootstrap, self.topic, values[start:start + size])
                    time.sleep(0.25)
            except BaseException as error:  # reported by finish()
                self._produce_errors.append(error)

        self._producing = threading.Thread(target=run, daemon=True)
        self._producing.start()

    # -- kills --------------------------------------------------------------------------------

    def kill_once(self, kind: str) -> Kill:
        """Start (or restart) the agent, wait until it is ready, kill it the ``kind`` way."""
        agent = self.agent
        agent.start()
        agent.wait_ready()
        ready_at = time.monotonic()
        kill = Kill(kind, 0.0)
        if kind == "early":
            restored = agent.scrape().total("driftwatch_events_processed_total")
            # Unless the stream has ended and the checkpoint covers it all.
            with contextlib.suppress(AssertionError):
                wait_for(lambda: agent.scrape().total("driftwatch_events_processed_total")
                         > restored, 10.0, "new records to be processed")
            kill.before_first_save = self._saves() == 0
            self._kill(kill, ready_at)
        elif kind == "save":
            self._kill_during_save(kill, ready_at)
        else:
            time.sleep(self.rng.uniform(2.0, 12.0))
            kill.before_first_save = self._saves() == 0
            self._kill(kill, ready_at)
        self._check_invariant(kill)
        self.report.kills.append(kill)
        self.log(f"kill {len(self.report.kills)} ({kind}) {kill.seconds_after_ready:.2f} s "
                 f"after ready: checkpoint at {kill.checkpoint_offset}, committed "
                 f"{kill.committed_offset}, before first save {kill.before_first_save}, "
                 f"mid-save {kill.mid_save}")
        return kill

    def kill_mid_save(self, attempts: int = 4) -> Kill:
        """Kill during saves until one kill is confirmed inside a save, at most ``attempts``
        times while the stream still flows; return the last kill.

        One attempt does not always land inside: the temporary file lives only for the write
        and fsync of the checkpoint (about 1 MB: milliseconds), and this process's poll
        competes for the GIL with its producer thread, whose switch interval is 5 ms. Every
        attempt is a real kill, checked and reported like the others.
        """
        kill = self.kill_once("save")
        for _ in range(attempts - 1):
            if kill.mid_save or not self.producing:
                break
            kill = self.kill_once("save")
        return kill

    @property
    def producing(self) -> bool:
        """The stream is still being produced."""
        return self._producing is not None and self._producing.is_alive()

    def _saves(self) -> float:
        return self.agent.scrape().total("driftwatch_checkpoint_saves_total")

    def _kill(self, kill: Kill, ready_at: float) -> None:
        assert self.agent.proc is not None and self.agent.running, self.agent.log()
        self.agent.proc.send_signal(signal.SIGKILL)
        kill.seconds_after_ready = time.monotonic() - ready_at
        self.agent.proc.wait(timeout=10)

    def _kill_during_save(self, kill: Kill, ready_at: float) -> None:
        # Poll the directory for the save's temporary file and kill at first sight. The file
        # lives for milliseconds; the poll reacts within about a millisecond unless another
        # thread holds the GIL (kill_mid_save retries). Only a save that replaces a
        # checkpoint counts, one that covers records this run processed when the stream
        # allows it: that checkpoint must survive the kill.
        restored = self.saved_offset()
        try:
            wait_for(lambda: self.saved_offset() > restored, 15.0, "a checkpoint of progress",
                     interval_s=0.05)
        except AssertionError:  # nothing left to process, so nothing to save: a plain kill
            self._kill(kill, ready_at)
            return
        deadline = time.monotonic() + 20.0
        quiet_since: float | None = None
        while time.monotonic() < deadline:
            if any(name.endswith(".tmp") for name in os.listdir(self.state_dir)):
                self._kill(kill, ready_at)
                kill.mid_save = any(n.endswith(".tmp") for n in os.listdir(self.state_dir))
                return
            if self._producing is not None and not self.producing:
                # The stream ended: once three save intervals pass with no save, everything
                # read is saved and nothing is left to save, so this is a plain kill.
                quiet_since = quiet_since or time.monotonic()
                if time.monotonic() - quiet_since > 3 * 5.0:
                    self._kill(kill, ready_at)
                    return
            time.sleep(0.0005)
        raise AssertionError(f"no checkpoint save seen in 20 s\n{self.agent.log()}")

    def saved_offset(self) -> int:
        """The offset the checkpoint on disk covers (0 when there is none, or none yet for
        the partition)."""
        try:
            payload = json.loads((self.state_dir / FILENAME).read_text())["payload"]
        except (OSError, ValueError):
            return 0
        return int(payload["offsets"].get(f"{self.topic}:0", 0))

    def committed(self) -> int | None:
        """The group's committed offset of the partition (None: nothing committed)."""
        admin = KafkaAdminClient(bootstrap_servers=self.bootstrap)
        try:
            answer = admin.list_group_offsets(
                {self.group: [KafkaTopicPartition(self.topic, 0)]})[self.group]
        finally:
            admin.close()
        committed = [o.offset for o in answer.values() if o.offset is not None and o.offset >= 0]
        return committed[0] if committed else None

    def _check_invariant(self, kill: Kill) -> None:
        """The group's commit never passes what the checkpoint on disk covers."""
        path = self.state_dir / FILENAME
        if path.exists():
            offsets = json.loads(path.read_text())["payload"]["offsets"]
            kill.checkpoint_offset = offsets.get(f"{self.topic}:0")
        kill.committed_offset = self.committed()
        if kill.committed_offset is not None:
            assert kill.checkpoint_offset is not None and \
                kill.committed_offset <= kill.checkpoint_offset, (kill, self.agent.log())

    # -- the end ------------------------------------------------------------------------------

    def finish(self) -> tuple[Metrics, dict[str, Any]]:
        """Let the stream end, run the agent to its end, stop it cleanly; return its last
        scrape and checkpoint payload."""
        assert self._producing is not None
        self._producing.join(timeout=300)
        assert not self._produce_errors, self._produce_errors
        agent = self.agent
        if not agent.running:
            agent.start()
        total = len(self.values)

        def handled(metrics: Metrics) -> bool:
            return (metrics.total("driftwatch_events_processed_total")
                    + metrics.total("driftwatch_events_rejected_total")) >= total

        agent.wait_metrics(handled, f"all {total} records handled", timeout_s=120)
        time.sleep(1.5)  # anything counted twice would show now
        # A save and its commit after the end, and the lag re-measured since the end: the
        # agent measures it at most every readiness.probe_interval_seconds (5 s), so a
        # scrape right after a long catch-up can still show the lag of its middle.
        lag = {"topic": self.topic, "partition": "0", "group": self.group}

        def settled(metrics: Metrics) -> bool:
            return (metrics.total("driftwatch_commits_total") >= 1
                    and metrics.get("driftwatch_consumer_lag_records", **lag) == 0)

        metrics = agent.wait_metrics(settled, "a checkpoint, a commit and a lag of 0")
        code, _ = agent.stop(signal.SIGTERM)
        assert code == 0, agent.log()
        payload = json.loads((self.state_dir / FILENAME).read_text())["payload"]
        self.report.processed = int(metrics.total("driftwatch_events_processed_total"))
        return metrics, payload


def assert_equal_to_reference(metrics: Metrics, payload: Mapping[str, Any],
                              expected: Reference, topic: str, total: int) -> None:
    got = metrics.state()
    assert got.keys() == expected.state.keys()
    different = {key: (got[key], value) for key, value in expected.state.items()
                 if got[key] != value}
    assert not different, f"/metrics != reference (got, want): {different}"
    assert payload["offsets"] == {f"{topic}:0": total}
    assert {model: canonical(state) for model, state in payload["monitors"].items()} == \
        expected.monitors
    assert sum(payload["rejected"].values()) == total - expected.processed
