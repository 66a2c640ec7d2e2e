"""``driftwatch demo`` and ``driftwatch simulate``: their command line and entry points.

**demo** checks what can be checked before starting anything (the optional broker is
installed, the settings are valid, the scenario's parameters are, the ports are free), then
hands over to :class:`~driftwatch.demo.run.DemoRun`, which starts the embedded broker, the
agent and a simulated model, prints the alarms live and stops everything in order (its
module docstring has the lifecycle). A port already in use is one line and exit 1 before
anything starts; without the optional broker (``pip install 'driftwatch-agent[demo]'``) the
demo says so and exits 2.

**simulate** produces the same simulated events to any Kafka cluster: ``--models N``
models ``model-1`` … ``model-N`` (model k uses seed ``--seed + k − 1``), keyed by model id,
in the record format of the settings' ``events`` section; brokers and security come from the
settings' ``kafka`` section (``--config``), ``--bootstrap`` and ``--topic`` override them.
With ``--output FILE`` it writes the same records to a JSON Lines or CSV file instead, as
fast as they come (:mod:`driftwatch.demo.files`), for ``driftwatch replay`` or any other
consumer; ``--start-ts`` fixes the event times, so the file is the same on every run.
Exit status: 0 when every record was delivered (or written), 1 when some were not or the
brokers were unreachable, 2 for invalid settings, parameters or options or an output file
that cannot be written (nothing is left of it), 130 on a second Ctrl+C (``--output``: on the
first, with nothing written).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from driftwatch.commands.arguments import (
    add_config_argument,
    finite_float,
    load_settings_or_report,
    non_negative_float,
    non_negative_int,
    port_number,
    positive_float,
    positive_int,
)
from driftwatch.demo import delayed as demo_delayed
from driftwatch.demo.delayed import LabelDelay
from driftwatch.demo.display import describe_change_points
from driftwatch.demo.run import (
    DEFAULT_RATE,
    DEFAULT_SCENARIO,
    DEMO_MODEL,
    FEED_STOP_TIMEOUT_S,
    LOOPBACK,
    TICK_S,
    DemoRun,
    PrometheusOptions,
    _fail,
    _Worker,
)
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
    from driftwatch.core.join import Label, Prediction
    from driftwatch.decoding.decoder import EventFormat
    from driftwatch.settings import Settings

SIMULATE_PROGRESS_INTERVAL_S = 5.0

_RESERVED_PARAMETERS = {"length": "--length", "rate": "--rate",
                        "start_ts": "--start-ts (simulate) or the clock (demo)"}


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
    late = demo.add_argument_group(
        "delayed labels", "predictions now, labels later, as separate records the agent joins; "
        "the scores are watched and the performance estimated from them meanwhile (default "
        f"scenario then: {demo_delayed.SCENARIO}, a covariate shift at prediction "
        f"{demo_delayed.PARAMETERS['change_at']} and a concept change at "
        f"{demo_delayed.PARAMETERS['concept_at']}, {demo_delayed.LENGTH} predictions)")
    late.add_argument("--delayed-labels", action="store_true",
                      help="show the score-drift alarm and the estimated AUC's fall before the "
                           "labelled AUC alarm, and a concept change only the labels show")
    late.add_argument("--label-delay", type=positive_float, default=demo_delayed.LABEL_DELAY_S,
                      metavar="SECONDS", help="mean delay of a label (default: "
                                              f"{demo_delayed.LABEL_DELAY_S:g})")
    late.add_argument("--delay-distribution", choices=DELAY_DISTRIBUTIONS,
                      default=demo_delayed.DELAY_DISTRIBUTION,
                      help=f"fixed, exponential or lognormal (default: "
                           f"{demo_delayed.DELAY_DISTRIBUTION})")
    alerts = demo.add_argument_group(
        "alerts", "a real Prometheus (installed apart: apt-get install prometheus) with the "
        "chart's alert rules, time compressed like the story (minutes become seconds), "
        "scraping the agent; each alert is printed as it goes pending, fires and resolves")
    alerts.add_argument("--prometheus", action="store_true",
                        help="start Prometheus and show the alerts")
    alerts.add_argument("--prometheus-port", type=port_number, default=9090, metavar="PORT",
                        help="port of Prometheus' UI and API on 127.0.0.1 (default: 9090; "
                             "0: any free port)")
    alerts.add_argument("--prometheus-rules", metavar="FILE", default=None,
                        help="the rules file (default: the chart's, "
                             "helm/driftwatch/files/alerts.yaml of this checkout)")
    add_config_argument(demo)
    # --scenario's default depends on --delayed-labels (_demo).
    demo.set_defaults(handler=_demo, scenario=None)

    simulate = commands.add_parser(
        "simulate",
        help="produce simulated events to a Kafka cluster, or write them to a file",
        description=(
            "Produce the events of simulated models with known drifts to a Kafka topic, "
            "keyed by model id (model-1 ... model-N), in the record format of the settings' "
            "events section. Brokers and security come from the settings' kafka section. "
            "With --output, write the same records to a file instead (for driftwatch replay)."
        ),
    )
    _add_scenario_arguments(simulate)
    simulate.add_argument("--models", type=positive_int, default=1, metavar="N",
                          help="number of models, each with its own seed (default: 1)")
    simulate.add_argument("--start-ts", type=finite_float, default=None, metavar="SECONDS",
                          help="event time of the first event, in seconds since the epoch "
                               "(default: now); fixed, the records are the same on every run")
    kafka = simulate.add_argument_group("to Kafka (the default)")
    kafka.add_argument("--bootstrap", metavar="HOST:PORT[,...]",
                       help="brokers (default: kafka.bootstrap_servers of the settings)")
    kafka.add_argument("--topic",
                       help="topic (default: the first of kafka.topics of the settings)")
    kafka.add_argument("--partitions", type=positive_int, default=None, metavar="N",
                       help="partitions of the topic if it must be created (default: 1)")
    output = simulate.add_argument_group(
        "to a file (instead of Kafka)", "the records the agent would read, one per line "
        "(JSON Lines) or row (CSV, with a header of the settings' field names), written as "
        "fast as they come; --rate spaces their event times, --duration keeps the records "
        "a live run of that long would send")
    output.add_argument("--output", metavar="FILE",
                        help="write to FILE (.jsonl, .csv or .tsv; '-': standard output)")
    output.add_argument("--format", choices=("jsonl", "csv"),
                        help="file format (default: from the file name; JSON Lines unless "
                             ".csv or .tsv)")
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
    parser.add_argument(
        "--calibrated", action="store_true",
        help="scores that are calibrated probabilities, P(label = 1 | score) under the "
             "scenario's concept at each event (the scenario's output=calibrated)",
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
    naming a bad parameter. Event times start at ``--start-ts``, else now (live-looking
    ``ts``), ``1 / rate`` apart."""
    start_ts = getattr(args, "start_ts", None)
    start_ts = time.time() if start_ts is None else start_ts
    params = dict(args.param)
    if args.calibrated:
        if params.get("output", "calibrated") != "calibrated":
            raise ValueError(f"--calibrated and --param output={params['output']} disagree")
        params["output"] = "calibrated"
    return {
        model: generate(args.scenario, seed=args.seed + k, length=args.length, rate=args.rate,
                        start_ts=start_ts, **params)
        for k, model in enumerate(models)
    }


# ------------------------------------------------------------------------------------------
# demo


def _demo(args: argparse.Namespace) -> int:
    """Check everything that can be checked before starting anything, then run."""
    from driftwatch.demo.broker import BrokerNotInstalled, port_in_use, resolve_tansu_binary

    try:
        binary = resolve_tansu_binary()
    except BrokerNotInstalled as exc:
        return _fail("demo", str(exc), EXIT_INVALID)
    base = load_settings_or_report(args.config)
    if base is None:
        return EXIT_INVALID
    delay = LabelDelay(args.delay_distribution, args.label_delay) if args.delayed_labels \
        else None
    if args.scenario is None:
        args.scenario = DEFAULT_SCENARIO if delay is None else demo_delayed.SCENARIO
        if delay is not None:  # the story's drift, unless --param or --length say otherwise
            args.param = [*demo_delayed.PARAMETERS.items(), *args.param]
            args.length = args.length or demo_delayed.LENGTH
    try:
        (stream,) = _streams(args, [DEMO_MODEL]).values()
    except ValueError as exc:
        return _fail("demo", str(exc), EXIT_INVALID)
    prometheus: PrometheusOptions | None = None
    if args.prometheus:
        options = _prometheus_options(args)
        if isinstance(options, int):
            return options
        prometheus = options
    elif args.prometheus_rules is not None:
        return _fail("demo", "--prometheus-rules applies to --prometheus", EXIT_INVALID)
    for port, option, what in ((args.port, "--port", "metrics"),
                               (args.broker_port, "--broker-port", "broker"),
                               (prometheus.port if prometheus else None, "--prometheus-port",
                                "Prometheus")):
        if port and port_in_use(port, LOOPBACK):
            return _fail("demo", f"port {port} ({what}) is already in use on {LOOPBACK}; "
                                 f"choose another with {option}")
    return DemoRun(args, base, binary, stream, delay=delay, prometheus=prometheus).run()


def _prometheus_options(args: argparse.Namespace) -> PrometheusOptions | int:
    """``--prometheus``'s executable, rules and port, or the exit status of a clear refusal
    (Prometheus missing: how to get it; the rules file missing: which option to give)."""
    from driftwatch.demo.broker import free_port
    from driftwatch.demo.prometheus import CHART_RULES, HOW_TO_GET, find_prometheus

    binary = find_prometheus()
    if binary is None:
        return _fail("demo", f"--prometheus: {HOW_TO_GET}; or run the demo without "
                             "--prometheus", EXIT_INVALID)
    rules = Path(args.prometheus_rules) if args.prometheus_rules else CHART_RULES
    if not rules.is_file():
        where = "--prometheus-rules" if args.prometheus_rules else \
            "the chart's (helm/driftwatch/files/alerts.yaml of a checkout; this installation " \
            "has none next to it): give --prometheus-rules FILE"
        return _fail("demo", f"--prometheus: no rules file {rules} ({where})", EXIT_INVALID)
    port = args.prometheus_port or free_port(LOOPBACK)
    return PrometheusOptions(binary, rules, port)


# ------------------------------------------------------------------------------------------
# simulate


def _simulate(args: argparse.Namespace) -> int:
    from driftwatch import logs
    from driftwatch.demo.feed import BrokersUnreachable, Feed, FeedError, JoinTopics, ensure_topic
    from driftwatch.kafka.producers import producer_config

    settings = load_settings_or_report(args.config)
    if settings is None:
        return EXIT_INVALID
    if args.output is not None:
        kafka_options = {"--bootstrap": args.bootstrap, "--topic": args.topic,
                         "--partitions": args.partitions}
        given = [option for option, value in kafka_options.items() if value is not None]
        if given:
            return _fail("simulate", f"{', '.join(given)}: Kafka options, not for --output",
                         EXIT_INVALID)
    elif args.format is not None:
        return _fail("simulate", "--format applies to --output", EXIT_INVALID)
    if settings.join.enabled and not 0.0 <= args.unlabelled <= 1.0:
        return _fail("simulate", f"--unlabelled must be in [0, 1], got {args.unlabelled}",
                     EXIT_INVALID)
    models = [f"model-{k}" for k in range(1, args.models + 1)]
    try:
        streams = _streams(args, models)
    except ValueError as exc:
        return _fail("simulate", str(exc), EXIT_INVALID)
    if args.output is not None:
        return _simulate_to_file(args, settings, streams)
    logs.configure("WARNING", settings.logging.format)
    config = producer_config(settings.kafka.consumer_config())
    if args.bootstrap:
        config["bootstrap_servers"] = [s.strip() for s in args.bootstrap.split(",") if s.strip()]
    topic = args.topic or (settings.kafka.topics[0] if settings.kafka.topics else None)
    if topic is None:
        return _fail("simulate", "no topic: the settings consume a topic_pattern; give --topic",
                     EXIT_INVALID)
    partitions = args.partitions or 1
    fmt = settings.events.event_format()
    brokers = ",".join(config["bootstrap_servers"])
    _describe(args, streams, f"to topic {topic} on {brokers}", fmt, sys.stdout)
    try:
        if ensure_topic(config, topic, partitions=partitions):
            print(f"  created topic {topic} ({partitions} partition(s))", flush=True)
    except BrokersUnreachable as exc:
        return _fail("simulate", str(exc))
    except FeedError as exc:  # e.g. not allowed to create topics: the cluster may auto-create
        print(f"  warning: {exc}; sending anyway", file=sys.stderr, flush=True)
    join = None
    records: dict[str, Any] = dict(streams)
    if settings.join.enabled:
        join_settings = settings.join
        join = JoinTopics(join_settings.predictions_topic or topic,
                          join_settings.labels_topic or topic, join_settings.join_format())
        records = _two_streams(args, streams)
        print(f"  two streams: predictions to {join.predictions}, labels to {join.labels} "
              f"after a {args.delay_distribution} delay of {args.label_delay:g} s on average",
              flush=True)
        for extra in {join.predictions, join.labels} - {topic}:
            try:
                if ensure_topic(config, extra, partitions=partitions):
                    print(f"  created topic {extra} ({partitions} partition(s))", flush=True)
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


def _two_streams(args: argparse.Namespace, streams: Mapping[str, SimulatedStream]
                 ) -> dict[str, Iterator[Prediction | Label]]:
    """Each model's predictions now and labels later (settings with the join enabled)."""
    return {model: delayed_labels(stream, seed=args.seed + k, model=model,
                                  delay=args.delay_distribution, mean_delay=args.label_delay,
                                  unlabelled=args.unlabelled, id_prefix=f"{model}-")
            for k, (model, stream) in enumerate(streams.items())}


def _describe(args: argparse.Namespace, streams: Mapping[str, SimulatedStream], where: str,
              fmt: EventFormat, out: TextIO) -> None:
    models = list(streams)
    first = streams[models[0]]
    print(f"simulating {len(models)} model(s) ({models[0]}"
          f"{' ... ' + models[-1] if len(models) > 1 else ''}), scenario {args.scenario}, "
          f"{len(first)} events each at {args.rate:g}/s, {where}", file=out, flush=True)
    for text in describe_change_points(first.change_points):
        print(f"  {text}", file=out, flush=True)
    if fmt.model_source == "constant":
        print(f"  note: events.model_source is constant: the agent counts every model as "
              f"{fmt.model_constant!r}", file=out, flush=True)


def _simulate_to_file(args: argparse.Namespace, settings: Settings,
                      streams: Mapping[str, SimulatedStream]) -> int:
    """``simulate --output``: the records the feed would send, written to a file."""
    from driftwatch.demo.files import (
        STDOUT,
        check_format,
        delimiter_of,
        file_format,
        joinable_records,
        labelled_records,
        output_file,
        write_records,
    )

    kind = file_format(args.output, args.format)
    fmt = settings.events.event_format()
    if fmt.model_source == "key":  # a file has no keys: replay reads the model field there
        fmt = replace(fmt, model_source="field")
    join = settings.join
    try:
        check_format(kind, joinable=join.enabled)
    except ValueError as exc:
        return _fail("simulate", str(exc), EXIT_INVALID)
    if join.enabled and join.kind_field is None:
        return _fail("simulate", "a file holds one stream: with join enabled, --output needs "
                                 "join.kind_field (the field that says prediction or label), "
                                 "as replay does", EXIT_INVALID)
    records = joinable_records(_two_streams(args, streams), fmt, join.join_format(),
                               duration_s=args.duration) if join.enabled \
        else labelled_records(streams, fmt, rate=args.rate, duration_s=args.duration)
    notes = sys.stderr if args.output == STDOUT else sys.stdout  # the records own stdout
    name = "standard output" if args.output == STDOUT else args.output
    try:
        with output_file(args.output) as out:
            _describe(args, streams, f"to {name} ({'CSV' if kind == 'csv' else 'JSON Lines'})",
                      fmt, notes)
            count = write_records(out, records, kind, delimiter_of(args.output))
    except OSError as exc:
        return _fail("simulate", f"--output {args.output}: cannot write: "
                                 f"{exc.strerror or exc}", EXIT_INVALID)
    except KeyboardInterrupt:
        print("driftwatch simulate: interrupted; nothing written", file=sys.stderr)
        return EXIT_INTERRUPTED
    print(f"wrote {count} records to {name}", file=notes, flush=True)
    return EXIT_OK
