"""A sorted multiset of scores with integer weights: how many, and how much weight, lie below
and at a score.

The expected pair count of a window (:mod:`~driftwatch.core.estimation.window`) changes, when
a prediction enters or leaves, by sums of the probabilities of the predictions scored below,
at and above it. Plain sorted lists answer "how many below" with a bisection (that is how
:class:`~driftwatch.core.measures.auc.AUCPairs` counts), but not "how much probability
below". This structure keeps the scores in sorted *chunks* of at most 2·``load`` entries,
each with a parallel list of its entries' weights, its weight sum and its length; a rank
query bisects the chunks' maxima, adds the sums of the chunks before (a C-level ``sum`` over
a list) and the weights before the position inside one chunk (a C-level ``sum`` of a slice).

**Exact float sums.** Weights are integers below 2⁵³ in total, held as floats: every partial
sum is then an integer a double represents exactly, so the sums are exact, an edit undone is
undone exactly, and the C-level ``sum`` of floats (several times faster than of Python
integers beyond 2⁶²) does the work. The counts are small integers, summed alike.

Entries are ordered by score; an entry is found among its ties by its weight.

Costs, n entries, L = ``load``: :meth:`add`, :meth:`remove` and :meth:`rank` are
O(log n + n/L + L), every term but the bisections done by C-level sums and list moves;
with L near √n (a window of size d uses ``max(32, isqrt(d))``) that is O(√n) steps in C and
O(log n) in Python, which at the window sizes driftwatch uses costs less than an O(log n)
tree of Python nodes would (``benchmarks/estimate.py`` measures the window's cost). A chunk
that outgrows 2·L is split in two; one that shrinks below L/2 is merged into a neighbour.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Iterable

EXACT_LIMIT = 1 << 53
"""The weights held must sum below this: every partial sum is then exact in a double."""


class WeightedScores:
    """Scores with integer weights, sorted; count and weight sums below and at a score.

    :meth:`add` returns the rank of the entry it inserts (before inserting it), and
    :meth:`remove` the rank of the entry it deletes (after deleting it): (count, weight) of
    the entries scored below, then of those tied with it. One search serves the edit and
    the rank, which is all the window needs.

    >>> ws = WeightedScores(load=2)
    >>> for score, weight in [(0.3, 3), (0.1, 1), (0.2, 2)]:
    ...     _ = ws.add(score, weight)
    >>> ws.add(0.2, 5)  # below: 0.1 (weight 1); tied: one 0.2 (weight 2)
    (1, 1, 1, 2)
    >>> ws.rank(0.2), len(ws), ws.weight
    ((1, 1, 2, 7), 4, 11)
    >>> ws.remove(0.2, 2)
    (1, 1, 1, 5)
    """

    __slots__ = ("_chunks", "_counts", "_load", "_maxes", "_sums", "_total", "_values",
                 "count")

    def __init__(self, load: int = 32) -> None:
        if isinstance(load, bool) or not isinstance(load, int) or load < 2:
            raise ValueError(f"load must be an integer ≥ 2, got {load!r}")
        self._load = load
        self._chunks: list[list[float]] = []  # scores, sorted within and across chunks
        self._values: list[list[float]] = []  # each chunk's weights (integral), in its order
        self._sums: list[float] = []  # each chunk's weight sum
        self._counts: list[int] = []  # each chunk's length
        self._maxes: list[float] = []  # each chunk's last score
        self._total = 0.0  # the weight sum of everything
        self.count = 0

    def assign(self, entries: Iterable[tuple[float, int]]) -> None:
        """Hold exactly these (score, weight) entries, any order. O(n log n)."""
        ordered = sorted(entries)
        self.assign_sorted([s for s, _ in ordered], [w for _, w in ordered])

    def assign_sorted(self, scores: list[float], weights: list[int]) -> None:
        """Hold exactly these entries, given in score order. O(n)."""
        values = [float(w) for w in weights]
        total = sum(values)
        if total >= EXACT_LIMIT:
            raise ValueError(f"weights must sum below 2**53, got {total!r}")
        load = self._load
        starts = range(0, len(scores), load)
        self._chunks = [scores[i:i + load] for i in starts]
        self._values = [values[i:i + load] for i in starts]
        self._sums = [sum(v) for v in self._values]
        self._counts = [len(c) for c in self._chunks]
        self._maxes = [c[-1] for c in self._chunks]
        self._total = total
        self.count = len(scores)

    def __len__(self) -> int:
        return self.count

    @property
    def weight(self) -> int:
        """The sum of all weights."""
        return int(self._total)

    def _ties(self, c: int, i: int, score: float) -> tuple[int, float]:
        """(count, weight) of the entries tied with ``score`` from position i of chunk c on,
        where they may run on into later chunks."""
        count, weight = 0, 0.0
        chunks = self._chunks
        while c < len(chunks):
            chunk = chunks[c]
            j = bisect_right(chunk, score, i)
            count += j - i
            weight += sum(self._values[c][i:j])
            if j < len(chunk):
                break
            c, i = c + 1, 0
        return count, weight

    def rank(self, score: float) -> tuple[int, int, int, int]:
        """(count, weight) of the entries scored strictly below ``score``, then of those
        tied with it. O(log n + n/L + L)."""
        c = bisect_left(self._maxes, score)  # the first chunk holding a score ≥ score
        if c == len(self._maxes):
            return self.count, int(self._total), 0, 0
        i = bisect_left(self._chunks[c], score)
        tied, tied_weight = self._ties(c, i, score)
        return (sum(self._counts[:c]) + i, int(sum(self._sums[:c]) + sum(self._values[c][:i])),
                tied, int(tied_weight))

    def add(self, score: float, weight: int) -> tuple[int, int, int, int]:
        """Insert one entry; return its rank before the insertion (:meth:`rank`). O(log n + L)
        plus the chunks its ties span."""
        value = float(weight)
        if self._total + value >= EXACT_LIMIT:
            raise ValueError(f"weights must sum below 2**53; adding {weight!r} would not")
        maxes = self._maxes
        c = bisect_left(maxes, score)
        if c == len(maxes):  # above every score held (or nothing held)
            rank = (self.count, int(self._total), 0, 0)
            if not maxes:
                self._chunks.append([score])
                self._values.append([value])
                self._sums.append(value)
                self._counts.append(1)
                maxes.append(score)
            else:
                c -= 1
                self._chunks[c].append(score)
                self._values[c].append(value)
                self._sums[c] += value
                self._counts[c] += 1
                maxes[c] = score
        else:
            chunk, values = self._chunks[c], self._values[c]
            i = bisect_left(chunk, score)
            below = sum(self._sums[:c]) + sum(values[:i])
            count = sum(self._counts[:c]) + i
            if chunk[-1] > score:  # the common case: every tie (if any) in this chunk
                j = bisect_right(chunk, score, i)
                rank = (count, int(below), j - i, int(sum(values[i:j])) if j > i else 0)
            else:
                tied, tied_weight = self._ties(c, i, score)
                rank = (count, int(below), tied, int(tied_weight))
            chunk.insert(i, score)  # before its ties: the order among ties is free
            values.insert(i, value)
            self._sums[c] += value
            self._counts[c] += 1
        self._total += value
        self.count += 1
        if self._counts[c] > 2 * self._load:
            self._split(c)
        return rank

    def remove(self, score: float, weight: int) -> tuple[int, int, int, int]:
        """Delete one entry with this score and weight; return the rank it had (:meth:`rank`
        after the deletion). ``ValueError`` (nothing changed) if none is held."""
        value = float(weight)
        c = bisect_left(self._maxes, score)
        chunks = self._chunks
        if c < len(chunks):
            i = bisect_left(chunks[c], score)
            tied, tied_weight = self._ties(c, i, score)
            d, k = c, i  # look for the weight among the ties, which may span chunks
            while tied and d < len(chunks):
                chunk, values = chunks[d], self._values[d]
                j = bisect_right(chunk, score, k)
                if value in values[k:j]:
                    rank = (sum(self._counts[:c]) + i,
                            int(sum(self._sums[:c]) + sum(self._values[c][:i])),
                            tied - 1, int(tied_weight - value))
                    at = values.index(value, k, j)
                    del chunk[at]
                    del values[at]
                    self._sums[d] -= value
                    self._counts[d] -= 1
                    self._total -= value
                    self.count -= 1
                    if not chunk:
                        self._drop(d)
                    else:
                        if at == len(chunk):
                            self._maxes[d] = chunk[-1]
                        if self._counts[d] < self._load // 2 and len(chunks) > 1:
                            self._merge(d)
                    return rank
                if j < len(chunk):
                    break
                d, k = d + 1, 0
        raise ValueError(f"no entry ({score!r}, {weight!r}) is held")

    def _split(self, c: int) -> None:
        chunk, values = self._chunks[c], self._values[c]
        half = len(chunk) // 2
        self._chunks[c:c + 1] = [chunk[:half], chunk[half:]]
        self._values[c:c + 1] = [values[:half], values[half:]]
        low = sum(values[:half])
        self._sums[c:c + 1] = [low, self._sums[c] - low]
        self._counts[c:c + 1] = [half, len(chunk) - half]
        self._maxes[c:c + 1] = [chunk[half - 1], self._maxes[c]]

    def _drop(self, c: int) -> None:
        del self._chunks[c], self._values[c], self._sums[c], self._counts[c], self._maxes[c]

    def _merge(self, c: int) -> None:
        """Merge chunk c into a neighbour (the previous one, or the next for the first),
        then split the result if it grew past 2·load."""
        left = c - 1 if c > 0 else c
        right = left + 1
        self._chunks[left].extend(self._chunks[right])
        self._values[left].extend(self._values[right])
        self._sums[left] += self._sums[right]
        self._counts[left] += self._counts[right]
        self._maxes[left] = self._maxes[right]
        self._drop(right)
        if self._counts[left] > 2 * self._load:
            self._split(left)

    def items(self) -> list[tuple[float, int]]:
        """Every (score, weight), in score order (ties in any order). O(n)."""
        return [(s, int(v)) for chunk, values in zip(self._chunks, self._values, strict=True)
                for s, v in zip(chunk, values, strict=True)]

    def _check(self) -> None:
        """Assert the invariants; for tests. O(n)."""
        items = self.items()
        scores = [s for s, _ in items]
        assert scores == sorted(scores), "entries out of order"
        assert self.count == len(items) and self.weight == sum(w for _, w in items)
        assert self._total == sum(self._sums) and self.count == sum(self._counts), "totals"
        for chunk, values, total, count, last in zip(
                self._chunks, self._values, self._sums, self._counts, self._maxes, strict=True):
            assert chunk and len(chunk) == len(values) == count, "chunk lengths"
            assert sum(values) == total, "chunk sum"
            assert last == chunk[-1], "chunk maximum"
            assert count <= 2 * self._load, "chunk too long"
