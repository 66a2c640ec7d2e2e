"""Champion and challenger over the same last d events: both windows and their comparison.

A :class:`PairedWindow` receives each labelled event once with both models' scores (and
crisp predictions, or thresholds to derive them). It keeps one
:class:`~driftwatch.core.window.PrequentialWindow` per model over the *same* events, so every
measure of one is comparable with the same measure of the other at any moment, and beside
them what the comparison needs:

- the scores of both models for the window's events, for DeLong's paired test (computed on
  demand, O(d log d));
- the eight counts of (label, champion prediction, challenger prediction), for McNemar and
  the two κ (O(1) on demand);
- both models' AUC on each of the last ``blocks`` consecutive blocks of ``block_size``
  events, for the sign and Wilcoxon tests Bifet et al. 2015 (§4) recommends: their unit is the
  block, so their power does not grow with the traffic the way McNemar's and DeLong's do.

Reference:
    Bifet, A. et al. (2015). Efficient online evaluation of big data stream classifiers
   , §4.
"""

from __future__ import annotations

import math
import numbers
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from driftwatch.core.comparison.delong import DeLongResult, delong
from driftwatch.core.comparison.mcnemar import CrispComparison, cell, crisp_comparison
from driftwatch.core.comparison.sign_test import SignTestResult, sign_test
from driftwatch.core.comparison.wilcoxon import WilcoxonResult, wilcoxon_signed_rank
from driftwatch.core.events import check_label, check_score
from driftwatch.core.measures.auc import AUCPairs
from driftwatch.core.state import check_state
from driftwatch.core.window import STATE_VERSION as WINDOW_STATE_VERSION
from driftwatch.core.window import PrequentialWindow

STATE_VERSION = 1
"""Version of :meth:`PairedWindow.export_state`'s format; restore refuses any other."""

_STATE_KEYS = frozenset(
    {
        "version",
        "size",
        "thresholds",
        "block_size",
        "blocks",
        "events",
        "label_before_window",
        "block",
        "block_aucs",
    }
)

STATISTICS: tuple[str, ...] = (
    "champion_auc",
    "challenger_auc",
    "auc_difference",
    "delong_z",
    "delong_p_value",
    "champion_accuracy",
    "challenger_accuracy",
    "relative_kappa",
    "agreement_kappa",
    "mcnemar_statistic",
    "mcnemar_p_value",
    "sign_p_value",
    "wilcoxon_statistic",
    "wilcoxon_p_value",
    "blocks",
)
"""The names :meth:`PairedWindow.statistics` reports, in its order."""


@dataclass(frozen=True, slots=True)
class ComparisonConfig:
    """One configured comparison, as the agent runs it (the settings resolve the defaults)."""

    name: str
    model: str
    challenger_score_field: str
    challenger_prediction_field: str | None
    window_size: int
    threshold: float
    challenger_threshold: float
    block_size: int
    blocks: int


def _check_count(value: object, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise ValueError(f"{name} must be an integer ≥ 1, got {value!r}")
    return int(value)


def _auc_or_none(value: float) -> float | None:
    return None if math.isnan(value) else value


class PairedWindow:
    """Both models' prequential measures over the same last ``size`` events, and their tests.

    Parameters:
        size: d, the window length shared by both models.
        threshold: the champion's crisp threshold (``score >= threshold`` predicts 1).
        challenger_threshold: the challenger's; None uses ``threshold``.
        block_size: events per block for the block tests; None uses ``size``.
        blocks: how many of the most recent complete blocks the sign and Wilcoxon tests use.

    Costs, with d = ``size``: :meth:`update` O(log d); :meth:`crisp`, AUCs O(1);
    :meth:`delong` O(d log d); :meth:`block_tests` O(``blocks``²) at most;
    :meth:`export_state` O(d); :meth:`from_state` O(d log d).

    Example:
        >>> window = PairedWindow(size=4, block_size=2)
        >>> for y, a, b in [(1, 0.6, 0.9), (0, 0.7, 0.2), (1, 0.4, 0.8), (0, 0.3, 0.6)]:
        ...     window.update(y, a, b)
        >>> window.champion.auc, window.challenger.auc, window.auc_difference
        (0.5, 1.0, 0.5)
        >>> window.block_aucs
        ((0.0, 1.0), (1.0, 1.0))
        >>> window.crisp().mcnemar.challenger_only, window.crisp().mcnemar.champion_only
        (2, 1)
    """

    __slots__ = (
        "_block",
        "_block_aucs",
        "_block_pairs",
        "_block_size",
        "_cells",
        "_challenger",
        "_champion",
        "_events",
        "_size",
    )

    def __init__(
        self,
        size: int = 1000,
        threshold: float = 0.5,
        challenger_threshold: float | None = None,
        *,
        block_size: int | None = None,
        blocks: int = 10,
    ) -> None:
        self._size = _check_count(size, "size")
        self._champion = PrequentialWindow(size=size, threshold=threshold)
        self._challenger = PrequentialWindow(
            size=size, threshold=threshold if challenger_threshold is None else challenger_threshold
        )
        self._block_size = _check_count(size if block_size is None else block_size, "block_size")
        self._block_aucs: deque[tuple[float, float]] = deque(maxlen=_check_count(blocks, "blocks"))
        # (label, champion score, challenger score, cell) per event, oldest first.
        self._events: deque[tuple[int, float, float, int]] = deque()
        self._cells = [0] * 8
        self._block: list[tuple[int, float, float]] = []
        self._block_pairs = (AUCPairs(), AUCPairs())

    @property
    def size(self) -> int:
        """d, the window length."""
        return self._size

    @property
    def champion(self) -> PrequentialWindow:
        """The champion's window (read it; feed events through :meth:`update` only)."""
        return self._champion

    @property
    def challenger(self) -> PrequentialWindow:
        """The challenger's window (read it; feed events through :meth:`update` only)."""
        return self._challenger

    def __len__(self) -> int:
        return len(self._events)

    def update(
        self,
        y_true: int,
        champion_score: float,
        challenger_score: float,
        champion_pred: int | None = None,
        challenger_pred: int | None = None,
    ) -> None:
        """Append one event scored by both models. O(log d).

        Raises:
            ValueError: an argument is invalid; the message names it and nothing changes.
        """
        label = check_label(y_true, "y_true")
        score_a = check_score(champion_score, "champion_score")
        score_b = check_score(challenger_score, "challenger_score")
        pred_a = (
            int(score_a >= self._champion.threshold)
            if champion_pred is None
            else check_label(champion_pred, "champion_pred")
        )
        pred_b = (
            int(score_b >= self._challenger.threshold)
            if challenger_pred is None
            else check_label(challenger_pred, "challenger_pred")
        )
        self._champion.update(label, score_a, pred_a)
        self._challenger.update(label, score_b, pred_b)
        events, cells = self._events, self._cells
        if len(events) == self._size:
            cells[events.popleft()[3]] -= 1
        index = cell(label, pred_a, pred_b)
        events.append((label, score_a, score_b, index))
        cells[index] += 1
        self._add_to_block(label, score_a, score_b)

    def _add_to_block(self, label: int, score_a: float, score_b: float) -> None:
        self._block.append((label, score_a, score_b))
        pairs_a, pairs_b = self._block_pairs
        pairs_a.add(label, score_a)
        pairs_b.add(label, score_b)
        if len(self._block) == self._block_size:
            self._block_aucs.append((pairs_a.auc, pairs_b.auc))
            self._block.clear()
            self._block_pairs = (AUCPairs(), AUCPairs())

    @property
    def auc_difference(self) -> float:
        """Challenger AUC − champion AUC over the window (NaN without both classes). O(1)."""
        return self._challenger.auc - self._champion.auc

    @property
    def block_aucs(self) -> tuple[tuple[float, float], ...]:
        """(champion AUC, challenger AUC) of each recent complete block, oldest first."""
        return tuple(self._block_aucs)

    def delong(self) -> DeLongResult:
        """DeLong's paired test over the window's events. O(d log d)."""
        events = self._events
        return delong([e[0] for e in events], [e[1] for e in events], [e[2] for e in events])

    def crisp(self) -> CrispComparison:
        """McNemar, relative κ and agreement κ over the window. O(1)."""
        return crisp_comparison(self._cells)

    def block_tests(self) -> tuple[SignTestResult, WilcoxonResult]:
        """The sign test and Wilcoxon's signed-rank test over the recent blocks' AUCs."""
        champion = [a for a, _ in self._block_aucs]
        challenger = [b for _, b in self._block_aucs]
        return sign_test(champion, challenger), wilcoxon_signed_rank(champion, challenger)

    def statistics(self) -> dict[str, float]:
        """Every name in :data:`STATISTICS` with its value now (NaN where undefined)."""
        result = self.delong()
        crisp = self.crisp()
        sign, wilcoxon = self.block_tests()
        return {
            "champion_auc": self._champion.auc,
            "challenger_auc": self._challenger.auc,
            "auc_difference": self.auc_difference,
            "delong_z": result.z,
            "delong_p_value": result.p_value,
            "champion_accuracy": crisp.champion_accuracy,
            "challenger_accuracy": crisp.challenger_accuracy,
            "relative_kappa": crisp.relative_kappa,
            "agreement_kappa": crisp.agreement_kappa,
            "mcnemar_statistic": crisp.mcnemar.statistic,
            "mcnemar_p_value": crisp.mcnemar.p_value,
            "sign_p_value": sign.p_value,
            "wilcoxon_statistic": wilcoxon.statistic,
            "wilcoxon_p_value": wilcoxon.p_value,
            "blocks": float(len(self._block_aucs)),
        }

    def export_state(self) -> dict[str, Any]:
        """The window as JSON-serializable plain data; :meth:`from_state` restores it. O(d).

        ``events`` are ``[y_true, champion_score, champion_pred, challenger_score,
        challenger_pred]``, oldest first; ``block`` the events of the incomplete block
        (``[y_true, champion_score, challenger_score]``); ``block_aucs`` the recent blocks'
        AUC pairs with null for an undefined AUC (strict JSON has no NaN).
        """
        champion_state = self._champion.export_state()
        return {
            "version": STATE_VERSION,
            "size": self._size,
            "thresholds": [self._champion.threshold, self._challenger.threshold],
            "block_size": self._block_size,
            "blocks": self._block_aucs.maxlen,
            "events": [
                [label, a, (index >> 1) & 1, b, index & 1] for label, a, b, index in self._events
            ],
            "label_before_window": champion_state["label_before_window"],
            "block": [list(event) for event in self._block],
            "block_aucs": [[_auc_or_none(a), _auc_or_none(b)] for a, b in self._block_aucs],
        }

    @classmethod
    def from_state(cls, state: Mapping[str, Any]) -> PairedWindow:
        """Rebuild a window from :meth:`export_state`'s output. O(d log d).

        Raises:
            ValueError: the state is malformed; the message says which part.
        """
        state = check_state(state, _STATE_KEYS, STATE_VERSION, exact=True)
        thresholds = state["thresholds"]
        if not isinstance(thresholds, Sequence) or len(thresholds) != 2:
            raise ValueError(f"state thresholds must be two numbers, got {thresholds!r}")
        try:
            window = cls(
                size=state["size"],
                threshold=thresholds[0],
                challenger_threshold=thresholds[1],
                block_size=state["block_size"],
                blocks=state["blocks"],
            )
        except ValueError as error:
            raise ValueError(f"state {error}") from error
        events = _rows(state["events"], "events", 5)
        block = _rows(state["block"], "block", 3)
        if len(block) >= window._block_size:
            raise ValueError(
                f"state block: {len(block)} events fill a block of {window._block_size}"
            )
        block_aucs = _rows(state["block_aucs"], "block_aucs", 2)
        if len(block_aucs) > (window._block_aucs.maxlen or 0):
            raise ValueError(f"state block_aucs: more than {window._block_aucs.maxlen} blocks")
        sizes = {"size": window._size, "label_before_window": state["label_before_window"]}
        # The two model windows validate the events (and their count) with their own messages.
        window._champion = PrequentialWindow.from_state(
            {
                "version": WINDOW_STATE_VERSION,
                "threshold": thresholds[0],
                "events": [[e[0], e[1], e[2]] for e in events],
                **sizes,
            }
        )
        window._challenger = PrequentialWindow.from_state(
            {
                "version": WINDOW_STATE_VERSION,
                "threshold": thresholds[1],
                "events": [[e[0], e[3], e[4]] for e in events],
                **sizes,
            }
        )
        for label, a, pred_a, b, pred_b in events:
            index = cell(int(label), int(pred_a), int(pred_b))
            window._events.append((int(label), float(a), float(b), index))
            window._cells[index] += 1
        for i, (label, a, b) in enumerate(block):
            window._add_to_block(
                check_label(label, f"state block[{i}] y_true"),
                check_score(a, f"state block[{i}] champion_score"),
                check_score(b, f"state block[{i}] challenger_score"),
            )
        for i, pair in enumerate(block_aucs):
            values = []
            for value in pair:
                if value is None:
                    values.append(math.nan)
                elif isinstance(value, numbers.Real) and 0.0 <= float(value) <= 1.0:
                    values.append(float(value))
                else:
                    raise ValueError(f"state block_aucs[{i}] must hold AUCs or null, got {pair!r}")
            window._block_aucs.append((values[0], values[1]))
        return window

    def __repr__(self) -> str:
        return (
            f"PairedWindow(size={self._size}): {len(self._events)} events, "
            f"AUC {self._champion.auc:.4g} → {self._challenger.auc:.4g}"
        )


def _rows(value: object, name: str, width: int) -> list[Sequence[Any]]:
    if isinstance(value, str | bytes) or not isinstance(value, Sequence):
        raise ValueError(f"state {name} must be a list, got {type(value).__name__}")
    rows = list(value)
    for i, row in enumerate(rows):
        if isinstance(row, str | bytes) or not isinstance(row, Sequence) or len(row) != width:
            raise ValueError(f"state {name}[{i}] must be a list of {width} values, got {row!r}")
    return rows
