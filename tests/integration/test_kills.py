"""SIGKILL with the default checkpoint settings loses nothing and counts nothing twice.

The short version of benchmarks/kills.py (20 kills and more, with the loss count printed):
five kills of a real ``driftwatch run`` while a three-model stream arrives (more when the
first save kill misses the save and is retried), the kinds of tests/integration/crashes.py
(inside the first checkpoint interval, during a save, at a random moment), then a last run
to the end of the stream. The final checkpoint
and every monitor-state sample of ``/metrics`` must equal the pure monitors fed the same
records once; after every kill the group's commit must not be past the checkpoint on disk.

Then the same promises with a checkpoint save that fails for real (the state directory
replaced by a file: every save fails with ENOTDIR): the failure is counted and shown on
``/readyz``, nothing is committed while it lasts, SIGTERM exits 4 without committing, a
start with the directory still broken is refused like a bad setting (exit 2), and once the
directory is back the agent resumes from its last good checkpoint and ends exact.
"""

from __future__ import annotations

import json
import signal
from pathlib import Path

from driftwatch.exits import EXIT_INVALID, EXIT_SAVE_FAILED
from driftwatch.settings import Settings
from driftwatch.state.checkpoint import FILENAME
from tests.broker import Broker, free_port
from tests.integration.crashes import (
    MONITORING,
    KillRun,
    assert_equal_to_reference,
    reference,
)
from tests.integration.helpers import JOIN_S, wait_for


def test_sigkill_at_random_moments_with_default_settings_loses_nothing(
    broker: Broker, tmp_path: Path
) -> None:
    run = KillRun(broker.bootstrap, tmp_path, free_port(), seed=31, per_model=5000,
                  produce_seconds=35.0, log=print)
    run.start_producing()
    # The first save kill comes while the stream still flows, and is retried until one lands
    # inside a save (a later one may find the stream ended and everything saved: then it is
    # a plain kill).
    run.kill_mid_save()
    for kind in ("early", "random", "early", "save"):
        run.kill_once(kind)
    metrics, payload = run.finish()

    report = run.report
    assert (report.lost, report.double_counted) == (0, 0), report
    assert report.count(lambda k: k.before_first_save) >= 1, report.kills
    assert report.count(lambda k: k.mid_save) >= 1, report.kills
    assert report.count(lambda k: (k.checkpoint_offset or 0) > 0) >= 2, "kills after progress"
    expected = reference(run.values, Settings(monitoring=MONITORING))
    drifts = sum(value for (name, labels), value in expected.state.items()
                 if name == "driftwatch_alarms_total" and ("level", "drift") in labels)
    assert drifts > 0, "real drifts, whose alarms must survive the kills"
    assert_equal_to_reference(metrics, payload, expected, run.topic, len(run.values))

    # The agent's view of itself, from the last run's scrape.
    assert metrics.get("process_resident_memory_bytes") > 0
    assert metrics.get("process_open_fds") > 0
    # Exported; 0 when the last run found the stream read and saved (it then saves nothing:
    # the saves of the runs before are the checkpoint offsets asserted above).
    assert metrics.get("driftwatch_checkpoint_saves_total") is not None
    assert metrics.get("driftwatch_checkpoint_save_failures_total") == 0
    assert metrics.get("driftwatch_commits_total") >= 1
    assert metrics.get("driftwatch_batch_processing_seconds_count") is not None
    lag = {"topic": run.topic, "partition": "0", "group": run.group}
    assert metrics.get("driftwatch_consumer_lag_records", **lag) == 0
    assert metrics.get("driftwatch_consumer_lag_seconds", **lag) == 0


def test_a_failing_save_commits_nothing_and_the_agent_resumes_exactly(
    broker: Broker, tmp_path: Path
) -> None:
    run = KillRun(broker.bootstrap, tmp_path, free_port(), seed=32, per_model=2000,
                  produce_seconds=1.0)
    half = len(run.values) // 2
    run.start_producing(slice(0, half))
    assert run._producing is not None
    run._producing.join(timeout=60)
    agent, state = run.agent, run.state_dir
    # Run until a checkpoint covers the first half of the stream, then break the directory
    # for real, and produce the rest: saves are made (and fail) only for new records.
    agent.start()
    agent.wait_ready()

    def saved_offset() -> int:
        try:
            return int(json.loads((state / FILENAME).read_text())["payload"]["offsets"]
                       [f"{run.topic}:0"])
        except (OSError, ValueError, KeyError):
            return 0

    wait_for(lambda: saved_offset() >= half, JOIN_S, "a checkpoint past half the stream",
             diagnostics=agent.log)
    aside = tmp_path / "state-aside"
    state.rename(aside)
    state.write_text("not a directory")
    durable = int(json.loads((aside / FILENAME).read_text())["payload"]["offsets"]
                  [f"{run.topic}:0"])
    run.start_producing(slice(half, None))

    failing = agent.wait_metrics(
        lambda m: m.total("driftwatch_checkpoint_save_failures_total") >= 2,
        "two failed saves (retried with backoff)")
    assert failing.get("driftwatch_not_ready", reason="checkpoint") == 1
    wait_for(lambda: agent.readyz() == 503, 5.0, "/readyz 503", diagnostics=agent.log)
    assert run.committed() == durable, "nothing committed past the last good checkpoint"

    code, _ = agent.stop(signal.SIGTERM)
    assert code == EXIT_SAVE_FAILED, agent.log()
    output = agent.output()
    assert "the final checkpoint could not be saved" in output and "Traceback" not in output
    assert run.committed() == durable

    agent.launch()  # the directory is still a file: refused at once, like a bad setting
    assert agent.wait_exit(JOIN_S) == EXIT_INVALID, agent.log()
    assert "checkpoint.directory (DRIFTWATCH_CHECKPOINT__DIRECTORY)" in agent.output()

    state.unlink()
    aside.rename(state)  # the disk is back, with the last good checkpoint
    run.kill_once("random")  # and a kill for good measure
    metrics, payload = run.finish()
    assert (run.report.lost, run.report.double_counted) == (0, 0), run.report
    expected = reference(run.values, Settings(monitoring=MONITORING))
    assert_equal_to_reference(metrics, payload, expected, run.topic, len(run.values))
