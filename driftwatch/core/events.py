"""The event: one scored example whose true label has become known.

Events are what every window, monitor and detector consumes. They are plain values: the
Kafka decoder, the simulator and the replay reader all produce them, and the core never needs
to know where they came from.

An event's values are checked once, where they enter: :class:`Event`'s constructor checks
them (an embedder's ``Event(y, s)``), and a decoder that has checked a record's values
itself builds the event with :func:`valid_event`, which does not check them again. Inside
the core an :class:`Event` is trusted: nothing downstream re-checks its label or score.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass


def check_label(value: object, name: str = "y_true") -> int:
    """Return a 0/1 label as an int, or raise ``ValueError`` naming the argument.

    ``True``/``False`` are accepted (they are 1/0); anything else outside {0, 1} is refused.
    """
    if value in (0, 1) and not isinstance(value, float | complex):
        return int(value)
    raise ValueError(f"{name} must be 0 or 1, got {value!r}")


def check_score(value: object, name: str = "y_score") -> float:
    """Return a finite real score as a float, or raise ``ValueError`` naming the argument."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"{name} must be a finite real number, got {value!r}")
    score = float(value)
    if not math.isfinite(score):
        raise ValueError(f"{name} must be a finite real number, got {value!r}")
    return score


@dataclass(frozen=True, slots=True)
class Event:
    """A labelled, scored example.

    Attributes:
        y_true: the true class, 0 or 1.
        y_score: the model's score, any finite real (higher means "more positive").
        y_pred: the model's crisp prediction, or None to derive it from the score and the
            monitor's decision threshold.
        ts: event time in seconds since the epoch, if the producer sent one.
    """

    y_true: int
    y_score: float
    y_pred: int | None = None
    ts: float | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "y_true", check_label(self.y_true, "y_true"))
        object.__setattr__(self, "y_score", check_score(self.y_score, "y_score"))
        if self.y_pred is not None:
            object.__setattr__(self, "y_pred", check_label(self.y_pred, "y_pred"))
        if self.ts is not None and not math.isfinite(self.ts):
            raise ValueError(f"ts must be a finite number of seconds, got {self.ts!r}")


_new_event = Event.__new__
_set = object.__setattr__


def valid_event(y_true: int, y_score: float, y_pred: int | None = None,
                ts: float | None = None) -> Event:
    """The :class:`Event` of values that are already what its constructor makes of its
    arguments (a 0/1 ``int`` class, a finite ``float`` score and time), built without
    checking them again: for a decoder that has just checked them (a replay builds one per
    record, and the second check was a measurable part of its cost). Anything else must go
    through ``Event(...)``, which checks."""
    event = _new_event(Event)
    _set(event, "y_true", y_true)
    _set(event, "y_score", y_score)
    _set(event, "y_pred", y_pred)
    _set(event, "ts", ts)
    return event
