"""Exact AUC of a multiset of scored examples, kept incrementally in O(log d) per change.

AUC is the Mann–Whitney statistic: over every (positive, negative) pair, 1 when the positive
is scored higher, ½ when the scores tie, 0 otherwise, divided by P·N. Paper 000 (Brzezinski &
Stefanowski 2017, Algorithm 1) keeps the window's scores in a red-black tree but then walks the
whole tree after every event to recount the pairs, which costs O(d) per event. The count does
not need the walk: adding (or removing) one example changes it only by the pairs that example
forms with the other class, and with the other class's scores sorted that is one bisection
(two when the example's score ties one of the other class's).

The count is kept in *half-credits* (2 per correctly ordered pair, 1 per tied pair) so that it
is an integer and the value is exact: ``auc`` is one correctly rounded division of two
integers, equal to the float nearest the true rational AUC, ties included. (River's
``RollingROCAUC`` 0.26.1 truncates the tie credit and gives 0.0 for one positive and one
negative both scored 0.5; the right value, and the one here, is 0.5. See REFERENCE.md.)

References:
    Brzezinski, D., Stefanowski, J. (2017). Prequential AUC: properties of the area under the
    ROC curve for data streams with concept drift. Knowledge and Information Systems 52,
    531–562. Section 3, Algorithm 1 (the tie credit is its line 26).
"""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right, insort

from driftwatch.core.measures.sorted_scores import DEFAULT_LOAD, SortedScores

_NAN = math.nan


class AUCPairs:
    """The positive/negative pair count behind AUC, over a multiset that grows and shrinks.

    Holds the positives' scores and the negatives' scores in two sorted multisets
    (:class:`~driftwatch.core.measures.sorted_scores.SortedScores`) and the number of
    half-credits earned by all their pairs. A sliding window owns one of these and calls
    :meth:`replace` for each arriving event once it is full (:meth:`add` until then); the
    structure itself knows nothing about arrival order (see
    :class:`driftwatch.core.window.PrequentialWindow`).

    Inputs are not validated here: this is the per-event hot path, and the window validates
    each event once before it reaches this structure. Labels are 1 (positive) or 0 (negative);
    scores must be finite (NaN would break the sorted order).

    Each example added or removed costs one bisection of its own class's scores (to insert or
    delete it, a C-level move of at most 2 · ``load`` pointers) and one of the other class's
    (to count its pairs; a second one only when its score ties one of theirs). While each class
    fits in one block (≤ 2 · ``load`` scores, so any window of d ≤ 2000 with the default load)
    the methods work on the two sorted lists directly, with no further Python call.

    Costs, with n = positives + negatives:

    ============================  ==============
    method / property             cost
    ============================  ==============
    :meth:`add`                   O(log n)
    :meth:`remove`                O(log n)
    :meth:`replace`               O(log n)
    ``auc``, ``halfcredits``      O(1)
    ``positives``, ``negatives``  O(1)
    :meth:`_check` (tests only)   O(P·N)
    ============================  ==============

    The O(log n) of the three edits is amortized over the blocks' occasional splits and merges,
    whose cost is detailed in :mod:`~driftwatch.core.measures.sorted_scores`; with one block
    per class there are none.

    Parameters:
        load: block length of the two sorted multisets. The default suits every window size;
            small values are for tests, to reach multi-block states with few examples.

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

    # _lists is (positives' block, negatives' block) while each SortedScores is a single
    # block, which SortedScores lets its owner read and edit in place (see its layout
    # comment), and None otherwise. It is reset after every change that can split or merge
    # blocks, so the fast path costs one attribute read to select.
    __slots__ = (
        "_halfcredits",
        "_lists",
        "_max_block",
        "_neg",
        "_negatives",
        "_pos",
        "_positives",
    )

    def __init__(self, load: int = DEFAULT_LOAD) -> None:
        self._pos = SortedScores(load=load)
        self._neg = SortedScores(load=load)
        self._max_block = 2 * load
        self._lists: tuple[list[float], list[float]] | None = (
            self._pos._blocks[0],
            self._neg._blocks[0],
        )
        self._positives = 0
        self._negatives = 0
        self._halfcredits = 0

    # Credits. An example earns 2 per pair it orders correctly and 1 per tie, against the
    # other class only. With r = rank_sum(x) = 2·#(scores < x) + #(scores = x) over a class,
    # a positive scored x earns negatives' r and a negative scored x earns 2·P − positives' r
    # (2 per positive above x, 1 per tie). On one sorted list, with j = bisect_right(list, x)
    # (the scores ≤ x): if list[j − 1] is not x, nothing ties x and r = 2·j; otherwise a
    # second bisection finds where the ties start. (When j = 0, list[-1] is the maximum, above
    # x; an empty list fails the truth test first.) Removing an example takes back what adding
    # it would give now: the count is a function of the multiset, not of its history.

    def add(self, y_true: int, score: float) -> None:
        """Insert one example. O(log n)."""
        lists = self._lists
        if lists is None:
            self._add_blocks(y_true, score)
            self._relist()
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
            if len(pos) > self._max_block:
                self._pos._split(0)
                self._lists = None
        else:
            j = bisect_right(pos, score)
            if pos and pos[j - 1] == score:
                self._halfcredits += 2 * len(pos) - j - bisect_left(pos, score, 0, j)
            else:
                self._halfcredits += 2 * (len(pos) - j)
            insort(neg, score)
            self._negatives += 1
            if len(neg) > self._max_block:
                self._neg._split(0)
                self._lists = None

    def remove(self, y_true: int, score: float) -> None:
        """Delete one example with this label and score. O(log n).

        Raises ``ValueError`` (and changes nothing) if no such example is held.
        """
        lists = self._lists
        if lists is None:
            self._remove_blocks(y_true, score)
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
            self._remove_blocks(old_label, old_score)
            self._add_blocks(label, score)
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
            if not old_label:
                self._positives += 1
                self._negatives -= 1
                if len(pos) > self._max_block:
                    self._pos._split(0)
                    self._lists = None
        else:
            j = bisect_right(pos, score)
            if pos and pos[j - 1] == score:
                change += 2 * len(pos) - j - bisect_left(pos, score, 0, j)
            else:
                change += 2 * (len(pos) - j)
            insort(neg, score)
            if old_label:
                self._positives -= 1
                self._negatives += 1
                if len(neg) > self._max_block:
                    self._neg._split(0)
                    self._lists = None
        self._halfcredits += change

    def _add_blocks(self, y_true: int, score: float) -> None:
        """:meth:`add` through the SortedScores methods, for when a class spans several blocks.

        The caller calls :meth:`_relist` afterwards: the change may have split a block.
        """
        if y_true:
            self._halfcredits += self._neg.rank_sum(score)
            self._pos.add(score)
            self._positives += 1
        else:
            self._halfcredits += 2 * self._positives - self._pos.rank_sum(score)
            self._neg.add(score)
            self._negatives += 1

    def _remove_blocks(self, y_true: int, score: float) -> None:
        """:meth:`remove` through the SortedScores methods, for when a class spans several blocks.

        The caller calls :meth:`_relist` afterwards: the change may have merged blocks.
        """
        if y_true:
            self._pos.remove(score)
            self._positives -= 1
            self._halfcredits -= self._neg.rank_sum(score)
        else:
            self._neg.remove(score)
            self._negatives -= 1
            self._halfcredits -= 2 * self._positives - self._pos.rank_sum(score)

    def _relist(self) -> None:
        """Set ``_lists`` again after a change that may have split or merged blocks. O(1)."""
        pos_blocks = self._pos._blocks
        neg_blocks = self._neg._blocks
        if len(pos_blocks) == 1 and len(neg_blocks) == 1:
            self._lists = (pos_blocks[0], neg_blocks[0])
        else:
            self._lists = None

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
        neither is a measurement (REFERENCE.md, "Prequential AUC").
        """
        pairs = self._positives * self._negatives
        if pairs:
            return self._halfcredits / (2 * pairs)
        return _NAN

    def _check(self) -> None:
        """Recount the half-credits by brute force over all pairs; for tests. O(P·N)."""
        self._pos._check()
        self._neg._check()
        assert (self._positives, self._negatives) == (len(self._pos), len(self._neg))
        pos_blocks = self._pos._blocks
        neg_blocks = self._neg._blocks
        if len(pos_blocks) == 1 and len(neg_blocks) == 1:
            assert self._lists is not None, "fast path off with one block each"
            assert self._lists[0] is pos_blocks[0] and self._lists[1] is neg_blocks[0]
        else:
            assert self._lists is None, "fast path on with several blocks"
        expected = sum(2 if p > q else 1 if p == q else 0 for p in self._pos for q in self._neg)
        assert self._halfcredits == expected, (self._halfcredits, expected)

    def __repr__(self) -> str:
        return f"AUCPairs(positives={self.positives}, negatives={self.negatives}, auc={self.auc})"
