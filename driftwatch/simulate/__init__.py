"""Seeded synthetic scoring models and drift scenarios with known change points.

A monitor or drift detector can only be judged against a stream whose truth is known: where
the concept changed, what kind of change it was, and what the population AUC and class ratio
were at every event. This package produces such streams, pure and deterministic: the same
scenario and seed give the same events on any machine; nothing here reads the clock, the
environment or a file (time arrives as ``ts = start_ts + index / rate``).

The scoring model is the equal-variance binormal model (:class:`BinormalModel`, Hanley &
McNeil 1982), whose population AUC is exactly the requested one; the scenarios
(:data:`SCENARIOS`) are small frozen specs that know their true :class:`ChangePoint` s
(the derivation and the scenarios' table: docs/design.md#the-simulator-streams-with-known-truth).

Modules: :mod:`~driftwatch.simulate.binormal` (the scoring model and the parameter checks),
:mod:`~driftwatch.simulate.scenario` (change points and the :class:`Scenario` base),
:mod:`~driftwatch.simulate.scenarios` (the scenarios above), :mod:`~driftwatch.simulate.labels`
(predictions now, labels later: :func:`delayed_labels`), :mod:`~driftwatch.simulate.records`
(events as the record values the agent reads: :func:`event_record`, :func:`joinable_record`);
this package binds a scenario to a seed (:class:`SimulatedStream`, :func:`generate`).

Example:
    >>> stream = generate("sudden_auc_drop", seed=7, length=1000)
    >>> stream.change_points
    (ChangePoint(index=500, kind='auc', before=0.9, after=0.8, end=500),)
    >>> events = list(stream)
    >>> len(events), events[0].ts, events[-1].ts
    (1000, 0.0, 999.0)
    >>> events == list(generate("sudden_auc_drop", seed=7, length=1000))
    True

As the records a producer would send (pass ``fmt=settings.events.event_format()`` for others):

    >>> next(iter(stream.records(model="churn")))
    {'label': 0, 'score': 0.485..., 'ts': 0.0, 'model': 'churn'}

References (with what each contributes: docs/design.md#the-simulator-streams-with-known-truth):
    Brzezinski & Stefanowski (2017), Prequential AUC (MinMaj, Sudden_RC); Brzezinski et al.
    (2019), On the dynamics of classification measures (:data:`IMBALANCE_RATIOS`); Hanley &
    McNeil (1982), The meaning and use of the area under a ROC curve (the binormal model).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, fields
from typing import Any

from driftwatch.core.events import Event
from driftwatch.simulate.binormal import (
    IMBALANCE_RATIOS,
    BinormalModel,
    Output,
    _check_seed,
    positive_share_from_ratio,
)
from driftwatch.simulate.labels import DELAY_DISTRIBUTIONS, DelayDistribution, delayed_labels
from driftwatch.simulate.records import RecordFormat, event_record, joinable_record
from driftwatch.simulate.scenario import ChangePoint, DriftKind, Scenario
from driftwatch.simulate.scenarios import (
    AucDropThenRatioChange,
    Composite,
    ConceptChange,
    CovariateShiftThenConceptChange,
    GradualAucDrop,
    MinMaj,
    RatioChange,
    RecurringRatio,
    Stationary,
    SuddenAucDrop,
)

__all__ = [
    "DELAY_DISTRIBUTIONS",
    "IMBALANCE_RATIOS",
    "SCENARIOS",
    "AucDropThenRatioChange",
    "BinormalModel",
    "ChangePoint",
    "Composite",
    "ConceptChange",
    "CovariateShiftThenConceptChange",
    "DelayDistribution",
    "DriftKind",
    "GradualAucDrop",
    "MinMaj",
    "Output",
    "RatioChange",
    "RecordFormat",
    "RecurringRatio",
    "Scenario",
    "SimulatedStream",
    "Stationary",
    "SuddenAucDrop",
    "delayed_labels",
    "event_record",
    "generate",
    "joinable_record",
    "positive_share_from_ratio",
]


SCENARIOS: dict[str, type[Scenario]] = {
    cls.name: cls
    for cls in (Stationary, SuddenAucDrop, GradualAucDrop, RatioChange, MinMaj, RecurringRatio,
                AucDropThenRatioChange, ConceptChange, CovariateShiftThenConceptChange)
}
"""Scenario classes by name. Each class is its own factory: call it with keyword parameters
(all have defaults: 20 000 events, AUC 0.9, π 0.3, changes in the middle, AUC drops of 0.1;
:class:`AucDropThenRatioChange` changes at a quarter and three quarters, with a drop of 0.2),
or use :func:`generate`. :class:`Composite` is not registered: its parts are scenarios, not
numbers."""


@dataclass(frozen=True, slots=True)
class SimulatedStream:
    """A scenario bound to a seed: iterable (again and again, always the same events).

    Example:
        >>> stream = SimulatedStream(Stationary(length=3), seed=1)
        >>> len(stream), [event.y_true for event in stream]
        (3, [1, 1, 0])
    """

    scenario: Scenario
    seed: int

    def __post_init__(self) -> None:
        _check_seed(self.seed)

    def __iter__(self) -> Iterator[Event]:
        return self.scenario.events(self.seed)

    def __len__(self) -> int:
        return self.scenario.length

    @property
    def change_points(self) -> tuple[ChangePoint, ...]:
        """The scenario's true change points."""
        return self.scenario.change_points

    def records(self, model: str = "default", fmt: RecordFormat | None = None
                ) -> Iterator[dict[str, Any]]:
        """The events as the record values a producer of ``model`` sends, in order: dicts
        with the field names and label classes of ``fmt`` (None: the default settings',
        ``label``, ``score``, ``ts``, ``model``; ``settings.events.event_format()`` for a
        settings file's), ready for ``json.dumps`` (:func:`event_record`).

        Example:
            >>> stream = generate("stationary", seed=1, length=3)
            >>> [(r["label"], r["model"]) for r in stream.records(model="churn")]
            [(1, 'churn'), (1, 'churn'), (0, 'churn')]
        """
        return (event_record(event, model, fmt) for event in self)


def generate(name: str, *, seed: int, length: int | None = None, **params: Any) -> SimulatedStream:
    """The seeded stream of scenario ``name`` (a key of :data:`SCENARIOS`).

    ``length`` (default: the scenario's, 20 000) and ``params`` go to the scenario class;
    change points that are not given are placed relative to ``length``, so any length works
    with the defaults.

    Example:
        >>> stream = generate("minmaj", seed=3, length=2000, positive_share=0.1)
        >>> stream.change_points
        (ChangePoint(index=1000, kind='ratio', before=0.1, after=0.9, end=1000),)
        >>> labels = [event.y_true for event in stream]
        >>> sum(labels[:1000]), sum(labels[1000:])
        (88, 896)

    Raises:
        ValueError: naming ``name`` when the scenario is unknown, the parameter when it is
            unknown to the scenario or out of range, ``seed`` when it is not an int ≥ 0.
    """
    try:
        factory = SCENARIOS[name]
    except (KeyError, TypeError):
        raise ValueError(f"name must be one of {sorted(SCENARIOS)}, got {name!r}") from None
    accepted = sorted(field.name for field in fields(factory) if field.init)
    for parameter in params:
        if parameter not in accepted:
            raise ValueError(
                f"unknown parameter {parameter!r} for scenario {name!r}; accepted: {accepted}"
            )
    if length is not None:
        params["length"] = length
    return SimulatedStream(factory(**params), seed=_check_seed(seed))
