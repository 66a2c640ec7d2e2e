"""A prequential window whose length ADWIN chooses from the per-event error (Bifet et al. 2015, §6).

A fixed window of d events is a compromise no single d gets right: short windows fluctuate,
long ones lag behind a change, and the best d depends on how fast the stream changes (paper
002, §6.1, Figures 3–4). Bifet et al. 2015 proposes to measure over an ADWIN window instead: ADWIN
(Bifet & Gavaldà 2007) keeps the longest run of recent inputs whose mean is statistically
consistent with "no change inside", so the window is as long as the current concept and
shrinks as soon as a change shows. Its input here is the per-event 0/1 loss of the crisp
prediction, x_t = L(ŷ_t, y_t) as in the paper.

:class:`AdaptiveWindow` *is* a :class:`~driftwatch.core.window.PrequentialWindow` (same
update, measures, AUC, persistent hits, and so the same class-ratio normalization), capped at
``max_size`` events so memory stays bounded on a stream that never changes. After each event
it holds the last min(W, ``max_size``) events, W being ADWIN's width. So, exactly:

- at every moment its measures are those of a fixed window of size min(W, ``max_size``) over
  the same stream;
- whenever W ≥ ``max_size`` (``max_size`` events since the last cut, or since the start) it
  equals ``PrequentialWindow(size=max_size)`` fed the same events, value for value.

On a stationary stream ADWIN cuts with probability at most δ per check (Bifet et al. 2015, Theorem
3), so the window soon reaches ``max_size`` and stays there; after a change it drops the
events from before it.

References:
    Bifet, A. et al. (2015). Efficient online evaluation of big data stream classifiers
   , §6 and Theorem 3.
    Bifet, A., Gavaldà, R. (2007). Learning from time-changing data with adaptive windowing.
    SDM.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from driftwatch.core.detectors.adwin import ADWIN
from driftwatch.core.state import check_state
from driftwatch.core.window import PrequentialWindow

ADAPTIVE_STATE_VERSION = 1
"""Version of :meth:`AdaptiveWindow.export_state`'s own keys (the window's have their own)."""

_OWN_KEYS = frozenset({"adaptive_version", "adwin", "cuts"})


class AdaptiveWindow(PrequentialWindow):
    """AUC and the crisp measures over the last min(ADWIN's width, ``max_size``) events.

    Each :meth:`update` appends the event as a fixed window of ``max_size`` would, feeds its
    0/1 loss (crisp prediction ≠ label) to ADWIN, and evicts the oldest events until the
    window is no longer than ADWIN's width. ADWIN watches both directions (``"both"``): an
    improvement is a change too, and the window must forget the worse past to measure the
    present.

    Parameters:
        max_size: the longest the window may grow (≥ 1); its ``size``.
        threshold: as for :class:`~driftwatch.core.window.PrequentialWindow`.
        delta, clock, max_buckets, min_window_length, grace_period: ADWIN's parameters
            (:class:`~driftwatch.core.detectors.adwin.ADWIN`); ``delta`` bounds the
            probability of a cut per check when nothing changed.

    Costs: :meth:`update` is the fixed window's O(log d) plus ADWIN's amortized O(1)
    insertion and, every ``clock`` events, its O(max_buckets · log W) check; each evicted
    event costs O(log d) once.

    Example: the error rate rises from 10 % to 40 % after 3 000 events; a fixed window of
    5 000 still averages in the old error rate 1 000 events later, the adaptive one has
    dropped most of it.

        >>> import random
        >>> rng = random.Random(1)
        >>> adaptive, fixed = AdaptiveWindow(max_size=5000), PrequentialWindow(size=5000)
        >>> for t in range(4000):
        ...     y = rng.random() < 0.5
        ...     wrong = rng.random() < (0.1 if t < 3000 else 0.4)
        ...     for window in (adaptive, fixed):
        ...         window.update(int(y), 0.9 if y != wrong else 0.1)
        ...     if t in (2999, 3999):
        ...         accuracy = [round(w.measure("accuracy"), 3) for w in (adaptive, fixed)]
        ...         print(t, len(adaptive), len(fixed), accuracy)
        2999 3000 3000 [0.895, 0.895]
        3999 1056 4000 [0.613, 0.82]
        >>> adaptive.cuts
        3
    """

    __slots__ = ("_adwin", "_cuts")

    def __init__(
        self,
        max_size: int = 10_000,
        threshold: float = 0.5,
        *,
        delta: float = 0.002,
        clock: int = 32,
        max_buckets: int = 5,
        min_window_length: int = 5,
        grace_period: int = 10,
    ) -> None:
        super().__init__(size=max_size, threshold=threshold)
        self._adwin = ADWIN(
            delta=delta,
            clock=clock,
            max_buckets=max_buckets,
            min_window_length=min_window_length,
            grace_period=grace_period,
            direction="both",
        )
        self._cuts = 0

    @property
    def max_size(self) -> int:
        """The cap on the window's length (its ``size``)."""
        return self._size

    @property
    def adwin_width(self) -> int:
        """ADWIN's width W: events since its last cut (may exceed ``max_size``)."""
        return self._adwin.width

    @property
    def cuts(self) -> int:
        """Updates at which ADWIN cut its window (a change in the error rate)."""
        return self._cuts

    def update_valid(self, y_true: int, y_score: float, y_pred: int | None = None) -> None:
        """Append one event, then shrink to ADWIN's width. :meth:`update` checks the
        arguments first (rejected input changes nothing) and calls this; unchecked, as for
        the fixed window."""
        super().update_valid(y_true, y_score, y_pred)
        self._settle()  # ADWIN's cut needs the window as it is now: no pending events here
        label, _, cell = self._events[-1]
        adwin = self._adwin
        width_before = adwin.width
        adwin.update_valid(1.0 if (cell & 1) != label else 0.0)
        width = adwin.width
        if width <= width_before:  # the input added one; anything less is a cut
            self._cuts += 1
        events = self._events
        while len(events) > width:
            self._evict_oldest()

    def _evict_oldest(self) -> None:
        """Drop the oldest event from the pair count and the cell counts. O(log d).

        The same bookkeeping as the fixed window's eviction, without an arriving event.
        """
        label, score, cell = self._events.popleft()
        self._pairs.remove(label, score)
        self._counts[cell] -= 1
        self._label_before = label

    def export_state(self, compact: bool = False) -> dict[str, Any]:
        """The fixed window's state plus ``adaptive_version``, ``adwin`` and ``cuts``. O(d)."""
        state = super().export_state(compact)
        state["adaptive_version"] = ADAPTIVE_STATE_VERSION
        state["adwin"] = self._adwin.export_state()
        state["cuts"] = self._cuts
        return state

    @classmethod
    def from_state(cls, state: Mapping[str, Any]) -> AdaptiveWindow:
        """Rebuild a window from :meth:`export_state`'s output. O(d log d).

        Raises:
            ValueError: the state is malformed; the message says which part.
        """
        state = check_state(state, _OWN_KEYS, ADAPTIVE_STATE_VERSION,
                            version_key="adaptive_version")
        base = PrequentialWindow.from_state({k: v for k, v in state.items() if k not in _OWN_KEYS})
        try:
            adwin = ADWIN.from_state(state["adwin"])
        except ValueError as error:
            raise ValueError(f"state adwin: {error}") from error
        if adwin.direction != "both":
            raise ValueError(f"state adwin: direction must be 'both', got {adwin.direction!r}")
        if len(base) > adwin.width:
            raise ValueError(
                f"state events: {len(base)} events, more than ADWIN's width {adwin.width}"
            )
        if len(base) < min(adwin.width, base.size):
            raise ValueError(
                f"state events: {len(base)} events, fewer than min(ADWIN's width "
                f"{adwin.width}, max_size {base.size})"
            )
        cuts = state["cuts"]
        if isinstance(cuts, bool) or not isinstance(cuts, int) or cuts < 0:
            raise ValueError(f"state cuts must be an integer ≥ 0, got {cuts!r}")
        window = cls.__new__(cls)
        for name in PrequentialWindow.__slots__:
            setattr(window, name, getattr(base, name))
        window._adwin = adwin
        window._cuts = cuts
        return window

    def __repr__(self) -> str:
        return (
            f"AdaptiveWindow(max_size={self._size}, threshold={self._threshold}): "
            f"{len(self._events)} events (ADWIN width {self._adwin.width}), "
            f"P={self.positives}, N={self.negatives}"
        )
