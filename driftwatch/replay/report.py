"""The replay's report: a summary table for people, or one JSON document for programs.

The table answers what a backtest is for — which alarms would have fired, where in the file
and when, on what values — and ends with each model's final measures, raw and normalized for
the window's class ratio, next to the raw thresholds of the watched floors. The JSON
document (``--json``) holds the same facts with full precision, NaN written as null.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from driftwatch.core.delayed import JoinSnapshot
from driftwatch.core.estimation.watch import EstimateView
from driftwatch.core.measures.block import average_auc
from driftwatch.replay.run import ReplayAlarm, ReplayResult
from driftwatch.replay.sources import BadRecord

SHOWN_BAD_RECORDS = 20
"""Bad records listed in the table (all are counted; ``--json`` lists up to 1000)."""


def number(value: float | None, digits: int = 3) -> str:
    if value is None or math.isnan(value):
        return "-"
    return f"{value:.{digits}f}"


def format_time(ts: float | None) -> str:
    if ts is None:
        return "-"
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%d %H:%M:%S")


def _where(position: int, partition: int | None) -> str:
    return f"{position:,}" if partition is None else f"{partition}:{position}"


def _table(header: Sequence[str], rows: Sequence[Sequence[str]], right: set[int]) -> list[str]:
    widths = [max(len(str(cell)) for cell in column) for column in zip(header, *rows, strict=True)]
    lines = []
    for row in (header, *rows):
        cells = [cell.rjust(width) if i in right else cell.ljust(width)
                 for i, (cell, width) in enumerate(zip(row, widths, strict=True))]
        lines.append("  " + "  ".join(cells).rstrip())
    return lines


def _plural(count: int, word: str) -> str:
    return f"{count:,} {word}{'' if count == 1 else 's'}"


def render_text(result: ReplayResult, kafka: bool = False) -> str:
    """The summary table (see the module docstring)."""
    rate = result.records / result.seconds if result.seconds > 0 else 0.0
    lines = [
        f"Replayed {result.source}: {_plural(result.records, 'record')}, "
        f"{_plural(result.events, 'event')}, {result.rejected_total:,} rejected, "
        f"{f'{result.skipped_total:,} skipped, ' if result.skipped else ''}"
        f"{_plural(len(result.snapshots), 'model')} in {result.seconds:.2f} s "
        f"({rate:,.0f} records/s)",
        "",
    ]
    if result.join is not None:
        lines += [*_join_lines(result.join), ""]
    lines += _alarm_lines(result.alarms, kafka)
    if result.skipped_total:
        lines += ["", _skipped_line(result)]
    if result.rejected_total:
        lines += ["", *_bad_lines(result, kafka)]
    for model, snapshot in result.snapshots.items():
        config = result.configs[model]
        total = snapshot.positives + snapshot.negatives
        share = f"{snapshot.positives / total:.1%}" if total else "-"
        lines += [
            "",
            f"Model {model}: {_plural(snapshot.events, 'event')}; final window of "
            f"{total:,} (size {config.window_size:,}): P {snapshot.positives:,}, "
            f"N {snapshot.negatives:,} ({share} positive)",
        ]
        rows = [
            [name, number(snapshot.values.get(name)),
             number(snapshot.normalized.get(name)),
             number(snapshot.thresholds.get(name))]
            for name in snapshot.values
        ]
        lines += _table(["measure", "raw", "normalized", "threshold"], rows, {1, 2, 3})
        if snapshot.estimate is not None:
            lines.append(_estimate_line(snapshot.estimate))
        if model in result.block_aucs:
            lines.append(_auc_views(result, model, snapshot.values.get("auc")))
    return "\n".join(lines) + "\n"


def _estimate_line(view: EstimateView) -> str:
    """The estimate over the window's predictions, with its standard errors and trust."""
    shown = ", ".join(f"{name} {number(e.value)} ± {number(e.standard_error)}"
                      for name, e in view.estimates.items())
    trust = "trusted" if view.trusted else "NOT trusted"
    return (f"  Estimated from the scores ({view.calibration} calibration, {trust}, "
            f"{view.check_blocks:,} check blocks): {shown}")


def _estimate_json(view: EstimateView | None) -> dict[str, Any]:
    """``estimated`` (each measure's value, standard error and bias) and ``estimate`` (its
    calibration, trust and counts) of a model that estimates."""
    if view is None:
        return {}
    report = view.report
    return {
        "estimated": {name: {"value": _finite(e.value),
                             "standard_error": _finite(e.standard_error),
                             "bias": _finite(e.bias)} for name, e in view.estimates.items()},
        "estimate": {
            "calibration": view.calibration, "trusted": view.trusted,
            "predictions": view.predictions, "skipped": view.skipped,
            "check_blocks": view.check_blocks, "refitting": view.refitting,
            "calibration_error": None if report is None else {
                "events": report.events, "ece": report.ece, "brier": report.brier,
                "miscalibration": report.miscalibration},
        },
    }


def _auc_views(result: ReplayResult, model: str, prequential: float | None) -> str:
    """The model's AUC as a batch report and a periodic report would give it, next to the
    prequential value (Brzezinski & Stefanowski 2017, §4): they differ most when the stream
    drifts."""
    blocks = result.block_aucs[model]
    defined = [v for v in blocks if not math.isnan(v)]
    spread = f" (min {number(min(defined))}, max {number(max(defined))})" if defined else ""
    return (f"  AUC views: batch {number(result.batch_aucs.get(model))} over all events; block "
            f"{number(average_auc(blocks))} = mean of {len(defined):,} blocks of "
            f"{result.block_size:,}{spread}; prequential {number(prequential)} (last window)")


def alarm_header(kafka: bool) -> list[str]:
    """The alarm table's column names (the second is where the record was)."""
    return ["event", "partition:offset" if kafka else "line", "time (UTC)", "model",
            "measure", "detector", "level", "value", "normalized"]


def alarm_rows(alarms: Sequence[ReplayAlarm]) -> list[list[str]]:
    """The alarm table's rows, as text."""
    return [
        [f"{a.alarm.event_count:,}", _where(a.position, a.partition),
         format_time(a.alarm.event_time), a.alarm.model, a.alarm.measure, a.alarm.detector,
         a.alarm.level, number(a.alarm.value), number(a.alarm.normalized)]
        for a in alarms
    ]


def _alarm_lines(alarms: Sequence[ReplayAlarm], kafka: bool) -> list[str]:
    if not alarms:
        return ["Alarms: none"]
    table = _table(alarm_header(kafka), alarm_rows(alarms), {0, 1, 7, 8})
    return [f"Alarms ({len(alarms)}); event = the model's event count", *table]


def describe_bad(bad: BadRecord) -> str:
    """``line 12: not_json: Expecting value: ...``"""
    where = f"line {bad.position}" if bad.partition is None else \
        f"partition {bad.partition} offset {bad.position}"
    return f"{where}: {bad.reason}: {bad.detail}"


def _bad_lines(result: ReplayResult, kafka: bool) -> list[str]:
    counts = ", ".join(f"{reason} {count:,}" for reason, count in result.rejected.items()
                       if count)
    noun = "records" if kafka else "lines"
    lines = [f"Rejected {noun} ({result.rejected_total:,}): {counts}"]
    lines += [f"  {describe_bad(bad)}" for bad in result.bad_records[:SHOWN_BAD_RECORDS]]
    hidden = result.rejected_total - min(len(result.bad_records), SHOWN_BAD_RECORDS)
    if hidden > 0:
        lines.append(f"  ... and {hidden:,} more (--json lists up to 1000)")
    return lines


def _skipped_line(result: ReplayResult) -> str:
    """The records of models not in ``events.only_models``: well-formed, left out on
    purpose, so not among the rejected ones."""
    models = ", ".join(f"{model} {count:,}" for model, count in result.skipped_models.items())
    hidden = result.skipped_total - sum(result.skipped_models.values())
    more = f", other models {hidden:,}" if hidden else ""
    return (f"Skipped records of models not in events.only_models ({result.skipped_total:,}): "
            f"{models}{more}")


def _finite(value: float | None) -> float | None:
    return None if value is None or math.isnan(value) else value


def _join_lines(join: JoinSnapshot) -> list[str]:
    """The join's health: predictions and labels, pairs, what waits, what left unjoined."""
    predictions = sum(join.predictions.values())
    matched = sum(join.matched.values())
    dropped = ", ".join(f"{stream} {reason} {n:,}" for (stream, reason), n in join.dropped.items()
                        if n) or "none"
    return [f"Joined {matched:,} of {predictions:,} predictions with {join.labels:,} labels; "
            f"pending at the end: {sum(join.pending.values()):,} predictions, "
            f"{join.pending_labels:,} labels; left unjoined: {dropped}"]


def _join_json(join: JoinSnapshot) -> dict[str, Any]:
    return {
        "predictions": dict(join.predictions),
        "labels": join.labels,
        "matched": dict(join.matched),
        "pending": dict(join.pending),
        "pending_labels": join.pending_labels,
        "dropped": {f"{stream}/{reason}": n for (stream, reason), n in join.dropped.items()},
        "delay_seconds_mean": {m: (join.delay_sum[m] / n if n else None)
                               for m, n in join.matched.items()},
    }


def to_json(result: ReplayResult) -> dict[str, Any]:
    """The report as plain JSON-ready data (NaN as None)."""
    def where(position: int, partition: int | None) -> dict[str, int]:
        if partition is None:
            return {"line": position}
        return {"partition": partition, "offset": position}

    return {
        "source": result.source,
        "records": result.records,
        "events": result.events,
        "rejected": result.rejected,
        "rejected_total": result.rejected_total,
        "skipped": result.skipped,
        "skipped_total": result.skipped_total,
        "skipped_models": result.skipped_models,
        "seconds": round(result.seconds, 3),
        "alarms": [
            {
                "event": a.alarm.event_count,
                **where(a.position, a.partition),
                "time": a.alarm.event_time,
                "model": a.alarm.model,
                "measure": a.alarm.measure,
                "detector": a.alarm.detector,
                "level": a.alarm.level,
                "value": _finite(a.alarm.value),
                "normalized": _finite(a.alarm.normalized),
                "positives": a.alarm.positives,
                "negatives": a.alarm.negatives,
            }
            for a in result.alarms
        ],
        "bad_records": [
            {**where(b.position, b.partition), "reason": b.reason, "detail": b.detail}
            for b in result.bad_records
        ],
        "models": {
            model: {
                "events": s.events,
                "window_size": result.configs[model].window_size,
                "positives": s.positives,
                "negatives": s.negatives,
                "measures": {name: _finite(v) for name, v in s.values.items()},
                "normalized": {name: _finite(v) for name, v in s.normalized.items()},
                "thresholds": {name: _finite(v) for name, v in s.thresholds.items()},
                "detectors": {f"{m}/{d}": state for (m, d), state in s.detector_states.items()},
                **_views_json(result, model),
                **_estimate_json(s.estimate),
            }
            for model, s in result.snapshots.items()
        },
        **({} if result.join is None else {"join": _join_json(result.join)}),
    }


def _views_json(result: ReplayResult, model: str) -> dict[str, Any]:
    """``block_auc`` and ``batch_auc`` of a model, when the replay kept them."""
    if model not in result.block_aucs:
        return {}
    blocks = result.block_aucs[model]
    return {
        "block_auc": {"size": result.block_size, "values": [_finite(v) for v in blocks],
                      "mean": _finite(average_auc(blocks))},
        "batch_auc": _finite(result.batch_aucs.get(model)),
    }
