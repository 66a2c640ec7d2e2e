"""Exact AUC of a multiset of scored examples, kept incrementally in O(log d) per change.

AUC is the Mann–Whitney statistic: over every (positive, negative) pair, 1 when the positive
is scored higher, ½ when the scores tie, 0 otherwise, divided by P·N. Brzezinski & Stefanowski
(2017, Algorithm 1) keeps the window's scores in a red-black tree but then walks the
whole tree after every event to recount the pairs, which costs O(d) per event. The count does
not need the walk: adding (or removing) one example changes it only by the pairs that example
forms with the other class, and with the other class's scores sorted that is one bisection
(two when the example's score ties one of the other class's).

The count is kept in *half-credits* (2 per correctly ordered pair, 1 per tied pair) so that it
is an integer and the value is exact: ``auc`` is one correctly rounded division of two
integers, equal to the float nearest the true rational AUC, ties included. (River's
``RollingROCAUC`` 0.26.1 truncates the tie credit to an integer and gives 0.0 for one positive
and one negative both scored 0.5; the right value, and the one here, is 0.5, as Algorithm 1's
``(c + prevc) / 2`` step gives.)

References:
    Brzezinski, D., Stefanowski, J. (2017). Prequential AUC: properties of the area under the
    ROC curve for data streams with concept drift. Knowledge and Information Systems 52,
    531–562. Section 3, Algorithm 1 (the tie credit is its line 26).
"""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right, insort

import numpy as np
import numpy.typing as npt
from sortedcontainers import SortedList

DEFAULT_LIST_LIMIT = 10_000
"""Scores per class held in a plain list before the pair count moves to ``SortedList``.

Measured (benchmarks/auc.py, layouts): plain lists stay faster than ``SortedList`` up to about
25 000 scores per class, where moving a list's tail on each edit starts to cost more than
``SortedList``'s bookkeeping; 10 000 keeps every window of d ≤ 10 000 on lists with margin."""

_NAN = math.nan


def _rank_sum(scores: SortedList[float], value: float) -> int:
    """2 × (scores < ``value``) + (scores = ``value``): what ``value`` earns against ``scores``.

    One bisection and one membership test when ``value`` ties no score (what a tie-free stream
    does), a second bisection when it does. O(log n).
    """
    at_most = scores.bisect_right(value)
    if value in scores:
        return at_most + scores.bisect_left(value)
    return 2 * at_most


class AUCPairs:
    """The positive/negative pair count behind AUC, over a multiset that grows and shrinks.

    Holds the positives' scores and the negatives' scores sorted, and the number of
    half-credits earned by all their pairs. A sliding window owns one of these and calls
    :meth:`replace` for each arriving event once it is full (:meth:`add` until then); the
    structure itself knows nothing about arrival order (see
    :class:`driftwatch.core.window.PrequentialWindow`).

    Inputs are not validated here: this is the per-event hot path, and the window validates
    each event once before it reaches this structure. Labels are 1 (positive) or 0 (negative);
    scores must be finite (NaN would break the sorted order).

    Each example added or removed costs one bisection of its own class's scores (to insert or
    delete it) and one of the other class's (to count its pairs; a second one only when its
    score ties one of theirs). The scores live in one of two layouts:

    - **Two plain lists** while each class holds at most ``list_limit`` scores (any window of
      d ≤ 10 000 with the default): the methods bisect and edit the lists directly with the
      C-level :mod:`bisect` functions, with no further Python call. An insertion or deletion
      also moves the list's tail, up to ``list_limit`` pointers (one C ``memmove``).
    - **Two** ``sortedcontainers.SortedList`` once a class outgrows ``list_limit``: a list of
      sorted sublists with a positional index, O(log n) per edit or rank whatever the size.
      The pair count then goes through its methods (:func:`_rank_sum`).

    Both classes move to ``SortedList`` when one exceeds ``list_limit`` and back to lists once
    both hold at most ``list_limit // 2``. A move copies n ≤ 2 · ``list_limit`` + 1 scores
    (O(n), at C speed for sorted input), and at least ``list_limit // 2`` edits separate two
    moves, so they add amortized O(1) per edit and a class hovering at the limit does not
    convert back and forth. The plain lists are the fast path: a window of d = 1 000 runs
    about twice as fast on them as on ``SortedList`` (benchmarks/results.md, auc).

    Costs, with n = positives + negatives:

    ============================  ====================================================
    method / property             cost
    ============================  ====================================================
    :meth:`add`                   O(log n) (lists: plus a C move of ≤ ``list_limit``
                                  pointers; ``SortedList``: amortized, as it documents)
    :meth:`remove`                as :meth:`add`
    :meth:`replace`               as :meth:`add`, twice
    :meth:`assign`                O(n log n), in C-level calls
    ``auc``, ``halfcredits``      O(1)
    ``positives``, ``negatives``  O(1)
    :meth:`_check` (tests only)   O(P·N)
    ============================  ====================================================

    Each edit adds the amortized O(1) of the layout moves.

    Parameters:
        list_limit: the most scores a class holds in the plain-list layout (≥ 2). The default
            suits every window size; small values are for tests, to move between the layouts
            with few examples.

    Examples:
        >>> pairs = AUCPairs()
        >>> for y_true, score in [(1, 0.9), (0, 0.4), (1, 0.3), (0, 0.3)]:
        ...     pairs.add(y_true, score)
        >>> pairs.halfcredits  # (0.9, 0.4): 2, (0.9, 0.3): 2, (0.3, 0.4): 0, (0.3, 0.3): 1
        5
        >>> pairs.auc  # 5 / (2 · 2 · 2)
        0.625
        >>> pairs.remove(1, 0.9)
        >>> pairs.auc  # one tie, one misordered pair: 1 / (2 · 1 · 2)
        0.25
        >>> pairs.replace(0, 0.4, 1, 0.5)  # the negative 0.4 leaves, a positive 0.5 arrives
        >>> pairs.halfcredits, pairs.auc  # (0.3, 0.3): 1, (0.5, 0.3): 2, over 2 · 2 · 1
        (3, 0.75)
    """

    # Exactly one of _lists and _sorted is set: _lists is (positives, negatives) as two sorted
    # plain lists in the list layout, _sorted the same as two SortedList in the other. The hot
    # path selects its layout with one attribute read (_lists is None or not).
    __slots__ = (
        "_halfcredits",
        "_list_limit",
        "_lists",
        "_negatives",
        "_positives",
        "_sorted",
    )

    def __init__(self, list_limit: int = DEFAULT_LIST_LIMIT) -> None:
        if isinstance(list_limit, bool) or not isinstance(list_limit, int) or list_limit < 2:
            raise ValueError(f"list_limit must be an integer ≥ 2, got {list_limit!r}")
        self._list_limit = list_limit
        self._lists: tuple[list[float], list[float]] | None = ([], [])
        self._sorted: tuple[SortedList[float], SortedList[float]] | None = None
        self._positives = 0
        self._negatives = 0
        self._halfcredits = 0

    # Credits. An example earns 2 per pair it orders correctly and 1 per tie, against the
    # other class only. With r = 2·#(scores < x) + #(scores = x) over a class, a positive
    # scored x earns negatives' r and a negative scored x earns 2·P − positives' r (2 per
    # positive above x, 1 per tie). On one sorted list, with j = bisect_right(list, x) (the
    # scores ≤ x): if list[j − 1] is not x, nothing ties x and r = 2·j; otherwise a second
    # bisection finds where the ties start. (When j = 0, list[-1] is the maximum, above x; an
    # empty list fails the truth test first.) Removing an example takes back what adding it
    # would give now: the count is a function of the multiset, not of its history.

    def add(self, y_true: int, score: float) -> None:
        """Insert one example. O(log n)."""
        lists = self._lists
        if lists is None:
            self._add_sorted(y_true, score)
            return
        pos, neg = lists
        if y_true:
            j = bisect_right(neg, score)
            if neg and neg[j - 1] == score:
                self._halfcredits += j + bisect_left(neg, score, 0, j)
            else:
                self._halfcredits += 2 * j
            insort(pos, score)
            self._positives += 1
            if len(pos) > self._list_limit:
                self._to_sorted()
        else:
            j = bisect_right(pos, score)
            if pos and pos[j - 1] == score:
                self._halfcredits += 2 * len(pos) - j - bisect_left(pos, score, 0, j)
            else:
                self._halfcredits += 2 * (len(pos) - j)
            insort(neg, score)
            self._negatives += 1
            if len(neg) > self._list_limit:
                self._to_sorted()

    def remove(self, y_true: int, score: float) -> None:
        """Delete one example with this label and score. O(log n).

        Raises ``ValueError`` (and changes nothing) if no such example is held.
        """
        lists = self._lists
        if lists is None:
            self._remove_sorted(y_true, score)
            self._relist()
            return
        pos, neg = lists
        # Delete first, so that an absent example raises with the count intact; the credit
        # is counted against the other class, which the deletion does not touch.
        if y_true:
            i = bisect_left(pos, score)
            if i == len(pos) or pos[i] != score:
                raise ValueError(f"no positive scored {score!r} is held")
            del pos[i]
            self._positives -= 1
            j = bisect_right(neg, score)
            if neg and neg[j - 1] == score:
                self._halfcredits -= j + bisect_left(neg, score, 0, j)
            else:
                self._halfcredits -= 2 * j
        else:
            i = bisect_left(neg, score)
            if i == len(neg) or neg[i] != score:
                raise ValueError(f"no negative scored {score!r} is held")
            del neg[i]
            self._negatives -= 1
            j = bisect_right(pos, score)
            if pos and pos[j - 1] == score:
                self._halfcredits -= 2 * len(pos) - j - bisect_left(pos, score, 0, j)
            else:
                self._halfcredits -= 2 * (len(pos) - j)

    def replace(self, old_label: int, old_score: float, label: int, score: float) -> None:
        """``remove(old_label, old_score)`` then ``add(label, score)``: one window step. O(log n).

        Raises ``ValueError`` (and changes nothing) if the old example is not held.
        """
        lists = self._lists
        if lists is None:
            self._remove_sorted(old_label, old_score)
            self._add_sorted(label, score)
            self._relist()
            return
        # remove() and add() inline (branching on the labels costs less than choosing the
        # lists through tuples), with one update of the count.
        pos, neg = lists
        change: int
        if old_label:
            i = bisect_left(pos, old_score)
            if i == len(pos) or pos[i] != old_score:
                raise ValueError(f"no positive scored {old_score!r} is held")
            del pos[i]
            j = bisect_right(neg, old_score)
            if neg and neg[j - 1] == old_score:
                change = -j - bisect_left(neg, old_score, 0, j)
            else:
                change = -2 * j
        else:
            i = bisect_left(neg, old_score)
            if i == len(neg) or neg[i] != old_score:
                raise ValueError(f"no negative scored {old_score!r} is held")
            del neg[i]
            j = bisect_right(pos, old_score)
            if pos and pos[j - 1] == old_score:
                change = j + bisect_left(pos, old_score, 0, j) - 2 * len(pos)
            else:
                change = 2 * (j - len(pos))
        if label:
            j = bisect_right(neg, score)
            if neg and neg[j - 1] == score:
                change += j + bisect_left(neg, score, 0, j)
            else:
                change += 2 * j
            insort(pos, score)
            self._halfcredits += change
            if not old_label:
                self._positives += 1
                self._negatives -= 1
                if len(pos) > self._list_limit:
                    self._to_sorted()
        else:
            j = bisect_right(pos, score)
            if pos and pos[j - 1] == score:
                change += 2 * len(pos) - j - bisect_left(pos, score, 0, j)
            else:
                change += 2 * (len(pos) - j)
            insort(neg, score)
            self._halfcredits += change
            if old_label:
                self._positives -= 1
                self._negatives += 1
                if len(neg) > self._list_limit:
                    self._to_sorted()

    def assign(self, positives: npt.NDArray[np.float64], negatives: npt.NDArray[np.float64]
               ) -> None:
        """Hold exactly these scores (any order) instead of the current ones. O(n log n).

        The bulk form of a run of edits: what a window catching up on more events than a
        fraction of its size does, or a restored one (:meth:`PrequentialWindow._hold
        <driftwatch.core.window.PrequentialWindow>`). Both classes are sorted once; each
        positive x then earns 2·#(negatives < x) + #(negatives = x), which is the left plus
        the right insertion point of x in the sorted negatives: two vectorized searches, no
        Python step per score. The count is a function of the multiset, so it equals what
        any sequence of :meth:`add` and :meth:`remove` reaching the same scores gives; the
        layout is the plain lists unless a class exceeds ``list_limit``.
        """
        pos_sorted, neg_sorted = np.sort(positives), np.sort(negatives)
        self._halfcredits = int(np.searchsorted(neg_sorted, pos_sorted, "left").sum()
                                + np.searchsorted(neg_sorted, pos_sorted, "right").sum())
        pos, neg = pos_sorted.tolist(), neg_sorted.tolist()
        count = len(pos)
        self._positives, self._negatives = count, len(neg)
        if count > self._list_limit or len(neg) > self._list_limit:
            self._sorted = (SortedList(pos), SortedList(neg))
            self._lists = None
        else:
            self._lists = (pos, neg)
            self._sorted = None

    def scores(self) -> tuple[list[float], list[float]]:
        """The positives' scores and the negatives' scores, each ascending: copies, O(n) at C
        speed (DeLong's standard error reads them at every snapshot; its own sort in C is
        cheap on input already sorted)."""
        if self._lists is not None:
            return list(self._lists[0]), list(self._lists[1])
        assert self._sorted is not None
        return list(self._sorted[0]), list(self._sorted[1])

    def _add_sorted(self, y_true: int, score: float) -> None:
        """:meth:`add` in the ``SortedList`` layout. O(log n)."""
        assert self._sorted is not None
        pos, neg = self._sorted
        if y_true:
            self._halfcredits += _rank_sum(neg, score)
            pos.add(score)
            self._positives += 1
        else:
            self._halfcredits += 2 * self._positives - _rank_sum(pos, score)
            neg.add(score)
            self._negatives += 1

    def _remove_sorted(self, y_true: int, score: float) -> None:
        """:meth:`remove` in the ``SortedList`` layout, without moving back to lists. O(log n)."""
        assert self._sorted is not None
        pos, neg = self._sorted
        if y_true:
            try:
                pos.remove(score)
            except ValueError:
                raise ValueError(f"no positive scored {score!r} is held") from None
            self._positives -= 1
            self._halfcredits -= _rank_sum(neg, score)
        else:
            try:
                neg.remove(score)
            except ValueError:
                raise ValueError(f"no negative scored {score!r} is held") from None
            self._negatives -= 1
            self._halfcredits -= 2 * self._positives - _rank_sum(pos, score)

    def _to_sorted(self) -> None:
        """Move from the list layout to ``SortedList``: a class outgrew ``list_limit``. O(n)."""
        assert self._lists is not None
        pos, neg = self._lists
        self._sorted = (SortedList(pos), SortedList(neg))
        self._lists = None

    def _relist(self) -> None:
        """Move back to the list layout if both classes hold ≤ ``list_limit // 2``. O(1) or O(n)."""
        half = self._list_limit // 2
        if self._positives <= half and self._negatives <= half:
            assert self._sorted is not None
            pos, neg = self._sorted
            self._lists = (list(pos), list(neg))
            self._sorted = None

    @property
    def positives(self) -> int:
        """Number of positive examples held."""
        return self._positives

    @property
    def negatives(self) -> int:
        """Number of negative examples held."""
        return self._negatives

    def __len__(self) -> int:
        return self._positives + self._negatives

    @property
    def halfcredits(self) -> int:
        """2 × (correctly ordered pairs) + 1 × (tied pairs): the exact AUC numerator × 2."""
        return self._halfcredits

    @property
    def auc(self) -> float:
        """halfcredits / (2·P·N); NaN when there is no positive or no negative.

        An AUC needs both classes: MOA reports 1.0 and River 0.0 for a one-class window, but
        neither is a measurement.
        """
        pairs = self._positives * self._negatives
        if pairs:
            return self._halfcredits / (2 * pairs)
        return _NAN

    def _check(self) -> None:
        """Assert the layout's invariants and recount the half-credits over all pairs; for
        tests. O(P·N)."""
        limit = self._list_limit
        if self._lists is not None:
            assert self._sorted is None, "both layouts set"
            pos, neg = self._lists
            assert pos == sorted(pos) and neg == sorted(neg), "a list out of order"
            assert len(pos) <= limit and len(neg) <= limit, "a list past list_limit"
            positives, negatives = list(pos), list(neg)
        else:
            assert self._sorted is not None, "no layout set"
            pos_sorted, neg_sorted = self._sorted
            # sortedcontainers' own invariant check (private, so not in its type stubs)
            pos_sorted._check()  # type: ignore[attr-defined]
            neg_sorted._check()  # type: ignore[attr-defined]
            assert max(len(pos_sorted), len(neg_sorted)) > limit // 2, "SortedList while small"
            positives, negatives = list(pos_sorted), list(neg_sorted)
        assert (self._positives, self._negatives) == (len(positives), len(negatives))
        expected = sum(
            2 if p > q else 1 if p == q else 0 for p in positives for q in negatives
        )
        assert self._halfcredits == expected, (self._halfcredits, expected)

    def __repr__(self) -> str:
        return f"AUCPairs(positives={self.positives}, negatives={self.negatives}, auc={self.auc})"
