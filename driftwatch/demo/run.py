"""The run of ``driftwatch demo``: see driftwatch catch a drift with nothing else running.

The command line, and the checks made before anything starts, are in
:mod:`driftwatch.commands.demo`, which also holds ``driftwatch simulate`` (simulated models fed
to a real cluster, on this module's :class:`_Worker`).

**demo** starts, in this order and inside one :class:`~contextlib.ExitStack`: the embedded
broker (:class:`~driftwatch.demo.broker.EmbeddedBroker`, Tansu on a free loopback port) and its
topic; the agent, in-process on a thread, with settings built here (the embedded broker,
``/metrics`` on ``127.0.0.1:--port``, no checkpoint); and, once the agent has its partition,
a simulated model producing the scenario's events on another thread
(:class:`~driftwatch.demo.feed.Feed`). The main thread prints a progress line every second
and each alarm as it fires (the agent's ``on_alarm`` hook), and at the end a verdict against
the scenario's true change points. With ``--delayed-labels`` the model sends predictions
now and labels later, as separate records the agent joins, with the estimated performance
on, and the verdict gives the lead time of the label-free alarms and of the estimated AUC
over the labelled AUC alarm, and the calibration-drift alarm of a concept change the
estimate cannot see (:mod:`driftwatch.demo.delayed`).
With ``--prometheus`` a real Prometheus scrapes the agent with the chart's alert rules, time
compressed as the story is, and each alert's change of state is printed as it happens
(:mod:`driftwatch.demo.prometheus`; started after the agent serves, stopped before it).

Lifecycle: the demo ends when the scenario's events are all processed, when ``--duration``
has passed, or on Ctrl+C / SIGTERM (exit 0 in all three cases). Leaving the ExitStack then
stops the producer, then the agent through its normal stop path (it commits while the broker
is still up), then the broker, and reaps it. A failure (the broker or the agent dies, the
producer cannot send) is one line on stderr and exit 1, with the same teardown; a port
already in use is one line and exit 1 before anything starts; without the optional broker
(``pip install 'driftwatch-agent[demo]'``) the demo says so and exits 2. A second Ctrl+C
kills the broker and exits at once (130). If the demo itself is killed, the broker gets
SIGKILL from the kernel (see :mod:`driftwatch.demo.broker`).
"""

from __future__ import annotations

import argparse
import dataclasses
import errno
import logging
import os
import queue
import signal
import sys
import threading
import time
from collections.abc import Callable
from contextlib import ExitStack, suppress
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO, TypeVar

from driftwatch.demo import delayed as demo_delayed
from driftwatch.demo.delayed import DelayedDisplay, LabelDelay
from driftwatch.demo.display import Display
from driftwatch.exits import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK
from driftwatch.signals import stop_on_signals
from driftwatch.simulate import SimulatedStream

if TYPE_CHECKING:
    from driftwatch.agent.loop import Agent
    from driftwatch.core.monitor import Alarm, Snapshot
    from driftwatch.demo.broker import EmbeddedBroker
    from driftwatch.demo.feed import Feed
    from driftwatch.demo.prometheus import AlertChange
    from driftwatch.settings import Settings

DEFAULT_SCENARIO = "auc_drop_then_ratio_change"
"""Stable, a sudden AUC drop, then a class-ratio change that must not raise an AUC alarm."""
DEFAULT_RATE = 500.0
"""Events per second (per model): the default scenario's 20 000 events take 40 s, and the
AUC drop is caught about 15 s in."""
DEMO_TOPIC = "driftwatch-demo"
DEMO_MODEL = "demo"
LOOPBACK = "127.0.0.1"
"""The demo's broker and metrics listen on loopback only: it is a local tool."""

PROGRESS_INTERVAL_S = 1.0
SNAPSHOT_INTERVAL_S = 0.25
"""The agent publishes its values this often in the demo (1 s when deployed): alarms, which
arrive at once, wait for the values of their event before they are printed."""
TICK_S = 0.1
"""The main loop's period: how soon an alarm is printed and a Ctrl+C is acted on."""
JOIN_TIMEOUT_S = 30.0
"""Bound on the agent getting its partition (about 3 s on Tansu with the group timing below)."""
AGENT_STOP_TIMEOUT_S = 20.0
"""The agent's stop path: one poll (0.2 s here), a commit and a close, each bounded by 5 s."""
FEED_STOP_TIMEOUT_S = 15.0
DEMO_AUC_FLOOR = 0.8
"""With ``--prometheus``, the demo model's AUC floor (``alerts.auc_floor``): between the
simulated model's AUC before (0.9) and after (0.7) the drop, not on either."""


@dataclasses.dataclass(frozen=True, slots=True)
class PrometheusOptions:
    """``--prometheus``: the executable, the rules file, the port of its UI and API."""

    binary: str
    rules: Path
    port: int

_T = TypeVar("_T")


def _fail(command: str, message: str, status: int = EXIT_FAILED) -> int:
    print(f"driftwatch {command}: {message}", file=sys.stderr, flush=True)
    return status


# ------------------------------------------------------------------------------------------
# demo


class DemoRun:
    """One run of the demo: the broker, the agent and the simulated model, watched from the
    main thread; see the module docstring for the order of start and stop.

    Parameters:
        args: the parsed command line.
        base: the user's settings; the demo replaces their kafka, metrics and checkpoint
            sections (:func:`demo_settings`) and keeps the rest (monitors, event format).
        binary: the Tansu executable.
        stream: the simulated model's events (their times are reset when it starts).
        delay: with ``--delayed-labels``, how late the labels come
            (:mod:`driftwatch.demo.delayed`); None: each event carries its label.
        prometheus: with ``--prometheus``, the Prometheus to start; None: none.
    """

    def __init__(self, args: argparse.Namespace, base: Settings, binary: str,
                 stream: SimulatedStream, out: TextIO | None = None,
                 delay: LabelDelay | None = None,
                 prometheus: PrometheusOptions | None = None) -> None:
        self.args = args
        self.prometheus = prometheus
        self._alert_changes: queue.SimpleQueue[AlertChange] = queue.SimpleQueue()
        self._fired: dict[str, int] = {}
        self.base = base
        self.binary = binary
        self.stream = stream
        self.delay = delay
        out = sys.stdout if out is None else out
        self.display = Display(out) if delay is None else DelayedDisplay(
            out, delay, base.join.score_drift.reference_size,
            demo_delayed.estimate_settings(base).monitoring.defaults.estimation.calibration)
        self.stop = threading.Event()
        """Set by Ctrl+C or SIGTERM: the run ends and everything stops in order."""
        self._alarms: queue.SimpleQueue[Alarm] = queue.SimpleQueue()
        self._broker: EmbeddedBroker | None = None
        self._agent: Agent | None = None
        self._agent_worker: _Worker | None = None
        self._feed: Feed | None = None
        self._feed_worker: _Worker | None = None

    def run(self) -> int:
        from driftwatch import logs

        logs.configure("WARNING", self.base.logging.format)
        # The demo prints each alarm (on_alarm); the agent's alarm log would repeat it.
        logging.getLogger("driftwatch.alarms").setLevel(logging.ERROR)
        self.display.header(self.args.scenario, self.args.seed, self.stream, self.args.rate)
        with ExitStack() as stack:
            stack.enter_context(stop_on_signals(self.stop, on_second=self._kill_now))
            status = self._start(stack)
            if status is None:
                status = self._watch()
                assert self._agent is not None
                snapshot = _model_snapshot(self._agent)
                self.display.verdict(self.stream.change_points,
                                     0 if snapshot is None else snapshot.events)
                if self.prometheus is not None:
                    fired = ", ".join(f"{name} x{count}" for name, count in self._fired.items())
                    self.display.line(f"alerts fired: {fired or 'none'}")
            self.display.line("stopping: the simulated model, the agent, the broker ...")
            # Leaving the stack stops the feed, then the agent, then the broker.
        self.display.line("stopped")
        return status

    # -- start ------------------------------------------------------------------------------

    def _start(self, stack: ExitStack) -> int | None:
        """Start every part into ``stack``; None when all run, else the exit status."""
        from driftwatch.agent.loop import Agent
        from driftwatch.demo.broker import BrokerUnavailable, EmbeddedBroker
        from driftwatch.demo.feed import Feed, FeedError, JoinTopics, ensure_topic
        from driftwatch.kafka.producers import producer_config

        try:
            broker = self._broker = stack.enter_context(
                EmbeddedBroker(self.args.broker_port, binary=self.binary))
        except (BrokerUnavailable, OSError) as exc:
            return _fail("demo", f"cannot start the embedded broker: {exc}")
        settings = demo_settings(self.base, broker.bootstrap, self.args.port)
        if self.prometheus is not None:
            settings = demo_alert_floor(settings)
        if self.delay is not None:
            settings = demo_delayed.estimate_settings(demo_delayed.join_settings(settings))
        producer_options = producer_config(settings.kafka.consumer_config())
        try:
            ensure_topic(producer_options, DEMO_TOPIC)
        except FeedError as exc:
            return _fail("demo", str(exc))
        self.display.line(f"  broker    {broker.bootstrap} (Tansu, in memory), "
                          f"topic {DEMO_TOPIC}")

        agent = self._agent = Agent(settings, on_alarm=self._alarms.put,
                                    snapshot_interval_s=SNAPSHOT_INTERVAL_S)
        worker = self._agent_worker = stack.enter_context(
            _Worker("agent", agent.run, AGENT_STOP_TIMEOUT_S))
        url = self._wait(lambda: _serving_url(agent), JOIN_TIMEOUT_S)
        if url is None:
            return self._failure("the agent", worker) if not self.stop.is_set() else EXIT_OK
        self.display.line(f"  metrics   {url}")
        if self.prometheus is not None:
            status = self._start_prometheus(stack, url)
            if status is not None:
                return status
        self.display.line("  Ctrl+C stops everything.")
        if self._wait(lambda: agent.snapshot.ready, JOIN_TIMEOUT_S) is None:
            if self.stop.is_set():
                return EXIT_OK
            if worker.error is not None or not worker.alive:
                return self._failure("the agent", worker)
            self.display.line(f"  (the agent has no partition after {JOIN_TIMEOUT_S:.0f} s; "
                              "producing anyway: it reads the topic from its start)")

        # Event times count from now, when the model starts producing.
        self.stream = SimulatedStream(replace(self.stream.scenario, start_ts=time.time()),
                                      self.stream.seed)
        streams: dict[str, Any] = {DEMO_MODEL: self.stream}
        join = None
        if self.delay is not None:  # predictions now, labels later, on the demo topic
            assert isinstance(self.display, DelayedDisplay)
            self.display.start(self.stream, lambda: agent.snapshot.join)
            streams = {DEMO_MODEL: demo_delayed.records(self.stream, DEMO_MODEL, self.delay)}
            join = JoinTopics(DEMO_TOPIC, DEMO_TOPIC, settings.join.join_format())
        feed = self._feed = Feed(producer_options, DEMO_TOPIC, streams, rate=self.args.rate,
                                 fmt=settings.events.event_format(), join=join)
        self._feed_worker = stack.enter_context(_Worker("feed", feed.run, FEED_STOP_TIMEOUT_S))
        self.display.table_header()
        return None

    def _start_prometheus(self, stack: ExitStack, metrics_url: str) -> int | None:
        """Prometheus scraping the agent at ``metrics_url``, and a thread reporting its
        alerts' changes; None when both run, else the exit status."""
        from driftwatch.demo.prometheus import (
            TIME_SCALE,
            DemoPrometheus,
            PrometheusError,
            scale_duration,
        )

        options = self.prometheus
        assert options is not None
        target = metrics_url.removeprefix("http://").split("/", 1)[0]
        try:
            prometheus = stack.enter_context(
                DemoPrometheus(options.binary, options.rules, target, options.port))
        except PrometheusError as exc:
            return _fail("demo", f"--prometheus: {exc}")
        self.display.line(f"  alerts    {prometheus.url}/alerts (Prometheus: the chart's rules "
                          f"from {options.rules}, time {TIME_SCALE}x faster: for 5m -> "
                          f"{scale_duration('5m')}; AUC floor {DEMO_AUC_FLOOR})")
        stack.enter_context(_Worker("alert watch", prometheus.watch(self._alert_changes.put),
                                    FEED_STOP_TIMEOUT_S))
        return None

    def _show_alert_changes(self, processed: int) -> None:
        while not self._alert_changes.empty():
            change = self._alert_changes.get()
            if change.state == "firing":
                self._fired[change.name] = self._fired.get(change.name, 0) + 1
            self.display.line(f"  ALERT  event {processed}: {change.describe()}")

    def _wait(self, condition: Callable[[], _T | None], timeout_s: float) -> _T | None:
        """Poll ``condition`` until it gives a truthy value and return it; None when the time
        is up, the user stopped or the agent failed."""
        deadline = time.monotonic() + timeout_s
        worker = self._agent_worker
        while not (value := condition()):
            if self.stop.is_set() or time.monotonic() >= deadline or (
                    worker is not None and (worker.error is not None or not worker.alive)):
                return None
            self.stop.wait(0.05)
        return value

    # -- watch ------------------------------------------------------------------------------

    def _watch(self) -> int:
        """Alarms in step with the progress lines, until the end (module docstring)."""
        agent, feed, feed_worker = self._agent, self._feed, self._feed_worker
        assert agent is not None and feed is not None and feed_worker is not None
        started = time.monotonic()
        next_line = started + PROGRESS_INTERVAL_S
        deadline = None if self.args.duration is None else started + self.args.duration
        pending: list[tuple[float, Alarm]] = []
        while True:
            self.stop.wait(TICK_S)
            now = time.monotonic()
            snapshot = _model_snapshot(agent)
            processed = 0 if snapshot is None else snapshot.events
            handled = processed + sum(agent.snapshot.rejected.values()) \
                if self.delay is None else demo_delayed.handled(agent.snapshot)
            # An alarm comes at once, the values in its line with the next snapshot: show it
            # when the snapshot has caught up, so the lines read in event order.
            while not self._alarms.empty():
                pending.append((now, self._alarms.get()))
            while pending and (pending[0][1].event_count <= processed
                               or now - pending[0][0] > 2 * SNAPSHOT_INTERVAL_S):
                self.display.alarm(pending.pop(0)[1])
            if isinstance(self.display, DelayedDisplay):
                self.display.observe(agent.snapshot)
            self._show_alert_changes(processed)
            failure = self._failure_now()
            if failure is not None:
                return failure
            if now >= next_line:
                self.display.progress(now - started, feed.sent, snapshot, self.stream)
                next_line += PROGRESS_INTERVAL_S
            if self.display.closed:  # nobody reads the output any more
                return EXIT_OK
            if self.stop.is_set() or (deadline is not None and now >= deadline):
                for _, alarm in pending:
                    self.display.alarm(alarm)
                self.display.line("interrupted" if self.stop.is_set()
                                  else f"--duration {self.args.duration:g} s reached")
                return EXIT_OK
            if feed.exhausted and not feed_worker.alive and handled >= feed.sent \
                    and not pending:
                self.display.progress(now - started, feed.sent, snapshot, self.stream,
                                      if_changed=True)
                self.display.line("the scenario is over: every event reached the agent")
                return EXIT_OK

    def _failure_now(self) -> int | None:
        """The exit status if a part has failed, else None."""
        agent_worker, feed_worker, broker = self._agent_worker, self._feed_worker, self._broker
        assert agent_worker is not None and feed_worker is not None and broker is not None
        if agent_worker.error is not None or not agent_worker.alive:
            return self._failure("the agent", agent_worker)
        if feed_worker.error is not None:
            return self._failure("the simulated model", feed_worker)
        if not broker.running:
            return _fail("demo", "the embedded broker exited unexpectedly")
        return None

    def _failure(self, what: str, worker: _Worker) -> int:
        error = worker.error
        if error is None:
            return _fail("demo", f"{what} stopped unexpectedly")
        if isinstance(error, OSError) and error.errno == errno.EADDRINUSE:  # lost a race
            return _fail("demo", f"{error} (choose another with --port)")
        return _fail("demo", f"{what} failed: {type(error).__name__}: {error}")

    def _kill_now(self) -> None:
        """The second Ctrl+C: no orderly stop, but no broker left behind either."""
        broker = self._broker
        if broker is not None and broker.pid is not None:
            with suppress(OSError):
                os.kill(broker.pid, signal.SIGKILL)
        os._exit(EXIT_INTERRUPTED)


def demo_monitoring(base: Settings) -> Settings:
    """``base`` with blocks that close on information alone (``block_seconds`` 0).

    The demo compresses a model's story into seconds (500 events a second, a drift 10 s in):
    blocks that also span 30 s of record time would close once or twice in the whole run.
    On information alone they close every few dozen events, as they would at the rates the
    story stands for; each then counts as a second of the false-alarm budget (the least a
    block counts, :mod:`driftwatch.core.budget`), so the thresholds are stricter than a
    real model's would be, not looser.
    """
    defaults = base.monitoring.defaults.model_copy(update={"block_seconds": 0.0})
    models = {model: overrides.model_copy(update={"block_seconds": 0.0})
              for model, overrides in base.monitoring.models.items()}
    monitoring = base.monitoring.model_copy(update={"defaults": defaults, "models": models})
    return base.model_copy(update={"monitoring": monitoring})


def demo_alert_floor(base: Settings) -> Settings:
    """``base`` with every model's AUC floor at :data:`DEMO_AUC_FLOOR` (``--prometheus``).

    The default floor, 0.7, is exactly the simulated model's AUC after the drop: the window's
    AUC would cross it back and forth, and DriftwatchAucBelowFloor flap."""
    defaults = base.alerts.defaults.model_copy(update={"auc_floor": DEMO_AUC_FLOOR})
    models = {model: overrides.model_copy(update={"auc_floor": DEMO_AUC_FLOOR})
              for model, overrides in base.alerts.models.items()}
    alerts = base.alerts.model_copy(update={"defaults": defaults, "models": models})
    return base.model_copy(update={"alerts": alerts})


def demo_settings(base: Settings, bootstrap: str, port: int) -> Settings:
    """``base`` (the user's settings, for the monitors and the event format) consuming the
    demo topic of the embedded broker, serving metrics on loopback, without checkpoints,
    with blocks that close on information alone (:func:`demo_monitoring`)."""
    from driftwatch.settings import CheckpointSettings, KafkaSettings, MetricsSettings

    kafka = KafkaSettings(
        bootstrap_servers=[bootstrap],
        topics=[DEMO_TOPIC],
        group_id="driftwatch-demo",
        client_id="driftwatch-demo",
        # Tansu holds a joining member for up to max_poll_interval_ms (measured): with these
        # (the settings' defaults, stated here so the demo does not depend on them) the agent
        # gets its partition in about 3 s. A short poll makes Ctrl+C prompt.
        max_poll_interval_ms=5000,
        session_timeout_ms=6000,
        heartbeat_interval_ms=1000,
        poll_timeout_ms=200,
        reconnect_backoff_initial_seconds=0.1,
        reconnect_backoff_max_seconds=1.0,
    )
    return demo_monitoring(base).model_copy(update={
        "kafka": kafka,
        "metrics": MetricsSettings(host=LOOPBACK, port=port),
        # A demo starts fresh every time: the broker's memory storage is gone anyway.
        "checkpoint": CheckpointSettings(enabled=False),
    })


def _serving_url(agent: Agent) -> str | None:
    """The agent's metrics URL once its server listens."""
    server = agent.metrics_server
    if server is None:
        return None
    try:
        return server.url
    except RuntimeError:  # created, not listening yet
        return None


def _model_snapshot(agent: Agent) -> Snapshot | None:
    """The simulated model's monitor (the only one: named ``demo``, or the settings'
    ``events.model_constant`` when the model id is a constant)."""
    monitors = agent.snapshot.monitors
    return monitors[0] if monitors else None


# ------------------------------------------------------------------------------------------
# threads


class _Worker:
    """Runs ``target(stop)`` on a daemon thread; leaving the context sets ``stop`` and waits
    at most ``stop_timeout_s`` for the thread. What ``target`` raised is kept in
    :attr:`error` (daemon: a thread that does not stop in time cannot block the exit)."""

    def __init__(self, name: str, target: Callable[[threading.Event], None],
                 stop_timeout_s: float) -> None:
        self.name = name
        self.stop = threading.Event()
        self.stop_timeout_s = stop_timeout_s
        self.error: BaseException | None = None
        self._target = target
        self._thread = threading.Thread(target=self._run, name=f"driftwatch-{name}", daemon=True)

    def _run(self) -> None:
        try:
            self._target(self.stop)
        except BaseException as exc:
            self.error = exc

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()

    def join(self, timeout_s: float) -> None:
        self._thread.join(timeout_s)

    def __enter__(self) -> _Worker:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop.set()
        self._thread.join(self.stop_timeout_s)
        if self._thread.is_alive():
            print(f"driftwatch: the {self.name} did not stop within {self.stop_timeout_s:.0f} s",
                  file=sys.stderr, flush=True)
