"""``driftwatch compare``: is the challenger better than the champion on recorded events?

Registered in :mod:`driftwatch.commands.main` by :func:`add_compare`; like ``replay``,
everything beyond argparse is imported when the command runs.

Exit status: 0 when the comparison ran (whatever it found); 1 when no record became a paired
event (the settings' field names, the pairing options or the input are wrong, and the
message says which fields the records have); 2 for invalid settings, a wrong command line,
an input that cannot be read at all, or a figure that cannot be drawn (checked before
reading); 130 when interrupted (the summary covers what was read so far).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import replace
from typing import TYPE_CHECKING

from driftwatch.commands.arguments import (
    add_config_argument,
    finite_float,
    load_settings_or_report,
    non_negative_float,
    non_negative_int,
    positive_int,
    probability,
)
from driftwatch.exits import EXIT_INTERRUPTED, EXIT_INVALID, EXIT_NO_EVENTS, EXIT_OK

if TYPE_CHECKING:
    from driftwatch.compare.pairing import Pairing
    from driftwatch.compare.run import CompareResult, Comparison
    from driftwatch.decoding.decoder import EventFormat
    from driftwatch.replay.sources import ReplayInput
    from driftwatch.settings import Settings

EXIT_NOTHING_PAIRED = EXIT_NO_EVENTS
"""Records were read but none became a paired event: a comparison of nothing must not pass."""


def add_compare(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``compare`` sub-command to the CLI's sub-parsers."""
    parser = commands.add_parser(
        "compare",
        help="champion against challenger on recorded events: AUC difference and its tests",
        description=(
            "Compare two models scored on the same labelled events: both models' AUC over\n"
            "the whole run, per block and prequentially (the same window for both), DeLong's\n"
            "paired test and a bootstrap interval for the AUC difference, Wilcoxon's and the\n"
            "sign test over blocks, McNemar and κ on the crisp predictions; a Markdown\n"
            "summary to paste in a review, and optionally a figure. Records are decoded\n"
            "with the settings' events section, like the agent and replay decode them."
        ),
        epilog=(
            "pairing (one of):\n"
            "  --challenger-score FIELD     each record has both scores: the champion's in the\n"
            "                               settings' score field, the challenger's in FIELD\n"
            "  --join ID_FIELD --champion MODEL --challenger MODEL\n"
            "                               each model writes its own records; records with\n"
            "                               the same ID_FIELD value are one event\n\n"
            "examples:\n"
            "  driftwatch compare examples/champion-challenger.jsonl "
            "--challenger-score challenger_score --plot compare.png\n"
            "  driftwatch compare scores.jsonl --join request_id --champion v1 "
            "--challenger v2 --json"
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "file",
        nargs="?",
        metavar="FILE",
        help="recorded events: JSON Lines (.jsonl, .ndjson; '-' reads standard input) or "
        "CSV (.csv, with a header row)",
    )
    add_config_argument(parser)
    source = parser.add_argument_group("input")
    source.add_argument("--format", choices=("jsonl", "csv"), help="default: from the name")
    source.add_argument(
        "--columns",
        metavar="ROLE=COLUMN,...",
        help="CSV columns by role (label, score, prediction, ts, model), as for replay",
    )
    source.add_argument("--delimiter", default=",", metavar="CHAR", help="CSV separator")
    kafka = parser.add_argument_group("Kafka topic range (instead of FILE)")
    kafka.add_argument("--kafka-topic", metavar="TOPIC", help="read this topic's records")
    kafka.add_argument(
        "--bootstrap",
        metavar="HOST:PORT[,...]",
        help="brokers (default: kafka.bootstrap_servers of the settings, with its security "
        "options)",
    )
    kafka.add_argument(
        "--from-offset", type=non_negative_int, metavar="N", help="first offset per partition"
    )
    kafka.add_argument(
        "--to-offset", type=non_negative_int, metavar="N", help="stop before this offset"
    )
    pairing = parser.add_argument_group("pairing")
    pairing.add_argument(
        "--challenger-score", metavar="FIELD", help="the challenger's score field (column)"
    )
    pairing.add_argument(
        "--challenger-prediction",
        metavar="FIELD",
        help="the challenger's crisp prediction field (default: from its score and threshold)",
    )
    pairing.add_argument("--join", metavar="ID_FIELD", help="pair two models' records by this id")
    pairing.add_argument("--champion", metavar="MODEL", help="the champion's model id (--join)")
    pairing.add_argument("--challenger", metavar="MODEL", help="the challenger's model id (--join)")
    pairing.add_argument(
        "--max-pending",
        type=positive_int,
        default=100_000,
        metavar="N",
        help="records waiting for their partner, at most (--join; default 100000)",
    )
    window = parser.add_argument_group("windows and blocks")
    window.add_argument(
        "--window",
        type=positive_int,
        metavar="D",
        help="prequential window of both models (default: the settings' window_size)",
    )
    window.add_argument(
        "--threshold", type=finite_float, metavar="T",
        help="champion's threshold (default: settings)",
    )
    window.add_argument(
        "--challenger-threshold",
        type=finite_float,
        metavar="T",
        help="challenger's threshold (default: the champion's)",
    )
    window.add_argument(
        "--block-size",
        type=positive_int,
        metavar="N",
        help="events per block for the block AUC and the block tests (default: the window)",
    )
    window.add_argument(
        "--blocks",
        type=positive_int,
        default=10,
        metavar="K",
        help="recent blocks the running test uses (default 10)",
    )
    window.add_argument(
        "--every",
        type=positive_int,
        metavar="N",
        help="sample the running statistics every N paired events (default: window / 10)",
    )
    stats = parser.add_argument_group("statistics")
    stats.add_argument(
        "--replicates",
        type=non_negative_int,
        default=200,
        metavar="K",
        help="bootstrap replicates for the AUC difference's interval (0: none; default 200)",
    )
    stats.add_argument(
        "--confidence", type=probability, default=0.95, help="interval coverage (default 0.95)"
    )
    stats.add_argument("--alpha", type=probability, default=0.05, help="significance level")
    stats.add_argument(
        "--min-difference",
        type=non_negative_float,
        default=0.0,
        metavar="X",
        help="the smallest AUC difference that matters: a significant difference below it "
        "is reported as negligible (default 0). On a long run every test finds tiny real "
        "differences significant",
    )
    stats.add_argument("--seed", type=non_negative_int, default=0, help="bootstrap seed")
    output = parser.add_argument_group("output")
    output.add_argument("--json", action="store_true", help="one JSON document instead of text")
    output.add_argument(
        "--plot",
        metavar="OUT",
        help="both models' prequential AUC and the running tests to OUT.png, .svg or .html "
        "(needs the plot extra)",
    )
    output.add_argument(
        "--x-axis",
        choices=("auto", "events", "time"),
        default="auto",
        help="the figure's x axis: event time (UTC), paired events, or auto (time when "
        "every sampled event carries one; the default)",
    )
    output.add_argument(
        "--time-rows",
        type=non_negative_int,
        default=10,
        metavar="N",
        help="rows of the over-time table (default 10; 0: none)",
    )
    parser.set_defaults(handler=compare_command)


def _fail(message: str, status: int = EXIT_INVALID) -> int:
    print(f"driftwatch compare: {message}", file=sys.stderr)
    return status


def compare_command(args: argparse.Namespace) -> int:
    """The handler: check everything that can be checked, compare, report."""
    from driftwatch.compare.pairing import Pairer
    from driftwatch.compare.plot import PlotError, check_plot
    from driftwatch.compare.run import Comparison
    from driftwatch.replay.sources import SourceError

    if (args.file is None) == (args.kafka_topic is None):
        return _fail("give a FILE or --kafka-topic (one of them)")
    try:
        pairing = _pairing(args)
    except ValueError as exc:
        return _fail(str(exc))
    settings = load_settings_or_report(args.config)
    if settings is None:
        return EXIT_INVALID
    names = (
        (pairing.champion or "champion", pairing.challenger or "challenger")
        if pairing.mode == "join"
        else ("champion", "challenger")
    )
    champion_config = settings.monitoring.monitor_config(names[0])
    challenger_config = settings.monitoring.monitor_config(names[1])
    threshold = champion_config.threshold if args.threshold is None else args.threshold
    if args.challenger_threshold is not None:
        challenger_threshold = args.challenger_threshold
    elif args.threshold is not None or pairing.mode == "fields":
        challenger_threshold = threshold
    else:
        challenger_threshold = challenger_config.threshold
    window = args.window or champion_config.window_size
    try:
        if args.plot:
            check_plot(args.plot)
        fmt = settings.events.event_format()
        if fmt.model_source == "key" and args.kafka_topic is None:
            fmt = replace(fmt, model_source="field")  # files have no record keys
        source = _source(args, settings, fmt, pairing)
    except (PlotError, SourceError) as exc:
        return _fail(str(exc))
    fmt = getattr(source, "fmt", fmt)
    comparison = Comparison(
        Pairer(fmt, pairing),
        names,
        window=window,
        thresholds=(threshold, challenger_threshold),
        block_size=args.block_size,
        blocks=args.blocks,
        every=args.every,
    )
    return _compare(args, comparison, source, fmt, pairing)


def _pairing(args: argparse.Namespace) -> Pairing:
    from driftwatch.compare.pairing import Pairing

    if args.join is not None:
        if args.challenger_score or args.challenger_prediction:
            raise ValueError(
                "--join pairs two models' records; --challenger-score and "
                "--challenger-prediction are for records with both scores"
            )
        if not (args.champion and args.challenger):
            raise ValueError("--join needs --champion MODEL and --challenger MODEL")
        return Pairing(
            "join",
            id_field=args.join,
            champion=args.champion,
            challenger=args.challenger,
            max_pending=args.max_pending,
        )
    if not args.challenger_score:
        raise ValueError(
            "give --challenger-score FIELD (both scores in each record) or --join "
            "ID_FIELD --champion MODEL --challenger MODEL (one record per model)"
        )
    if args.champion or args.challenger:
        raise ValueError("--champion and --challenger name models for --join")
    return Pairing(
        "fields",
        challenger_score=args.challenger_score,
        challenger_prediction=args.challenger_prediction,
    )


def _source(
    args: argparse.Namespace, settings: Settings, fmt: EventFormat, pairing: Pairing
) -> ReplayInput:
    from driftwatch.commands.replay import open_source
    from driftwatch.compare.sources import PairedCsvSource

    return open_source(args, settings, fmt, csv=lambda path, fmt, columns, delimiter:
                       PairedCsvSource(path, fmt, columns, delimiter, pairing))


def _compare(
    args: argparse.Namespace,
    comparison: Comparison,
    source: ReplayInput,
    fmt: EventFormat,
    pairing: Pairing,
) -> int:
    from driftwatch.compare.plot import write_plot
    from driftwatch.compare.report import render_text, to_json
    from driftwatch.replay.sources import SourceError

    status = EXIT_OK
    started = time.perf_counter()
    try:
        comparison.process(source)
    except SourceError as exc:
        return _fail(str(exc))
    except KeyboardInterrupt:
        status = EXIT_INTERRUPTED
    result = comparison.result(
        source.name,
        time.perf_counter() - started,
        replicates=args.replicates,
        confidence=args.confidence,
        seed=args.seed,
    )
    if status == EXIT_INTERRUPTED:
        print(
            "driftwatch compare: interrupted; the summary covers the records read so far",
            file=sys.stderr,
        )
    if args.json:
        print(
            json.dumps(
                to_json(result, alpha=args.alpha, min_difference=args.min_difference),
                indent=2,
                ensure_ascii=False,
            )
        )
    else:
        print(
            render_text(
                result,
                alpha=args.alpha,
                min_difference=args.min_difference,
                time_rows=args.time_rows,
            ),
            end="",
        )
    sys.stdout.flush()
    if not result.records and status == EXIT_OK:  # an empty export must fail a CI check
        return _fail(f"no records in {source.name}", EXIT_NOTHING_PAIRED)
    if result.records and not result.paired:
        return _fail(_nothing_paired(result, fmt, pairing), EXIT_NOTHING_PAIRED)
    if args.plot and status == EXIT_OK:
        try:
            timed = write_plot(
                result,
                args.plot,
                alpha=args.alpha,
                min_difference=args.min_difference,
                x_axis=args.x_axis,
            )
        except OSError as exc:
            return _fail(f"--plot {args.plot}: cannot write: {exc.strerror or exc}")
        print(f"driftwatch compare: figure written to {args.plot}", file=sys.stderr)
        if args.x_axis == "time" and not timed:
            print(
                "driftwatch compare: --x-axis time: drawn over paired events, since not every "
                f"sampled record carries an event time (field {fmt.time_field!r})",
                file=sys.stderr,
            )
    return status


def _nothing_paired(result: CompareResult, fmt: EventFormat, pairing: Pairing) -> str:
    from driftwatch.compare.report import where

    reasons = ", ".join(f"{k} {v:,}" for k, v in result.rejected.items())
    expected = [fmt.label_field, fmt.score_field]
    if pairing.mode == "fields":
        expected.append(pairing.challenger_score or "")
    else:
        expected += [fmt.model_field, pairing.id_field or ""]
    example = next((b for b in result.bad_records if b.reason != "other_model"), None)
    detail = (
        f"; first: {where(example.position, example.partition)}: {example.detail}"
        if example
        else ""
    )
    return (
        f"no record became a paired event ({reasons}){detail}. Expected fields: "
        f"{', '.join(expected)}"
    )
