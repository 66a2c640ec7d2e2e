"""Block (tumbling-window) and batch AUC: the views prequential AUC is contrasted with.

Brzezinski & Stefanowski 2017 (§4) compare four ways of computing AUC on a stream. *Batch* AUC
takes every example at once, so the order of arrival does not matter; *block* AUC cuts the stream
into consecutive, non-overlapping blocks of d examples and computes one AUC per block, which is
what a periodic batch report of a deployed model shows; *prequential* AUC
(:class:`~driftwatch.core.window.PrequentialWindow`) slides a window of d examples one event
at a time. On a stationary stream all three agree on average; with drift, or with classes
arriving in runs, they can be far apart (Brzezinski & Stefanowski 2017, Tables 1–2: batch AUC 0.00
next to block AUC 1.00 for the same scores). Reporting block and batch AUC beside the prequential
one lets users see how the view they know from batch reports differs from the one that alarms.

Both functions are exact (the pair count of
:class:`~driftwatch.core.measures.auc.AUCPairs`, ties ½) and give NaN for a block without
both classes, as driftwatch does for a window. Brzezinski & Stefanowski 2017 average with MOA's
convention that such a block counts as 1; :func:`average_auc` does either.

Reference:
    Brzezinski, D., Stefanowski, J. (2017). Prequential AUC, §4.1–4.2.1.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

from driftwatch.core.events import check_label, check_score
from driftwatch.core.measures.auc import AUCPairs


def _pairs(events: Iterable[tuple[object, object]], start: int = 0) -> AUCPairs:
    pairs = AUCPairs()
    for i, (y_true, y_score) in enumerate(events, start):
        pairs.add(check_label(y_true, f"y_true[{i}]"), check_score(y_score, f"y_score[{i}]"))
    return pairs


def _zip(y_true: Sequence[object], y_score: Sequence[object]) -> list[tuple[object, object]]:
    if len(y_true) != len(y_score):
        raise ValueError(f"y_true and y_score differ in length: {len(y_true)} ≠ {len(y_score)}")
    return list(zip(y_true, y_score, strict=True))


def batch_auc(y_true: Sequence[object], y_score: Sequence[object]) -> float:
    """AUC of all examples at once (Brzezinski & Stefanowski's (2017) batch AUC); NaN without both
    classes. O(n log n).

    Example (Brzezinski & Stefanowski 2017, Table 2, C3: positives and negatives alternate, 36 of 64
    pairs won):
        >>> labels = [1, 0] * 8
        >>> batch_auc(labels, list(range(16, 0, -1)))  # t = 1 … 16, scores fall
        0.5625
    """
    return _pairs(_zip(y_true, y_score)).auc


def block_aucs(
    y_true: Sequence[object], y_score: Sequence[object], size: int, *, partial: bool = False
) -> list[float]:
    """AUC of each consecutive block of ``size`` examples, in arrival order. O(n log size).

    Parameters:
        y_true, y_score: the stream in arrival order.
        size: d, the block length (≥ 1).
        partial: also return the AUC of a last block shorter than ``size`` (off by default:
            a report computes a block's AUC when the block is complete).

    Example (Brzezinski & Stefanowski 2017, Table 2, C3 with d = 2: every block is one positive
    above one negative):
        >>> block_aucs([1, 0] * 8, list(range(16, 0, -1)), 2)
        [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0]
    """
    if isinstance(size, bool) or not isinstance(size, int) or size < 1:
        raise ValueError(f"size must be an integer ≥ 1, got {size!r}")
    events = _zip(y_true, y_score)
    stop = len(events) if partial else len(events) - len(events) % size
    return [_pairs(events[i : i + size], i).auc for i in range(0, stop, size)]


def average_auc(values: Iterable[float], *, one_class: float | None = None) -> float:
    """Mean of per-block (or per-event) AUCs; NaN entries are skipped or replaced.

    Parameters:
        values: AUCs, NaN where a block had one class only.
        one_class: None skips NaN entries (driftwatch's reading: no measurement); a number
            replaces them (1.0 is MOA's and Brzezinski & Stefanowski's (2017) convention, which
            reproduces the paper's Tables 1–2). NaN when nothing is left to average.
    """
    kept = [
        (one_class if one_class is not None else value) if math.isnan(value) else value
        for value in values
        if one_class is not None or not math.isnan(value)
    ]
    return math.fsum(kept) / len(kept) if kept else math.nan


class BlockAUCs:
    """Block and batch AUC kept while a stream goes by, for a replay to report at the end.

    Each :meth:`update` adds the event to the current block's pair count and to the
    whole stream's; when the block holds ``size`` events its AUC is appended to
    :attr:`values` and the next block starts. O(log size + log n) per event, O(n) memory
    for the batch AUC's sorted scores (a replay's whole input; pass ``batch=False`` to keep
    only the current block). Inputs are validated as by :func:`block_aucs`.

    Example (Brzezinski & Stefanowski 2017, Table 2, C3 at d = 2):
        >>> blocks = BlockAUCs(2)
        >>> for t in range(16):
        ...     blocks.update(1 - t % 2, 16.0 - t)
        >>> blocks.values == [1.0] * 8, blocks.batch_auc
        (True, 0.5625)
    """

    __slots__ = ("_batch", "_block", "_count", "size", "values")

    def __init__(self, size: int, *, batch: bool = True) -> None:
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise ValueError(f"size must be an integer ≥ 1, got {size!r}")
        self.size = size
        self.values: list[float] = []
        self._block = AUCPairs()
        self._batch = AUCPairs() if batch else None
        self._count = 0

    def update(self, y_true: object, y_score: object) -> None:
        """Add one event. Raises ``ValueError`` naming the argument for a bad one."""
        label = check_label(y_true, "y_true")
        score = check_score(y_score, "y_score")
        self._block.add(label, score)
        if self._batch is not None:
            self._batch.add(label, score)
        self._count += 1
        if len(self._block) == self.size:
            self.values.append(self._block.auc)
            self._block = AUCPairs()

    @property
    def batch_auc(self) -> float:
        """AUC of every event so far (NaN without both classes, or with ``batch=False``)."""
        return self._batch.auc if self._batch is not None else math.nan

    def mean(self, *, one_class: float | None = None) -> float:
        """:func:`average_auc` of the complete blocks."""
        return average_auc(self.values, one_class=one_class)
