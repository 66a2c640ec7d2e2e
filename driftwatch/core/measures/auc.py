"""Exact AUC of a multiset of scored examples, kept incrementally in O(log d) per change.

AUC is the Mann–Whitney statistic: over every (positive, negative) pair, 1 when the positive
is scored higher, ½ when the scores tie, 0 otherwise, divided by P·N. Paper 000 (Brzezinski &
Stefanowski 2017, Algorithm 1) keeps the window's scores in a red-black tree but then walks the
whole tree after every event to recount the pairs, which costs O(d) per event. The count does
not need the walk: adding (or removing) one example changes it only by the pairs that example
forms with the other class, and with the other class's scores sorted that is two bisections.

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

from sortedcontainers import SortedList


class AUCPairs:
    """The positive/negative pair count behind AUC, over a multiset that grows and shrinks.

    Holds the positives' scores and the negatives' scores in two sorted lists and the number of
    half-credits earned by all their pairs. A sliding window owns one of these and calls
    :meth:`add` for the arriving event and :meth:`remove` for the evicted one; the structure
    itself knows nothing about arrival order (see
    :class:`driftwatch.core.window.PrequentialWindow`).

    Inputs are not validated here: this is the per-event hot path, and the window validates
    each event once before it reaches this structure. Labels are 1 (positive) or 0 (negative);
    scores must be finite (NaN would break the sorted order).

    Costs, with n = positives + negatives (sortedcontainers' lists are O(log n) amortized
    for insertion and deletion in practice):

    ============================  ==============
    method / property             cost
    ============================  ==============
    :meth:`add`                   O(log n)
    :meth:`remove`                O(log n)
    ``auc``, ``halfcredits``      O(1)
    ``positives``, ``negatives``  O(1)
    :meth:`_check` (tests only)   O(P·N)
    ============================  ==============

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
    """

    __slots__ = ("_halfcredits", "_neg", "_pos")

    def __init__(self) -> None:
        self._pos = SortedList()
        self._neg = SortedList()
        self._halfcredits = 0

    def add(self, y_true: int, score: float) -> None:
        """Insert one example. O(log n)."""
        # With the other class sorted, bisect_left counts its scores strictly below ``score``
        # and bisect_right those below or tied, so their sum is 2·(below) + 1·(tied): exactly
        # the half-credits a positive earns. A negative earns 2 per positive strictly above
        # and 1 per tie: 2·P − bisect_left − bisect_right against the positives.
        credit: int
        if y_true:
            neg = self._neg
            credit = neg.bisect_left(score) + neg.bisect_right(score)
            self._pos.add(score)
        else:
            pos = self._pos
            credit = 2 * len(pos) - pos.bisect_left(score) - pos.bisect_right(score)
            self._neg.add(score)
        self._halfcredits += credit

    def remove(self, y_true: int, score: float) -> None:
        """Delete one example with this label and score. O(log n).

        Raises ``ValueError`` (and changes nothing) if no such example is held.
        """
        # The credit to take back is the one :meth:`add` gave: computed against the other
        # class, which this deletion does not touch. Deleting before updating the count
        # means an absent example raises with the count intact.
        credit: int
        if y_true:
            self._pos.remove(score)
            neg = self._neg
            credit = neg.bisect_left(score) + neg.bisect_right(score)
        else:
            self._neg.remove(score)
            pos = self._pos
            credit = 2 * len(pos) - pos.bisect_left(score) - pos.bisect_right(score)
        self._halfcredits -= credit

    @property
    def positives(self) -> int:
        """Number of positive examples held."""
        return len(self._pos)

    @property
    def negatives(self) -> int:
        """Number of negative examples held."""
        return len(self._neg)

    def __len__(self) -> int:
        return len(self._pos) + len(self._neg)

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
        pairs = len(self._pos) * len(self._neg)
        if pairs == 0:
            return math.nan
        return self._halfcredits / (2 * pairs)

    def _check(self) -> None:
        """Recount the half-credits by brute force over all pairs; for tests. O(P·N)."""
        self._pos._check()
        self._neg._check()
        expected = sum(2 if p > q else 1 if p == q else 0 for p in self._pos for q in self._neg)
        assert self._halfcredits == expected, (self._halfcredits, expected)

    def __repr__(self) -> str:
        return f"AUCPairs(positives={self.positives}, negatives={self.negatives}, auc={self.auc})"
