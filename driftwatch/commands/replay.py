"""``driftwatch replay``: backtest settings on recorded events before deploying them.

Registered in :mod:`driftwatch.commands.main` by :func:`add_replay`; everything it needs beyond
argparse is imported when the command runs, so ``driftwatch --help`` stays fast and a missing
optional extra (matplotlib, kafka-python) only matters to the option that needs it.

Exit status: 0 when the replay ran and at least one record became an event (whatever the
monitors found) and the figure asked for, if any, was written; 1 when nothing became an
event: the input held no record at all (an empty file or topic range), or every record was
rejected (the message names the fields the records have and the fields the settings expect)
or skipped as another model's (``events.only_models``; the message names the models seen),
as an agent with these settings would watch nothing; 1 too, with ``--plot``, when no model
has a sample to draw (each model's first comes when its window of ``window_size`` events is
full; no file is written); 2 for invalid settings, a wrong command line, an input that cannot
be read at all (no such file, a CSV header without a mapped column, an unknown topic), a
figure that cannot be drawn (unsupported file type, matplotlib missing: checked before
replaying) or ``--model`` naming only models without events; 130 when interrupted (the
summary of what was replayed so far is still printed).
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from typing import TYPE_CHECKING

from driftwatch.commands.arguments import (
    add_config_argument,
    load_settings_or_report,
    non_negative_int,
    positive_int,
)
from driftwatch.exits import (
    EXIT_INTERRUPTED,
    EXIT_INVALID,
    EXIT_NO_EVENTS,
    EXIT_NO_FIGURE,
    EXIT_OK,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    from driftwatch.decoding.decoder import EventFormat
    from driftwatch.replay.parallel import MakeReplay
    from driftwatch.replay.progress import Progress
    from driftwatch.replay.run import Replay, ReplayResult
    from driftwatch.replay.sources import BadRecord, ReplayInput
    from driftwatch.settings import Settings

SHOWN_LIVE_BAD_RECORDS = 10
"""Rejected records printed to stderr as they occur; all are counted in the summary."""


def add_replay(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``replay`` sub-command to the CLI's sub-parsers."""
    parser = commands.add_parser(
        "replay",
        help="run the monitors over recorded events (JSON Lines, CSV, or a Kafka range)",
        description=(
            "Run the agent's monitors over recorded events, as fast as they go, and report\n"
            "the alarms (with their event index, line and time) and each model's final\n"
            "measures. Records are decoded exactly like Kafka records with the settings'\n"
            "events section; bad lines are reported (line number, reason) and skipped.\n"
            "Use it to backtest detector settings on last month's data before deploying."
        ),
        epilog=(
            "examples:\n"
            "  driftwatch replay examples/events-drift.jsonl --config examples/sidecar.yaml"
            " --plot replay.png\n"
            "  driftwatch replay scores.csv --columns label=y,score=p,model=m,ts=time --json\n"
            "  driftwatch replay --kafka-topic scores --bootstrap localhost:9092 "
            "--from-offset 0 --to-offset 50000"
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "file", nargs="?", metavar="FILE",
        help="recorded events: JSON Lines (one record value per line; .jsonl, .ndjson) or CSV "
             "(.csv, with a header row); '-' reads JSON Lines from standard input",
    )
    add_config_argument(parser)
    source = parser.add_argument_group("input")
    source.add_argument("--format", choices=("jsonl", "csv"),
                        help="input format (default: from the file name; .csv is CSV)")
    source.add_argument(
        "--columns", metavar="ROLE=COLUMN,...",
        help="CSV columns by role: label, score, prediction, ts, model (e.g. "
             "label=y,score=p,model=m,ts=time,prediction=pred); default: the settings' field "
             "names. A mapped column missing from the header is an error",
    )
    source.add_argument("--delimiter", metavar="CHAR",
                        help="CSV field separator (default ',', or a tab for .tsv files; "
                             "';' for the CSV of spreadsheets with a decimal comma; '\\t' "
                             "for tabs)")
    kafka = parser.add_argument_group("Kafka topic range (instead of FILE)")
    kafka.add_argument("--kafka-topic", metavar="TOPIC", help="replay this topic's records")
    kafka.add_argument("--bootstrap", metavar="HOST:PORT[,...]",
                       help="brokers (default: kafka.bootstrap_servers of the settings, whose "
                            "security options are used too)")
    kafka.add_argument("--from-offset", type=non_negative_int, metavar="N",
                       help="first offset in each partition (default: the earliest)")
    kafka.add_argument("--to-offset", type=non_negative_int, metavar="N",
                       help="stop before this offset in each partition (default: the end "
                            "when the replay starts)")
    source.add_argument(
        "--jobs", type=positive_int, metavar="N",
        help="processes for a JSON Lines file of several models (each takes a share of the "
             "models; results are identical); default: one per model seen in the file's "
             "first lines, at most one per idle CPU; 1: one process")
    output = parser.add_argument_group("output")
    output.add_argument("--json", action="store_true",
                        help="print the report as one JSON document instead of tables")
    output.add_argument("--progress", action="store_true",
                        help="draw the progress bar on stderr even when it is not a terminal")
    output.add_argument(
        "--plot", metavar="OUT",
        help="draw prequential AUC and the measures over events, raw and normalized, with "
             "alarms and thresholds, to OUT.png, OUT.svg or OUT.html (needs the plot extra: "
             "pip install 'driftwatch-agent[plot]')",
    )
    output.add_argument(
        "--measures", metavar="NAME,...",
        help="measures to draw besides AUC (e.g. gmean,kappa); default: the watched ones",
    )
    output.add_argument(
        "--x-axis", choices=("auto", "events", "time"), default="auto",
        help="the figure's x axis: each model's event count, or event time (UTC) to compare "
             "with incidents by the clock; auto (default): time when every sampled record "
             "carries one (the settings' ts field), else the event count")
    output.add_argument(
        "--block-auc", type=positive_int, metavar="N",
        help="also report each model's AUC per block of N events (tumbling windows, as a "
             "periodic batch report computes it) and over all events (batch AUC), beside "
             "the prequential AUC; the batch AUC keeps every score in memory",
    )
    output.add_argument("--model", action="append", metavar="MODEL",
                        help="draw only this model (repeatable); default: every model, at "
                             "most 8")
    parser.set_defaults(handler=replay_command)


def _fail(message: str) -> int:
    print(f"driftwatch replay: {message}", file=sys.stderr)
    return EXIT_INVALID


def replay_command(args: argparse.Namespace) -> int:
    """The handler: check everything that can be checked, replay, report."""
    from driftwatch.replay.series import check_measures
    from driftwatch.replay.sources import SourceError

    if (args.file is None) == (args.kafka_topic is None):
        return _fail("give a FILE or --kafka-topic (one of them)")
    settings = load_settings_or_report(args.config)
    if settings is None:
        return EXIT_INVALID
    if args.plot:  # imported only then: the figure's module is not a replay's cost
        from driftwatch.replay.plot import PlotError, check_plot

        try:
            check_plot(args.plot)
        except PlotError as exc:
            return _fail(str(exc))
    measures = None
    try:
        if args.measures:
            measures = check_measures(["auc", *(m.strip() for m in args.measures.split(","))])
        fmt = _event_format(settings, from_file=args.kafka_topic is None)
        source = open_source(args, settings, fmt)
    except (ValueError, SourceError) as exc:
        return _fail(str(exc))
    return _replay(args, settings, fmt, source, measures)


def no_events(result: ReplayResult, fmt: EventFormat) -> str:
    """Why nothing was replayed, in one message: the records skipped as other models', the
    rejections, the fields the records have and the fields the settings look for."""
    skipped = ""
    if result.skipped_total:
        models = ", ".join(f"{model!r} {count:,}" for model, count
                           in result.skipped_models.items())
        skipped = (f"{result.skipped_total:,} skipped as other models' (not in "
                   f"events.only_models: {models})")
        if not result.rejected_total:
            where = "keys" if fmt.model_source == "key" else f"{fmt.model_field!r} field"
            return (f"no record became an event: all {skipped}. Check events.only_models "
                    f"against the model ids in the records' {where}")
        skipped = f"; {skipped}"
    reasons = ", ".join(f"{reason} {count:,}" for reason, count in result.rejected.items()
                        if count)
    have = ", ".join(repr(name) for name in result.fields_seen[:20]) or "none (no JSON object)"
    if len(result.fields_seen) > 20:
        have += ", ..."
    return (
        f"no record became an event: {'' if skipped else 'all '}{result.rejected_total:,} "
        f"rejected ({reasons}){skipped}. The {'rejected ' if skipped else ''}records "
        f"have the fields {have}; the settings' events section expects label "
        f"{fmt.label_field!r}, score {fmt.score_field!r} (both required), prediction "
        f"{fmt.prediction_field!r}, ts {fmt.time_field!r} and model {fmt.model_field!r}, "
        f"with label classes {fmt.positive_label!r}/{fmt.negative_label!r}. Map them with "
        f"events.label_field etc. in the settings (or --columns for CSV)"
    )


def _event_format(settings: Settings, from_file: bool) -> EventFormat:
    fmt = settings.events.event_format()
    if from_file and fmt.model_source == "key":
        # A file has no record keys; the model field is the natural place for the id there.
        print(f"driftwatch replay: files have no record keys; reading the model id from the "
              f"{fmt.model_field!r} field instead (events.model_source is key)",
              file=sys.stderr)
        fmt = replace(fmt, model_source="field")
    return fmt


def open_source(
    args: argparse.Namespace, settings: Settings, fmt: EventFormat,
    csv: Callable[[str, EventFormat, Mapping[str, str], str], ReplayInput] | None = None,
) -> ReplayInput:
    """The source the command line names (``replay`` and ``compare`` share the options):
    a Kafka offset range, a CSV file (read by ``csv``, by default
    :class:`~driftwatch.replay.sources.CsvSource`) or JSON Lines. Raises ``SourceError``
    for a combination of options that cannot work."""
    from driftwatch.replay.kafka_range import KafkaRangeSource
    from driftwatch.replay.sources import (
        CsvSource,
        JsonLinesSource,
        SourceError,
        detect_format,
        parse_columns,
    )

    if args.kafka_topic is not None:
        if args.format or args.columns:
            raise SourceError("--format and --columns apply to files, not --kafka-topic")
        config = settings.kafka.consumer_config()
        if args.bootstrap:
            config["bootstrap_servers"] = [s.strip() for s in args.bootstrap.split(",")]
        return KafkaRangeSource(args.kafka_topic, config, from_offset=args.from_offset,
                                to_offset=args.to_offset)
    if args.bootstrap or args.from_offset is not None or args.to_offset is not None:
        raise SourceError("--bootstrap, --from-offset and --to-offset need --kafka-topic")
    kind = detect_format(args.file, args.format)
    if kind == "csv":
        delimiter = args.delimiter or ("\t" if args.file.lower().endswith(".tsv") else ",")
        delimiter = "\t" if delimiter in ("\\t", "tab") else delimiter
        if len(delimiter) != 1:
            raise SourceError(f"--delimiter must be one character, got {args.delimiter!r}")
        return (csv or CsvSource)(args.file, fmt, parse_columns(args.columns), delimiter)
    if args.columns:
        raise SourceError("--columns applies to CSV input (JSON Lines fields are named by "
                          "the settings' events section)")
    return JsonLinesSource(args.file)


def _replay(args: argparse.Namespace, settings: Settings, fmt: EventFormat, source: ReplayInput,
            measures: tuple[str, ...] | None) -> int:
    from driftwatch.replay.parallel import jobs_for
    from driftwatch.replay.progress import Progress
    from driftwatch.replay.report import describe_bad
    from driftwatch.replay.run import Replay, run
    from driftwatch.replay.sources import CsvSource, JsonLinesSource, SourceError

    progress = Progress(sys.stderr, source.name) \
        if args.progress or sys.stderr.isatty() else None
    shown = 0

    def on_bad(bad: BadRecord) -> None:
        nonlocal shown
        shown += 1
        if shown > SHOWN_LIVE_BAD_RECORDS + 1:
            return
        if progress is not None:
            progress.clear()
        if shown > SHOWN_LIVE_BAD_RECORDS:
            print("driftwatch replay: further rejected records are counted in the summary",
                  file=sys.stderr)
        else:
            print(f"driftwatch replay: {source.name}: {describe_bad(bad)}", file=sys.stderr)

    def tick(replay: Replay, force: bool = False) -> None:
        if progress is not None:
            done, total = source.progress()
            progress.update(done, total, replay.records, replay.alarm_count, force)

    if isinstance(source, CsvSource):
        fmt = source.fmt  # field names = the file's column names, for clearer rejections
    plotting = bool(args.plot)

    join = None
    if settings.join.enabled:
        if settings.join.kind_field is None:
            return _fail("a replay reads one stream: with join enabled it needs "
                         "join.kind_field (the field that says prediction or label)")
        join = (settings.join.delayed_labels(
            lambda model: settings.monitoring.monitor_config(model).threshold),
            settings.join.join_format())

    def make_replay(share: tuple[int, int] | None = None) -> Replay:
        return Replay(
            fmt, settings.monitoring.monitor_config, settings.limits.max_models,
            series_models=(set(args.model) if args.model else None) if plotting else (),
            measures=measures, on_bad=on_bad if share is None else None, share=share,
            block_size=args.block_auc,
            join=join, only_models=settings.events.only_models,
        )

    if isinstance(source, JsonLinesSource) and join is None and (
            jobs := jobs_for(source.name, fmt, args.jobs, settings.events.only_models)) > 1:
        source.close()  # each process reads the file itself
        return _finish(args, _parallel(source.name, make_replay, jobs, progress, on_bad), fmt)
    replay = make_replay()
    status = EXIT_OK
    try:
        result = run(source, replay, source.name, tick if progress else None)
    except SourceError as exc:
        if progress is not None:
            progress.clear()
        return _fail(str(exc))
    except KeyboardInterrupt:
        result = replay.result(source.name, 0.0)
        status = EXIT_INTERRUPTED
    if progress is not None:
        tick(replay, force=True)  # the final count, then a clean line for the report
        progress.clear()
    return _finish(args, (result, status), fmt)


def _parallel(path: str, make_replay: MakeReplay, jobs: int, progress: Progress | None,
              on_bad: Callable[[BadRecord], None]) -> tuple[ReplayResult, int]:
    """Replay a JSON Lines file in ``jobs`` processes (:mod:`driftwatch.replay.parallel`);
    the rejected lines are shown once the shares are merged, in order."""
    from driftwatch.replay.parallel import run_parallel

    status = EXIT_OK
    tick = None if progress is None else progress.update
    try:
        result = run_parallel(path, make_replay, jobs, tick)
    except KeyboardInterrupt as interrupt:
        result = interrupt.args[0] if interrupt.args else make_replay((0, 1)).result(path, 0.0)
        status = EXIT_INTERRUPTED
    if progress is not None:
        progress.clear()
    for bad in result.bad_records:
        on_bad(bad)
    return result, status


def _finish(args: argparse.Namespace, outcome: tuple[ReplayResult, int],
            fmt: EventFormat) -> int:
    """Report the result; draw the figure; the exit status."""
    from driftwatch.replay.report import render_text, to_json

    result, status = outcome
    plotting = bool(args.plot)
    if status == EXIT_INTERRUPTED:
        print("driftwatch replay: interrupted; the summary covers the records replayed so far",
              file=sys.stderr)
    if args.json:
        print(json.dumps(to_json(result), indent=2, ensure_ascii=False))
    else:
        print(render_text(result, kafka=args.kafka_topic is not None), end="")
    sys.stdout.flush()  # the report before the notes below, when both go to one terminal
    if not result.events:
        reason = no_events(result, fmt) if result.records else \
            f"{result.source} holds no records: nothing was replayed"
        print(f"driftwatch replay: {reason}", file=sys.stderr)
        return EXIT_NO_EVENTS if status == EXIT_OK else status
    if plotting and status == EXIT_OK:
        from driftwatch.replay.plot import figure_models, over_time, write_plot

        unseen = [m for m in args.model or () if m not in result.snapshots]
        if unseen:
            print(f"driftwatch replay: --model: no events of {', '.join(unseen)}; models "
                  f"seen: {', '.join(result.snapshots)}", file=sys.stderr)
            if len(unseen) == len(args.model):
                return EXIT_INVALID
        drawn, unsampled = figure_models(result, args.model)
        if unsampled:
            print(f"driftwatch replay: --plot: {_unsampled(result, unsampled)}",
                  file=sys.stderr)
        if not drawn:
            print(f"driftwatch replay: --plot: no figure written to {args.plot}: no model "
                  f"has a sample to draw", file=sys.stderr)
            return EXIT_NO_FIGURE
        try:
            write_plot(result, args.plot, drawn, args.x_axis)
        except OSError as exc:
            return _fail(f"--plot {args.plot}: cannot write: {exc.strerror or exc}")
        print(f"driftwatch replay: figure written to {args.plot} "
              f"({len(drawn)} model{'s' if len(drawn) != 1 else ''})", file=sys.stderr)
        untimed = [m for m in drawn if not over_time(result.series[m], args.x_axis)]
        if args.x_axis == "time" and untimed:
            print(f"driftwatch replay: --x-axis time: drawn over events for "
                  f"{', '.join(untimed)}, whose records do not all carry an event time "
                  f"(field {fmt.time_field!r})", file=sys.stderr)
    return status


def _unsampled(result: ReplayResult, models: list[str]) -> str:
    """Why ``models`` have no curve: fewer events than their window holds."""
    listed = ", ".join(f"{m} ({result.snapshots[m].events:,} events, window "
                       f"{result.series[m].window_size:,})" for m in models[:10])
    more = f" and {len(models) - 10} more" if len(models) > 10 else ""
    return (f"not drawn, no sample yet (a model's first comes when its window is full): "
            f"{listed}{more}")
