"""The comparison's report: a Markdown summary to paste in a review, or one JSON document.

The summary leads with a verdict and the test it rests on. Bifet et al. 2015 (§4.1) found McNemar's
test calling two seeds of the same learner different in 42–80 % of its runs: its unit is the
event, a stream has no shortage of events, and with enough of them any real difference,
however small, is significant. DeLong's test shares that unit. The paper recommends a test
whose unit is a fold or block, so the verdict comes from Wilcoxon's signed-rank test over the
run's blocks: it calls a difference significant only when it shows in most blocks, and its
smallest p-value is set by the number of blocks (2/2ᵏ), not by the traffic. That helps less
than one might hope: with a real but negligible AUC gap of 0.002 over 200 000 events, DeLong
rejects in 52 % of seeded runs and Wilcoxon over 10 blocks in 43 %
(``benchmarks/comparison.py``). Hence ``min_difference``: a significant difference smaller
than the smallest one that matters is reported as negligible. The block test needs at least
6 blocks, since with 5 or fewer no outcome reaches p < 0.05; a shorter run falls back to
DeLong, and the summary says so. The event-level tests are reported beside it, with effect
sizes and intervals, so a reviewer sees both how sure and how large.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from driftwatch.compare.run import FOLDS, CompareResult, WholeRun

MIN_BLOCKS_FOR_VERDICT = 6
"""Wilcoxon's exact two-sided p-value can reach 0.05 only from 6 nonzero differences on."""

SHOWN_BAD_RECORDS = 5
"""Rejected records listed in the summary (all are counted; ``--json`` lists up to 1000)."""

TIME_ROWS = 10
"""Rows of the over-time table (evenly spaced samples; ``--json`` has them all)."""


def number(value: float | None, digits: int = 3) -> str:
    if value is None or math.isnan(value):
        return "-"
    return f"{value:.{digits}f}"


def signed(value: float | None, digits: int = 3) -> str:
    if value is None or math.isnan(value):
        return "-"
    return f"{value:+.{digits}f}"


def p_value(value: float | None) -> str:
    if value is None or math.isnan(value):
        return "-"
    if value < 1e-4:
        return f"{value:.1e}"
    return f"{value:.4f}"


def where(position: int, partition: int | None) -> str:
    """``line 12`` for a file, ``partition 0 offset 12`` for Kafka."""
    return (
        f"line {position:,}" if partition is None else f"partition {partition} offset {position:,}"
    )


def _time(ts: float | None) -> str:
    if ts is None:
        return "-"
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%d %H:%M")


def _table(header: Sequence[str], rows: Sequence[Sequence[str]], right: set[int]) -> list[str]:
    """A Markdown table, padded so that it also reads well as plain text."""
    widths = [max(len(cell) for cell in column) for column in zip(header, *rows, strict=True)]
    lines = []
    for k, row in enumerate((header, *rows)):
        cells = [
            cell.rjust(width) if i in right else cell.ljust(width)
            for i, (cell, width) in enumerate(zip(row, widths, strict=True))
        ]
        lines.append("| " + " | ".join(cells) + " |")
        if k == 0:
            marks = [
                "-" * (width - 1) + ":" if i in right else "-" * width
                for i, width in enumerate(widths)
            ]
            lines.append("| " + " | ".join(marks) + " |")
    return lines


def verdict(result: CompareResult, alpha: float, min_difference: float = 0.0) -> tuple[str, str]:
    """The verdict and the sentence that says it and on which test.

    ``"better"`` or ``"worse"`` (significant at ``alpha``, and the whole-run AUC difference
    is at least ``min_difference``), ``"negligible"`` (significant, but smaller than that),
    ``"no significant difference"``, or ``"undecided"`` (no test defined).
    """
    whole = result.whole
    if whole is None:
        return "undecided", "No event was paired: nothing to compare."
    wilcoxon = whole.wilcoxon
    if wilcoxon.n >= MIN_BLOCKS_FOR_VERDICT:
        test = (
            f"Wilcoxon signed-rank test over {wilcoxon.n} blocks of "
            f"{result.block_size:,} events, p = {p_value(wilcoxon.p_value)}"
        )
        p, up = wilcoxon.p_value, wilcoxon.challenger_rank_sum > wilcoxon.champion_rank_sum
    else:
        p, up = whole.delong.p_value, whole.delong.difference > 0
        test = (
            f"DeLong's test over all events, p = {p_value(p)}; too few blocks "
            f"({wilcoxon.n} with a difference) for the block test: shorten --block-size"
        )
    if math.isnan(p):
        return "undecided", f"Undecided: the test is undefined ({test})."
    if p < alpha:
        word = "better" if up else "worse"
        size = abs(whole.delong.difference)
        if size < min_difference:
            return "negligible", (
                f"The challenger is significantly {word} than the champion ({test}, "
                f"α = {alpha}), but its AUC differs by {size:.4f}, less than the smallest "
                f"difference that matters here ({min_difference:g})."
            )
        return (
            word,
            f"The challenger is significantly {word} than the champion ({test}, α = {alpha}).",
        )
    return (
        "no significant difference",
        f"No significant difference between the challenger and the champion ({test}, α = {alpha}).",
    )


def render_text(
    result: CompareResult,
    *,
    alpha: float = 0.05,
    min_difference: float = 0.0,
    time_rows: int = TIME_ROWS,
) -> str:
    """The Markdown summary (see the module docstring)."""
    lines = [
        "## Challenger against champion"
        if (result.champion, result.challenger) == ("champion", "challenger")
        else f"## Challenger {result.challenger} against champion {result.champion}",
        "",
        f"{result.source}: {result.records:,} records, {result.paired:,} paired events"
        + (f", {result.rejected_total:,} rejected ({_reasons(result)})" if result.rejected else "")
        + f". Window d = {result.window:,}, blocks of {result.block_size:,} events, "
        f"thresholds {result.thresholds[0]:g} / {result.thresholds[1]:g}.",
        "",
    ]
    if result.bad_records:
        shown = result.bad_records[:SHOWN_BAD_RECORDS]
        lines += [
            f"Rejected records (first {len(shown)}):",
            *(f"- {where(b.position, b.partition)}: {b.reason}: {b.detail}" for b in shown),
            "",
        ]
    whole = result.whole
    if whole is None:
        return "\n".join([*lines, "No event was paired: nothing to compare.", ""])
    _, sentence = verdict(result, alpha, min_difference)
    lines += [f"**{sentence}**", ""]
    lines += _measure_table(result, whole)
    lines += ["", *_test_table(whole, result.block_size), ""]
    lines.append(
        "Differences are challenger − champion. DeLong and McNemar count events: on long runs "
        "they call even negligible differences significant (Bifet et al., KDD 2015, §4.1), so "
        "read them with the interval. The verdict counts blocks, which is what Bifet et al. "
        "recommend."
    )
    if result.series.positions and time_rows:
        lines += ["", *_time_table(result, time_rows)]
    return "\n".join(lines) + "\n"


def _reasons(result: CompareResult) -> str:
    return ", ".join(f"{reason} {count:,}" for reason, count in result.rejected.items())


def _measure_table(result: CompareResult, whole: WholeRun) -> list[str]:
    blocks = sum(1 for a, b in whole.block_aucs if not (math.isnan(a) or math.isnan(b)))
    final = result.final
    crisp = whole.crisp
    rows = [
        ("AUC, all events", *whole.batch_auc),
        (f"AUC, mean of {blocks:,} blocks", *whole.mean_block_auc),
        ("prequential AUC, mean over the run", *whole.mean_prequential_auc),
        ("prequential AUC, last window", final["champion_auc"], final["challenger_auc"]),
        ("accuracy, all events", crisp.champion_accuracy, crisp.challenger_accuracy),
    ]
    return _table(
        ["measure", "champion", "challenger", "difference"],
        [[name, number(a), number(b), signed(b - a)] for name, a, b in rows],
        {1, 2, 3},
    )


def _test_table(whole: WholeRun, block_size: int) -> list[str]:
    level = f"{whole.bootstrap.confidence:.0%}" if whole.bootstrap else "95%"
    delong = whole.delong
    low, high = delong.confidence_interval(whole.bootstrap.confidence if whole.bootstrap else 0.95)
    rows = [
        [
            "DeLong, all events",
            f"z = {number(delong.z, 2)}",
            p_value(delong.p_value),
            f"difference {signed(delong.difference)}, {level} CI {signed(low)} … {signed(high)}",
        ]
    ]
    if whole.bootstrap is not None:
        boot = whole.bootstrap
        rows.append(
            [
                f"bootstrap, {len(boot.replicates)} Poisson(1) replicates",
                f"SE = {number(boot.standard_error, 4)}",
                "",
                f"{level} CI {signed(boot.low)} … {signed(boot.high)}",
            ]
        )
    wilcoxon, sign = whole.wilcoxon, whole.sign
    rows += [
        [
            f"Wilcoxon signed-rank, blocks of {block_size:,}",
            f"T = {wilcoxon.statistic:g}",
            p_value(wilcoxon.p_value),
            f"{wilcoxon.n} blocks with a difference; rank sums {wilcoxon.challenger_rank_sum:g} "
            f"(challenger higher) / {wilcoxon.champion_rank_sum:g}",
        ],
        [
            "sign test, same blocks",
            f"{sign.challenger_wins} of {sign.challenger_wins + sign.champion_wins}",
            p_value(sign.p_value),
            "blocks where the challenger's AUC is higher",
        ],
        [
            f"Wilcoxon signed-rank, {FOLDS} random folds",
            f"T = {whole.folds.statistic:g}",
            p_value(whole.folds.p_value),
            "Bifet et al.'s (2015) k-fold scheme: each event in one fold chosen at random",
        ],
    ]
    mcnemar = whole.crisp.mcnemar
    method = "exact binomial" if mcnemar.method == "exact" else "χ², continuity-corrected"
    rows += [
        [
            f"McNemar ({method}), all events",
            f"{mcnemar.statistic:.2f}",
            p_value(mcnemar.p_value),
            f"challenger alone right on {mcnemar.challenger_only:,}, "
            f"champion alone on {mcnemar.champion_only:,}",
        ],
        [
            "κ of the challenger relative to the champion",
            number(whole.crisp.relative_kappa),
            "",
            "share of the champion's errors the challenger avoids",
        ],
        [
            "agreement κ of the two models' predictions",
            number(whole.crisp.agreement_kappa),
            "",
            "",
        ],
    ]
    return _table(["test", "statistic", "p-value", "note"], rows, {1, 2})


def _time_table(result: CompareResult, count: int) -> list[str]:
    series = result.series
    n = len(series.positions)
    picks = sorted({round(i * (n - 1) / max(count - 1, 1)) for i in range(min(count, n))})
    rows = [
        [
            f"{series.positions[i]:,}",
            _time(series.times[i]),
            number(series.champion_auc[i]),
            number(series.challenger_auc[i]),
            signed(series.challenger_auc[i] - series.champion_auc[i]),
            p_value(series.delong_p[i]),
            p_value(series.wilcoxon_p[i]),
        ]
        for i in picks
    ]
    return [
        f"Over time (window d = {result.window:,}; Wilcoxon over the last "
        f"{max(series.blocks, default=0)} complete blocks):",
        "",
        *_table(
            [
                "event",
                "time (UTC)",
                "champion AUC",
                "challenger AUC",
                "difference",
                "DeLong p",
                "Wilcoxon p",
            ],
            rows,
            {0, 2, 3, 4, 5, 6},
        ),
    ]


def _finite(value: float | None) -> float | None:
    return None if value is None or math.isnan(value) or math.isinf(value) else value


def to_json(
    result: CompareResult, *, alpha: float = 0.05, min_difference: float = 0.0
) -> dict[str, Any]:
    """Everything as plain JSON-ready data (NaN and ±∞ as null)."""
    whole = result.whole
    document: dict[str, Any] = {
        "source": result.source,
        "champion": result.champion,
        "challenger": result.challenger,
        "records": result.records,
        "paired": result.paired,
        "rejected": result.rejected,
        "window": result.window,
        "block_size": result.block_size,
        "thresholds": list(result.thresholds),
        "seconds": round(result.seconds, 3),
        "verdict": verdict(result, alpha, min_difference)[0],
        "alpha": alpha,
        "min_difference": min_difference,
        "final_window": {k: _finite(v) for k, v in result.final.items()},
        "bad_records": [
            {
                "position": b.position,
                "partition": b.partition,
                "reason": b.reason,
                "detail": b.detail,
            }
            for b in result.bad_records
        ],
        "series": {
            "event": result.series.positions,
            "time": result.series.times,
            "champion_auc": [_finite(v) for v in result.series.champion_auc],
            "challenger_auc": [_finite(v) for v in result.series.challenger_auc],
            "delong_p_value": [_finite(v) for v in result.series.delong_p],
            "wilcoxon_p_value": [_finite(v) for v in result.series.wilcoxon_p],
        },
    }
    if whole is None:
        return document
    delong, crisp, boot = whole.delong, whole.crisp, whole.bootstrap
    low, high = delong.confidence_interval(boot.confidence if boot else 0.95)
    document["whole_run"] = {
        "batch_auc": [_finite(v) for v in whole.batch_auc],
        "mean_block_auc": [_finite(v) for v in whole.mean_block_auc],
        "mean_prequential_auc": [_finite(v) for v in whole.mean_prequential_auc],
        "delong": {
            "difference": _finite(delong.difference),
            "z": _finite(delong.z),
            "p_value": _finite(delong.p_value),
            "ci": [_finite(low), _finite(high)],
        },
        "bootstrap": None
        if boot is None
        else {
            "replicates": len(boot.replicates),
            "confidence": boot.confidence,
            "ci": [_finite(boot.low), _finite(boot.high)],
            "standard_error": _finite(boot.standard_error),
        },
        "mcnemar": {
            "method": crisp.mcnemar.method,
            "statistic": crisp.mcnemar.statistic,
            "p_value": crisp.mcnemar.p_value,
            "challenger_only": crisp.mcnemar.challenger_only,
            "champion_only": crisp.mcnemar.champion_only,
        },
        "accuracy": [_finite(crisp.champion_accuracy), _finite(crisp.challenger_accuracy)],
        "relative_kappa": _finite(crisp.relative_kappa),
        "agreement_kappa": _finite(crisp.agreement_kappa),
        "blocks": [[_finite(a), _finite(b)] for a, b in whole.block_aucs],
        "sign_test": {
            "challenger_wins": whole.sign.challenger_wins,
            "champion_wins": whole.sign.champion_wins,
            "p_value": whole.sign.p_value,
        },
        "wilcoxon": {
            "statistic": whole.wilcoxon.statistic,
            "n": whole.wilcoxon.n,
            "p_value": whole.wilcoxon.p_value,
            "method": whole.wilcoxon.method,
        },
        "folds_wilcoxon": {
            "statistic": whole.folds.statistic,
            "n": whole.folds.n,
            "p_value": whole.folds.p_value,
        },
    }
    return document
