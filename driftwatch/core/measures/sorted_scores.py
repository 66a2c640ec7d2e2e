"""A lean sorted multiset of floats with rank queries, for the per-event AUC pair count.

:class:`SortedScores` is the part of ``sortedcontainers.SortedList`` that
:class:`~driftwatch.core.measures.auc.AUCPairs` uses (insert, delete, count below a value), cut
down to what that hot path needs. The values live in sorted *blocks*, plain Python lists
searched and edited with the C-level :mod:`bisect` functions. Every block holds at most
``2 · load`` values, so inserting into or deleting from one (a C ``memmove`` inside the list)
costs a bounded amount whatever the total size.

- **One block** (up to ``2 · load`` values: each class of any window of d ≤ 2000 with the
  default load) is the fast path: a query is one C bisection, an edit one C bisection plus
  the move.
- **Several blocks** (more than ``load`` values; m = ⌈n / load⌉ or so): the block maxima
  locate a value's block by one bisection, and a Fenwick tree over the block lengths gives the
  number of values in the blocks before it in O(log m), so a rank is one bisection over m
  maxima, one inside a block, and O(log m) Python steps; an edit also updates the tree in
  O(log m).
- **Restructuring.** A block that outgrows ``2 · load`` is split in two; one that shrinks
  below ``load / 2`` is merged with a neighbour (and the result split again if too long); and
  once no more than ``load`` values are left they are joined into one block again. Each copies
  at most a few blocks (C level) and rebuilds the maxima and the tree in O(m) Python steps. A
  block must gain or lose ≥ ``load / 2`` values between two of these, so they add amortized
  O(m / load) = O(n / load²) steps per edit: below one up to n = load² (10⁶ by default).
  (``sortedcontainers`` rebuilds its positional index the same way.)

Costs, with n values held, m blocks and B = ``load``:

========================================  ==========================================
method                                    cost
========================================  ==========================================
:meth:`add`, :meth:`remove`               O(log n), plus a C move of ≤ 2B pointers
                                          and amortized O(n / B²) restructuring
:meth:`rank_left`, :meth:`rank_right`     O(log n)
:meth:`rank_sum`                          O(log n), one bisection if no value ties
``len``                                   O(1)
iteration                                 O(n)
:meth:`_check` (tests only)               O(n + m²)
========================================  ==========================================

Values must be mutually comparable with a total order (finite floats); NaN breaks the order
and is not checked for here (the window validates scores once, before they arrive).
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right, insort
from collections.abc import Iterable, Iterator
from itertools import chain

DEFAULT_LOAD = 1000
"""Target block length: blocks split above 2 × load and merge below load / 2 (as in
``sortedcontainers``)."""


class SortedScores:
    """Sorted multiset of floats: insert, delete, and count the values below a given one.

    Parameters:
        values: initial contents, in any order.
        load: the target block length B (≥ 2); blocks hold between B / 2 and 2B values
            (a lone block holds 0 to 2B). Small loads are for tests, to exercise splits and
            merges on small inputs.

    Examples:
        >>> scores = SortedScores([0.5, 0.1, 0.5, 0.9])
        >>> list(scores)
        [0.1, 0.5, 0.5, 0.9]
        >>> scores.rank_left(0.5), scores.rank_right(0.5), scores.rank_sum(0.5)
        (1, 3, 4)
        >>> scores.remove(0.5)
        >>> scores.rank_right(0.5), len(scores)
        (2, 3)
    """

    # Layout. _blocks: the sorted blocks, in order, as plain lists; never empty, and no block
    #     is empty unless it is the only one (the empty multiset is [[]]). After __init__ the
    #     list _blocks itself is only edited in place, never replaced.
    # With one block, that block is the whole multiset and nothing else describes it. This is
    #     the contract AUCPairs relies on to inline its hot path: a caller may bisect that
    #     block and insert into or delete from it in place, keeping it sorted, provided it
    #     calls _split(0) as soon as the block holds more than 2 · load values.
    # _len, _maxes, _tree: kept only with two or more blocks (0, [] and [] with one):
    #     _len is the number of values, _maxes[k] = _blocks[k][-1], and _tree is a 1-indexed
    #     Fenwick tree over the block lengths, so that the sum of len(_blocks[j]) for j < k
    #     takes O(log m).
    __slots__ = ("_blocks", "_len", "_load", "_maxes", "_tree")

    def __init__(self, values: Iterable[float] = (), load: int = DEFAULT_LOAD) -> None:
        if isinstance(load, bool) or not isinstance(load, int) or load < 2:
            raise ValueError(f"load must be an integer ≥ 2, got {load!r}")
        self._load = load
        ordered = sorted(values)
        self._len = 0
        self._blocks: list[list[float]] = [ordered]
        self._maxes: list[float] = []
        self._tree: list[int] = []
        if len(ordered) > 2 * load:
            # m blocks of ⌊n/m⌋ or ⌈n/m⌉ values each, all within [load / 2, 2 · load].
            n = len(ordered)
            m = -(-n // load)
            self._blocks = [ordered[i * n // m : (i + 1) * n // m] for i in range(m)]
            self._reindex()

    def __len__(self) -> int:
        blocks = self._blocks
        return len(blocks[0]) if len(blocks) == 1 else self._len

    def __iter__(self) -> Iterator[float]:
        return chain.from_iterable(self._blocks)

    def add(self, value: float) -> None:
        """Insert one value (duplicates are kept). O(log n)."""
        blocks = self._blocks
        if len(blocks) == 1:
            block = blocks[0]
            insort(block, value)
            if len(block) > 2 * self._load:
                self._split(0)
            return
        self._len += 1
        maxes = self._maxes
        k = bisect_right(maxes, value)
        if k == len(maxes):
            k -= 1
            block = blocks[k]
            block.append(value)
            maxes[k] = value
        else:
            block = blocks[k]
            insort(block, value)
        if len(block) > 2 * self._load:
            self._split(k)
        else:
            tree = self._tree
            size = len(tree)
            i = k + 1
            while i < size:
                tree[i] += 1
                i += i & -i

    def remove(self, value: float) -> None:
        """Delete one occurrence of ``value``. O(log n).

        Raises:
            ValueError: ``value`` is not held; nothing changes.
        """
        blocks = self._blocks
        if len(blocks) == 1:
            block = blocks[0]
            i = bisect_left(block, value)
            if i == len(block) or block[i] != value:
                raise ValueError(f"{value!r} is not held")
            del block[i]
            return
        maxes = self._maxes
        # Blocks before k hold only values < value; block k's maximum is ≥ value, so if
        # value is held at all its first occurrence is in block k.
        k = bisect_left(maxes, value)
        if k == len(maxes):
            raise ValueError(f"{value!r} is not held")
        block = blocks[k]
        i = bisect_left(block, value)
        if block[i] != value:
            raise ValueError(f"{value!r} is not held")
        del block[i]
        self._len -= 1
        if self._len <= self._load:
            # Few enough values for one block again: back to the one-block fast path.
            blocks[:] = [list(chain.from_iterable(blocks))]
            self._reindex()
            return
        if len(block) < self._load // 2:
            self._merge(k)
            return
        if i == len(block):
            maxes[k] = block[-1]
        tree = self._tree
        size = len(tree)
        i = k + 1
        while i < size:
            tree[i] -= 1
            i += i & -i

    def rank_left(self, value: float) -> int:
        """The number of values held that are < ``value``. O(log n)."""
        blocks = self._blocks
        if len(blocks) == 1:
            return bisect_left(blocks[0], value)
        k = bisect_left(self._maxes, value)
        if k == len(blocks):
            return self._len
        return self._before(k) + bisect_left(blocks[k], value)

    def rank_right(self, value: float) -> int:
        """The number of values held that are ≤ ``value``. O(log n)."""
        blocks = self._blocks
        if len(blocks) == 1:
            return bisect_right(blocks[0], value)
        k = bisect_right(self._maxes, value)
        if k == len(blocks):
            return self._len
        return self._before(k) + bisect_right(blocks[k], value)

    def rank_sum(self, value: float) -> int:
        """``rank_left(value) + rank_right(value)``: 2 × (values < value) + (values = value).

        These are the half-credits a positive scored ``value`` earns against negatives held
        here (2 per negative below it, 1 per tie). One bisection when ``value`` is not held,
        which is what a tie-free stream does. O(log n).
        """
        blocks = self._blocks
        if len(blocks) == 1:
            block = blocks[0]
            below = bisect_left(block, value)
            if below == len(block) or block[below] != value:
                return 2 * below
            return below + bisect_right(block, value, below)
        k = bisect_left(self._maxes, value)
        if k == len(blocks):
            return 2 * self._len
        block = blocks[k]
        i = bisect_left(block, value)
        if block[i] != value:  # i < len(block): the block's maximum is ≥ value
            return 2 * (self._before(k) + i)
        return self.rank_left(value) + self.rank_right(value)

    def _before(self, k: int) -> int:
        """The number of values in blocks 0 … k − 1 (several blocks only). O(log m)."""
        tree = self._tree
        total = 0
        while k:
            total += tree[k]
            k &= k - 1
        return total

    def _split(self, k: int) -> None:
        """Cut the overfull block k into two halves and reindex. O(B + m)."""
        block = self._blocks[k]
        half = len(block) // 2
        self._blocks[k : k + 1] = [block[:half], block[half:]]
        self._reindex()

    def _merge(self, k: int) -> None:
        """Join the underfull block k to a neighbour, split if too long, reindex. O(B + m)."""
        blocks = self._blocks
        j = k - 1 if k else k  # merge blocks j and j + 1
        merged = blocks[j] + blocks[j + 1]
        if len(merged) > 2 * self._load:
            half = len(merged) // 2
            blocks[j : j + 2] = [merged[:half], merged[half:]]
        else:
            blocks[j : j + 2] = [merged]
        self._reindex()

    def _reindex(self) -> None:
        """Rebuild the block maxima and the Fenwick tree from the blocks. O(m)."""
        blocks = self._blocks
        if len(blocks) == 1:
            self._len = 0
            self._maxes = []
            self._tree = []
            return
        self._len = sum(map(len, blocks))
        self._maxes = [block[-1] for block in blocks]
        tree = [0] + [len(block) for block in blocks]
        size = len(tree)
        for i in range(1, size):
            parent = i + (i & -i)
            if parent < size:
                tree[parent] += tree[i]
        self._tree = tree

    def _check(self) -> None:
        """Assert every invariant, recomputing the index by brute force; for tests. O(n + m²)."""
        blocks = self._blocks
        load = self._load
        assert blocks, "no block"
        values = list(chain.from_iterable(blocks))
        assert values == sorted(values), "values out of order"
        assert len(values) == len(self), (len(values), len(self))
        if len(blocks) == 1:
            assert len(blocks[0]) <= 2 * load, len(blocks[0])
            assert (self._len, self._maxes, self._tree) == (0, [], []), "stale index"
            return
        assert self._len == len(values), (self._len, len(values))
        assert self._len > load, "several blocks for at most load values"
        for block in blocks:
            assert load // 2 <= len(block) <= 2 * load, (len(block), load)
        assert self._maxes == [block[-1] for block in blocks], "stale maxima"
        assert len(self._tree) == len(blocks) + 1, "tree size"
        for k in range(len(blocks) + 1):
            assert self._before(k) == sum(map(len, blocks[:k])), f"prefix {k}"

    def __repr__(self) -> str:
        return f"SortedScores({list(self)!r})"
