"""The comparison run: paired events into a paired window, and the whole run's tests.

Per paired event: one :meth:`PairedWindow.update
<driftwatch.core.comparison.window.PairedWindow.update>` (O(log d)) and appends to compact
arrays; every ``every`` paired events a sample of the window's statistics for the figure and
the time table (DeLong over the window is the costly part, O(d log d) per sample). At
the end, over all events: DeLong, McNemar and κ, the bootstrap interval, and the sign and
Wilcoxon tests over every complete block; batch, mean block and mean prequential AUC of both.
Those need every score: the run keeps 25 bytes per paired event (250 MB for ten million).
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np

from driftwatch.compare.pairing import PairedEvent, Pairer
from driftwatch.core.comparison.delong import DeLongResult, delong
from driftwatch.core.comparison.mcnemar import CrispComparison, cell, crisp_comparison
from driftwatch.core.comparison.resampling import (
    BootstrapResult,
    bootstrap_auc_difference,
    fold_aucs,
)
from driftwatch.core.comparison.sign_test import SignTestResult, sign_test
from driftwatch.core.comparison.wilcoxon import WilcoxonResult, wilcoxon_signed_rank
from driftwatch.core.comparison.window import PairedWindow
from driftwatch.core.measures.block import average_auc
from driftwatch.decoding.decoder import Rejected
from driftwatch.replay.sources import BadRecord, ReplayRecord

FOLDS = 10
"""Random folds of Bifet et al.'s (2015) k-fold scheme (§3: each event is tested in one fold)."""

MAX_KEPT_BAD_RECORDS = 1000
"""Bad records kept with their position; all are counted."""


@dataclass(slots=True)
class CompareSeries:
    """The window's statistics every ``every`` paired events (for the figure and the table)."""

    positions: list[int] = field(default_factory=list)
    times: list[float | None] = field(default_factory=list)
    champion_auc: list[float] = field(default_factory=list)
    challenger_auc: list[float] = field(default_factory=list)
    delong_p: list[float] = field(default_factory=list)
    wilcoxon_p: list[float] = field(default_factory=list)
    blocks: list[int] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class WholeRun:
    """The tests over every paired event of the run."""

    delong: DeLongResult
    crisp: CrispComparison
    bootstrap: BootstrapResult | None
    block_aucs: tuple[tuple[float, float], ...]
    block_times: tuple[tuple[float, float], ...]
    """Event time of each block's first and last event (NaN where an event had none)."""
    sign: SignTestResult
    wilcoxon: WilcoxonResult
    folds: WilcoxonResult
    """Wilcoxon over ``FOLDS`` random folds of the events (Bifet et al.'s (2015) k-fold scheme)."""
    batch_auc: tuple[float, float]
    mean_block_auc: tuple[float, float]
    mean_prequential_auc: tuple[float, float]


@dataclass(slots=True)
class CompareResult:
    """Everything a comparison found."""

    source: str
    champion: str
    challenger: str
    window: int
    block_size: int
    thresholds: tuple[float, float]
    every: int = 1
    records: int = 0
    paired: int = 0
    rejected: dict[str, int] = field(default_factory=dict)
    bad_records: list[BadRecord] = field(default_factory=list)
    series: CompareSeries = field(default_factory=CompareSeries)
    final: dict[str, float] = field(default_factory=dict)
    whole: WholeRun | None = None
    seconds: float = 0.0

    @property
    def rejected_total(self) -> int:
        return sum(self.rejected.values())


class Comparison:
    """Feeds records through a :class:`Pairer` into a paired window and keeps the run.

    Parameters:
        pairer: turns records into paired events.
        names: how the report calls the champion and the challenger.
        window: d, the prequential window of both models.
        thresholds: the champion's and the challenger's crisp thresholds.
        block_size: events per block for the block tests (default: ``window``).
        blocks: recent blocks the running test uses.
        every: sample the window's statistics every this many paired events (default
            d / 10, at least 1).
    """

    def __init__(
        self,
        pairer: Pairer,
        names: tuple[str, str] = ("champion", "challenger"),
        *,
        window: int = 1000,
        thresholds: tuple[float, float] = (0.5, 0.5),
        block_size: int | None = None,
        blocks: int = 10,
        every: int | None = None,
    ) -> None:
        self.pairer = pairer
        self.names = names
        self.paired_window = PairedWindow(
            window, thresholds[0], thresholds[1], block_size=block_size, blocks=blocks
        )
        self.block_size = block_size or window
        self.every = every or max(1, window // 10)
        self.records = 0
        self.rejected: dict[str, int] = {}
        self.bad_records: list[BadRecord] = []
        self.series = CompareSeries()
        self._labels = array("b")
        self._scores = (array("d"), array("d"))
        self._times = array("d")  # NaN for an event without a time
        self._cells = [0] * 8
        self._prequential = [0.0, 0.0, 0]  # sums of both AUCs over full windows, and count

    @property
    def paired(self) -> int:
        return len(self._labels)

    def process(self, records: Iterable[ReplayRecord]) -> None:
        """Pair and feed every record."""
        for record in records:
            self.process_one(record)

    def process_one(self, record: ReplayRecord) -> None:
        self.records += 1
        outcome: PairedEvent | Rejected | None
        if record.rejected is not None:
            outcome = record.rejected
        else:
            outcome = self.pairer.feed(record.value, record.key, record.position)
        if isinstance(outcome, Rejected):
            self._reject(outcome, record.position, record.partition)
        elif outcome is not None:
            self._add(outcome)

    def _reject(self, rejected: Rejected, position: int, partition: int | None) -> None:
        self.rejected[rejected.reason] = self.rejected.get(rejected.reason, 0) + 1
        if len(self.bad_records) < MAX_KEPT_BAD_RECORDS:
            self.bad_records.append(
                BadRecord(position, partition, rejected.reason, rejected.detail)
            )

    def _add(self, event: PairedEvent) -> None:
        window = self.paired_window
        window.update(
            event.y_true,
            event.champion_score,
            event.challenger_score,
            event.champion_pred,
            event.challenger_pred,
        )
        self._labels.append(event.y_true)
        self._scores[0].append(event.champion_score)
        self._scores[1].append(event.challenger_score)
        self._times.append(math.nan if event.ts is None else event.ts)
        pred_a = event.champion_pred
        if pred_a is None:
            pred_a = int(event.champion_score >= window.champion.threshold)
        pred_b = event.challenger_pred
        if pred_b is None:
            pred_b = int(event.challenger_score >= window.challenger.threshold)
        self._cells[cell(event.y_true, pred_a, pred_b)] += 1
        if len(window) == window.size:
            a, b = window.champion.auc, window.challenger.auc
            if not (math.isnan(a) or math.isnan(b)):
                self._prequential[0] += a
                self._prequential[1] += b
                self._prequential[2] += 1
        if self.paired % self.every == 0:
            self._sample(event.ts)

    def _sample(self, ts: float | None) -> None:
        window, series = self.paired_window, self.series
        series.positions.append(self.paired)
        series.times.append(ts)
        series.champion_auc.append(window.champion.auc)
        series.challenger_auc.append(window.challenger.auc)
        series.delong_p.append(window.delong().p_value)
        _, wilcoxon = window.block_tests()
        series.wilcoxon_p.append(wilcoxon.p_value if wilcoxon.n else math.nan)
        series.blocks.append(len(window.block_aucs))

    def result(
        self,
        source: str,
        seconds: float = 0.0,
        *,
        replicates: int = 200,
        confidence: float = 0.95,
        seed: int = 0,
    ) -> CompareResult:
        """The run's result; the whole-run tests when at least one event was paired.

        ``replicates`` = 0 skips the bootstrap.
        """
        unpaired = self.pairer.finish()
        if unpaired:
            self.rejected["unpaired"] = self.rejected.get("unpaired", 0) + unpaired
        window = self.paired_window
        result = CompareResult(
            source,
            self.names[0],
            self.names[1],
            window.size,
            self.block_size,
            (window.champion.threshold, window.challenger.threshold),
            every=self.every,
            records=self.records,
            paired=self.paired,
            rejected=dict(self.rejected),
            bad_records=list(self.bad_records),
            series=self.series,
            final=window.statistics() if self.paired else {},
            seconds=seconds,
        )
        if self.paired:
            result.whole = self._whole(replicates, confidence, seed)
        return result

    def _whole(self, replicates: int, confidence: float, seed: int) -> WholeRun:
        times, size = self._times, self.block_size
        labels = np.frombuffer(self._labels, dtype=np.int8)
        a, b = (np.frombuffer(scores, dtype=np.float64) for scores in self._scores)
        whole = delong(labels, a, b)
        # Each block's two AUCs, exact (the same integer pair counts as AUCPairs), vectorized.
        blocks = [
            delong(labels[k : k + size], a[k : k + size], b[k : k + size])
            for k in range(0, labels.size - size + 1, size)
        ]
        blocks_a = [block.champion_auc for block in blocks]
        blocks_b = [block.challenger_auc for block in blocks]
        both_classes = 0 < int(labels.sum()) < labels.size
        folds = fold_aucs(labels, a, b, folds=FOLDS, seed=seed)
        bootstrap = None
        if replicates and both_classes:
            bootstrap = bootstrap_auc_difference(
                labels, a, b, replicates=replicates, confidence=confidence, seed=seed
            )
        total_a, total_b, count = self._prequential
        full = int(count)
        return WholeRun(
            delong=whole,
            crisp=crisp_comparison(self._cells),
            bootstrap=bootstrap,
            block_aucs=tuple(zip(blocks_a, blocks_b, strict=True)),
            block_times=tuple(
                (times[k * size], times[(k + 1) * size - 1]) for k in range(len(blocks_a))
            ),
            sign=sign_test(blocks_a, blocks_b),
            wilcoxon=wilcoxon_signed_rank(blocks_a, blocks_b),
            folds=wilcoxon_signed_rank(folds.champion, folds.challenger),
            batch_auc=(whole.champion_auc, whole.challenger_auc),
            mean_block_auc=(average_auc(blocks_a), average_auc(blocks_b)),
            mean_prequential_auc=(
                (total_a / full, total_b / full) if full else (math.nan, math.nan)
            ),
        )
