"""Delayed labels: a labelled stream as a deployed model sees it, predictions now and labels
later (the two-stream form the agent's join takes).
"""

from __future__ import annotations

import heapq
import math
import random
from collections.abc import Iterable, Iterator
from typing import Literal, get_args

from driftwatch.core.events import Event
from driftwatch.core.join import Label, Prediction
from driftwatch.simulate.binormal import _check_seed, _is_real

DelayDistribution = Literal["fixed", "exponential", "lognormal"]
DELAY_DISTRIBUTIONS: tuple[DelayDistribution, ...] = get_args(DelayDistribution)


def delayed_labels(
    events: Iterable[Event],
    *,
    seed: int,
    model: str = "default",
    delay: DelayDistribution = "exponential",
    mean_delay: float = 3600.0,
    sigma: float = 1.0,
    unlabelled: float = 0.0,
    id_prefix: str = "e",
) -> Iterator[Prediction | Label]:
    """The predictions and labels of a labelled stream, as a deployed model would see them.

    Event i becomes a :class:`~driftwatch.core.join.Prediction` at its time ``ts`` (event id
    ``f"{id_prefix}{i}"``) and, unless it is one of the ``unlabelled`` share, a
    :class:`~driftwatch.core.join.Label` at ``ts`` + a delay drawn from ``delay``: ``"fixed"``
    (always ``mean_delay``), ``"exponential"`` (mean ``mean_delay``) or ``"lognormal"``
    (mean ``mean_delay``, log-scale spread ``sigma``: heavy-tailed, like chargebacks). The
    records come in time order (a label and a prediction at the same time: the label
    first), so labels overtake each other as their delays differ. Events without ``ts`` are
    placed at their index (one per second).

    Lazy: the only records held are the labels not yet due, about rate × mean delay.

    Example:
        >>> from driftwatch.simulate import generate
        >>> stream = generate("stationary", seed=1, length=4)
        >>> records = delayed_labels(stream, seed=2, delay="fixed", mean_delay=1.5)
        >>> [(type(r).__name__, r.event_id, r.ts) for r in records]  # doctest: +ELLIPSIS
        [('Prediction', 'e0', 0.0), ('Prediction', 'e1', 1.0), ('Label', 'e0', 1.5), ...]

    Raises:
        ValueError: naming the parameter that is out of range.
    """
    rng = random.Random(_check_seed(seed))
    if delay not in DELAY_DISTRIBUTIONS:
        raise ValueError(f"delay must be one of {list(DELAY_DISTRIBUTIONS)}, got {delay!r}")
    if not _is_real(mean_delay) or not 0.0 <= mean_delay < math.inf:
        raise ValueError(f"mean_delay must be a finite number of seconds ≥ 0, got {mean_delay!r}")
    if not _is_real(sigma) or not 0.0 < sigma <= 5.0:
        raise ValueError(f"sigma must be in (0, 5], got {sigma!r}")
    if not _is_real(unlabelled) or not 0.0 <= unlabelled <= 1.0:
        raise ValueError(f"unlabelled must be in [0, 1], got {unlabelled!r}")
    mu = math.log(mean_delay) - sigma * sigma / 2.0 if mean_delay > 0 else -math.inf

    def draw() -> float:
        if delay == "fixed" or mean_delay == 0:
            return float(mean_delay)
        if delay == "exponential":
            return rng.expovariate(1.0 / mean_delay)
        return rng.lognormvariate(mu, sigma)

    due: list[tuple[float, int, Label]] = []  # labels by time, then event index
    for i, event in enumerate(events):
        ts = float(i) if event.ts is None else event.ts
        while due and due[0][0] <= ts:
            yield heapq.heappop(due)[2]
        event_id = f"{id_prefix}{i}"
        yield Prediction(event_id, model, event.y_score, event.y_pred, ts)
        if rng.random() >= unlabelled:
            label_ts = ts + draw()
            heapq.heappush(due, (label_ts, i, Label(event_id, event.y_true, label_ts)))
    while due:
        yield heapq.heappop(due)[2]
