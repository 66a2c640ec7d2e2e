"""The measure registry: one :class:`Measure` per measure, holding everything about it.

A measure's name, its formula (over the window's confusion counts, or a hook on the window for
a measure the counts cannot give, like AUC), its good direction, its range, whether and how
Brzezinski et al. 2019 normalize it for the class ratio, when it is undefined and how it is
described are all fields of one frozen object. The window evaluates what the registry lists, the
monitor takes directions, ranges and normalizability from it, normalization its grid-search facts,
the settings the names a watch may name, and the generated metrics reference its table; so a
new measure is one :func:`register` call, and a measure that is not a confusion-matrix measure
needs nothing of the window but its public reads (see ``window`` below).

Four kinds of entries (:attr:`Measure.kind`):

- ``"window"``: reported over the prequential window (``driftwatch_measure``), watchable by
  window watches; AUC first, then the crisp measures of Bifet et al. 2015, §5 and Brzezinski et al.
  2019, Table I.
- ``"event"``: ``error_stream``, the per-event crisp error (1 when the prediction is wrong),
  DDM's input; fed from the first event, never reported as a window value.
- ``"block"``: the per-class error rates a blocks watch computes on each closed block (FN/P and
  FP/N); the class ratio cannot move them.
- ``"score"``: the label-free signals of the scores alone (``score_ks``, ``score_psi``,
  ``predicted_positive_rate``), computed per block of predictions by the prediction watch
  (:mod:`driftwatch.core.prediction_watch`, ``join`` settings) and watched by its detectors
  (``join.score_drift``), never by a model's watches.

The order of registration is the order of reports: the window's measures come out as
``auc`` first, then the crisp measures, then anything registered later.

**Plug-ins** are :class:`Measure` objects declared as entry points in the
``driftwatch.measures`` group, registered on the first read that needs every measure (or by
:func:`load_plugins`); one that cannot be used is left out and logged, and :func:`plugin_errors`
says why: docs/plugins.md#when-plug-in-measures-are-registered-and-which-are-refused.

Example: the mean score of the window, which no confusion formula gives, as a hook:

    >>> from driftwatch.core.window import PrequentialWindow
    >>> def mean_score(window: WindowView, tally: Tally) -> float:
    ...     scores = [score for _, score, _ in window.export_state()["events"]]
    ...     return math.fsum(scores) / len(scores) if scores else math.nan
    >>> with registered(Measure("mean_score", "mean score", "The mean score.",
    ...                         "the window is empty", window=mean_score)):
    ...     window = PrequentialWindow(size=4)
    ...     for label, score in [(0, 0.2), (0, 0.4), (1, 0.6), (1, 0.8), (1, 1.0)]:
    ...         window.update(label, score)
    ...     window.measure("mean_score"), list(window.measures())[-1]
    (0.7, 'mean_score')
    >>> "mean_score" in window.measures()
    False
"""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from driftwatch.core.measures import crisp, estimates
from driftwatch.core.measures.estimates import Estimate
from driftwatch.core.plugins import Problem, scan

ENTRY_POINT_GROUP = "driftwatch.measures"

Kind = Literal["window", "event", "block", "score"]
KINDS: tuple[Kind, ...] = ("window", "event", "block", "score")
WATCHABLE_KINDS: tuple[Kind, ...] = ("window", "event", "block")
"""The kinds a model's watch may name; ``score`` measures have the join's own detectors."""
AllZeroWhen = Literal["a class is missing", "no positives", "empty window"]


class WindowView(Protocol):
    """What a window hook may read from a :class:`~driftwatch.core.window.PrequentialWindow`:
    its public reads only, so a new hook never needs the window changed (the confusion
    counts come as the hook's :data:`Tally`)."""

    @property
    def auc(self) -> float: ...

    @property
    def positives(self) -> int: ...

    @property
    def negatives(self) -> int: ...

    def __len__(self) -> int: ...

    def export_state(self) -> dict[str, Any]: ...


Counts = Callable[[int, int, int, int], float]
"""A formula over TP, FP, FN, TN (NaN when undefined, never an exception)."""

Tally = tuple[int, int, int, int, int]
"""A window's TP, FP, FN, TN and persistent hits (events whose label equals their
predecessor's: the persistent classifier's accuracy numerator, Bifet et al. 2015, §5.4.1)."""

WindowHook = Callable[[WindowView, Tally], float]
"""A measure of the window that its confusion counts alone cannot give (NaN when undefined),
from the window and its tally (computed once for all measures)."""


@dataclass(frozen=True, slots=True)
class Normalization:
    """How class-ratio normalization (Brzezinski et al. 2019, eq. 10) searches a measure's grid.

    The grid holds every confusion matrix at P, N; along each of its lines (rows: TP fixed,
    FP growing; columns: FP fixed, FN growing) the measure must be non-increasing once
    undefined cells count as 0, which :mod:`driftwatch.core.normalization` proves for the
    built-in measures and relies on.

    Attributes:
        rows: closed-form guess of where a row crosses a value
            (:mod:`~driftwatch.core.measures.estimates`); None only with ``identical_columns``.
        columns: the same along columns, used when P > N (shorter lines); None: rows always.
        symmetric: the value is unchanged, bit for bit, when the classes swap (TP↔TN, FP↔FN),
            so P > N is searched as N, P instead.
        identical_columns: every column holds the same values (recall: TP alone decides), so
            one column is searched and counts N + 1 times.
        all_zero_when: when every cell of the grid is undefined or 0.
        bounds: every cell value, as a float, lies in [low, high]; None when rounding can
            step a few ulp outside [−1, 1] (MCC).
    """

    rows: Estimate | None
    columns: Estimate | None = None
    symmetric: bool = False
    identical_columns: bool = False
    all_zero_when: AllZeroWhen = "a class is missing"
    bounds: tuple[float, float] | None = (0.0, 1.0)

    def __post_init__(self) -> None:
        if self.rows is None and not self.identical_columns:
            raise ValueError("normalization: rows is needed unless identical_columns")
        if self.identical_columns and self.columns is None:
            raise ValueError("normalization: identical_columns needs a columns estimate")

    def all_zero(self, positives: int, negatives: int) -> bool:
        """Whether every cell at P, N is undefined or 0."""
        if self.all_zero_when == "a class is missing":
            return min(positives, negatives) == 0
        if self.all_zero_when == "no positives":
            return positives == 0
        return positives == negatives == 0


_NAME = re.compile(r"[a-z][a-z0-9_]*\Z")


@dataclass(frozen=True, slots=True)
class Measure:
    """Everything driftwatch knows about one measure.

    Attributes:
        name: the key in settings, snapshots and the ``measure`` label (lower-case letters,
            digits, ``_``).
        label: how a figure names it (``"G-mean"``, ``"κ"``).
        description: what it is, one sentence (the metrics reference's table).
        undefined: when it is NaN (NaN is never exported; see the exporter).
        kind: ``"window"``, ``"event"``, ``"block"`` or ``"score"`` (the module docstring).
        counts: the formula over the window's confusion counts (every crisp measure but κper).
        window: a hook reading the window, for a window measure without ``counts``.
        higher_is_better: False when a rise is bad (error rates): the default ``direction``
            of its watches.
        two_sided: a change either way is bad (the predicted-positive rate, whose default
            detector watches both ways); ``higher_is_better`` is then not read.
        minimum, maximum: the range of its raw values (κm and κper have no lower bound:
            they compare with a baseline that can beat the model by any margin).
        normalization: how Brzezinski et al. 2019 normalize it; None when it has no normalization.
        counterpart: for a ``"block"`` measure, the window measure showing the same rate
            (what a replay figure draws for it).
    """

    name: str
    label: str
    description: str
    undefined: str
    kind: Kind = "window"
    counts: Counts | None = None
    window: WindowHook | None = None
    higher_is_better: bool = True
    two_sided: bool = False
    minimum: float = 0.0
    maximum: float = 1.0
    normalization: Normalization | None = None
    counterpart: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not _NAME.match(self.name):
            raise ValueError(f"measure name must be lower-case letters, digits and _, "
                             f"starting with a letter; got {self.name!r}")
        if self.kind not in KINDS:
            raise ValueError(f"measure {self.name}: kind must be one of {', '.join(KINDS)}, "
                             f"got {self.kind!r}")
        if self.kind == "window":
            if (self.counts is None) == (self.window is None):
                raise ValueError(f"measure {self.name}: a window measure has exactly one of "
                                 "counts (a formula over TP, FP, FN, TN) and window (a hook)")
        elif self.counts is not None or self.window is not None:
            raise ValueError(f"measure {self.name}: {self.kind} measures are computed by the "
                             "monitor or the prediction watch; they have no counts or window "
                             "formula")
        if self.normalization is not None and self.counts is None:
            raise ValueError(f"measure {self.name}: normalization needs a counts formula "
                             "(it is a count over confusion matrices)")

    @property
    def unit_range(self) -> bool:
        """Whether its raw values always lie in [0, 1], so detectors that need inputs in
        [0, 1] (DDM) may watch it raw."""
        return self.minimum >= 0.0 and self.maximum <= 1.0

    @property
    def normalizable(self) -> bool:
        """Whether Brzezinski et al. 2019 normalize it for the class ratio."""
        return self.normalization is not None

    def value(self, window: WindowView, tally: Tally) -> float:
        """Its value on ``window`` whose tally is ``tally``: the formula on the confusion
        counts, or the hook. ``ValueError`` for an event or block measure, which no window
        holds."""
        if self.counts is not None:
            return self.counts(tally[0], tally[1], tally[2], tally[3])
        if self.window is None:
            raise ValueError(f"measure {self.name} is a {self.kind} measure, not a window's")
        return self.window(window, tally)


def _auc(window: WindowView, tally: Tally) -> float:
    return window.auc


def _kappa_per(window: WindowView, tally: Tally) -> float:
    return crisp.kappa_per(*tally)


_DIVIDES = "its denominator is 0"
_BOTH = "the window lacks a class"
_INCOMPLETE = "the latest predictions or the reference sample do not fill a window yet"

BUILTIN: tuple[Measure, ...] = (
    Measure("auc", "AUC", "Prequential AUC: the share of (positive, negative) pairs whose "
            "scores are in the right order, ties counted half.", _BOTH,
            window=_auc),
    Measure("accuracy", "accuracy", "(TP + TN) / n.", "the window is empty",
            counts=crisp.accuracy,  # type: ignore[arg-type]
            normalization=Normalization(estimates.accuracy_rows, symmetric=True,
                                        all_zero_when="empty window")),
    Measure("error", "error", "(FP + FN) / n, 1 − accuracy.", "the window is empty",
            counts=crisp.error, higher_is_better=False),
    Measure("precision", "precision", "TP / (TP + FP): the share of predicted positives that "
            "are positive.", "nothing is predicted positive",
            counts=crisp.precision,  # type: ignore[arg-type]
            normalization=Normalization(estimates.precision_rows, estimates.precision_columns,
                                        all_zero_when="no positives")),
    Measure("recall", "recall", "TP / P: the true-positive rate (sensitivity).",
            "the window has no positive", counts=crisp.recall,  # type: ignore[arg-type]
            normalization=Normalization(None, estimates.recall_columns,
                                        identical_columns=True, all_zero_when="no positives")),
    Measure("specificity", "specificity", "TN / N: the true-negative rate.",
            "the window has no negative", counts=crisp.specificity),
    Measure("balanced_accuracy", "balanced accuracy", "(recall + specificity) / 2.", _BOTH,
            counts=crisp.balanced_accuracy,  # type: ignore[arg-type]
            normalization=Normalization(estimates.balanced_accuracy_rows, symmetric=True)),
    Measure("gmean", "G-mean", "√(recall · specificity), the geometric mean of the class "
            "accuracies.", _BOTH, counts=crisp.gmean,  # type: ignore[arg-type]
            normalization=Normalization(estimates.gmean_rows, symmetric=True)),
    Measure("harmonic_mean", "harmonic mean", "2 / (1/recall + 1/specificity), 0 when either "
            "rate is 0 (Bifet et al. 2015, §5.2).", _BOTH, counts=crisp.harmonic_mean),
    Measure("f1", "F1", "2·TP / (2·TP + FP + FN): the harmonic mean of precision and recall.",
            "the window has no positive and nothing is predicted positive",
            counts=crisp.f1,  # type: ignore[arg-type]
            normalization=Normalization(estimates.f1_rows, estimates.f1_columns,
                                        all_zero_when="no positives")),
    Measure("kappa", "κ", "Cohen's κ against a chance classifier with the same marginals "
            "(Bifet et al. 2015, §5.1).", "chance agreement is 1 (one class, predicted as such)",
            counts=crisp.kappa, minimum=-1.0,  # type: ignore[arg-type]
            normalization=Normalization(estimates.kappa_rows, symmetric=True,
                                        bounds=(-1.0, 1.0))),
    Measure("mcc", "MCC", "Matthews correlation of labels and predictions.",
            "a class, or a predicted class, is missing", counts=crisp.mcc,  # type: ignore[arg-type]
            minimum=-1.0,
            normalization=Normalization(estimates.mcc_rows, symmetric=True, bounds=None)),
    Measure("kappa_m", "κm", "κ against the window's majority-class classifier (Bifet et al. 2015, "
            "§5.3).", "the window holds one class only, or none", counts=crisp.kappa_m,
            minimum=-math.inf),
    Measure("kappa_per", "κper", "κ against the persistent classifier, which repeats the "
            "previous label (Bifet et al. 2015, §5.4.1).", "every event in the window repeats its "
            "predecessor's label, or the window is empty", window=_kappa_per,
            minimum=-math.inf),
    Measure("error_stream", "error stream", "The per-event crisp error, 1 when the prediction "
            "is wrong: DDM's input, fed at every event.", "never", kind="event",
            higher_is_better=False),
    Measure("false_negative_rate", "false-negative rate", "FN / P over a closed block's "
            "positives (blocks watches only).", "never (a block holds both classes)",
            kind="block", higher_is_better=False, counterpart="recall"),
    Measure("false_positive_rate", "false-positive rate", "FP / N over a closed block's "
            "negatives (blocks watches only).", "never (a block holds both classes)",
            kind="block", higher_is_better=False, counterpart="specificity"),
    Measure("score_ks", "score KS D", "The two-sample Kolmogorov–Smirnov statistic D of the "
            "latest predictions' scores against the reference sample (label-free, `join` "
            "settings).", _INCOMPLETE, kind="score", higher_is_better=False),
    Measure("score_psi", "score PSI", "The population stability index of the latest "
            "predictions' scores against the reference sample, over bins of the reference "
            "(label-free, `join` settings).", _INCOMPLETE, kind="score",
            higher_is_better=False, maximum=math.inf),
    Measure("predicted_positive_rate", "predicted-positive rate", "The share of the latest "
            "predictions predicted positive, against the reference's (label-free, `join` "
            "settings).", "no prediction yet", kind="score", two_sided=True),
)
"""The measures driftwatch ships, in report order."""

CONFUSION_MEASURES: Mapping[str, Counts] = {
    m.name: m.counts for m in BUILTIN if m.counts is not None
}
"""The built-in measures that depend on the confusion matrix alone: name → formula."""

CRISP_MEASURES: tuple[str, ...] = tuple(
    m.name for m in BUILTIN if m.kind == "window" and m.name != "auc"
)
"""The built-in crisp measures a window reports, in its order."""

NORMALIZABLE: tuple[str, ...] = tuple(m.name for m in BUILTIN if m.normalizable)
"""The built-in measures Brzezinski et al. 2019 normalize; each formula takes numpy rows too."""

_MEASURES: dict[str, Measure] = {m.name: m for m in BUILTIN}
_WINDOW: list[tuple[Measure, ...]] = [tuple(m for m in BUILTIN if m.kind == "window")]

_window: dict[str, Measure] = {m.name: m for m in _WINDOW[0]}
WINDOW: Mapping[str, Measure] = _window
"""The window measures by name, kept current by :func:`register` and :func:`unregister` (a
window looks measures up here: one dictionary read on its sampling path)."""


_log = logging.getLogger(__name__)
_plugins: dict[str, Measure] = {}
_plugin_problems: dict[str, str] = {}
_plugins_loaded = [False]


def load_plugins() -> dict[str, Measure]:
    """Register the measures of the ``driftwatch.measures`` entry points not registered yet
    (see the module docstring); returns those it registered. Broken ones are logged at
    WARNING and kept in :func:`plugin_errors`."""
    _plugins_loaded[0] = True
    found, problems = scan(ENTRY_POINT_GROUP, "measure", {m.name: m for m in BUILTIN}, _adopt)
    added: dict[str, Measure] = {}
    for name, measure in found.items():
        if _plugins.get(name) is measure and _MEASURES.get(name) is measure:
            continue  # loaded before
        if name in _MEASURES:  # registered by a program under the same name
            problems[name] = Problem(
                f"measure plug-in {name!r}: a measure of that name is already registered")
            continue
        register(measure)
        _plugins[name] = added[name] = measure
    _plugin_problems.clear()
    for name, problem in problems.items():
        _plugin_problems[name] = problem.message
        _log.warning("%s", problem.message)
    return added


def plugin_errors() -> dict[str, str]:
    """The measure plug-ins that could not be used, by entry-point name, with the reason."""
    _ensure_plugins()
    return dict(_plugin_problems)


def _adopt(name: str, loaded: object) -> Measure:
    if not isinstance(loaded, Measure):
        raise ValueError(f"is not a driftwatch Measure: {loaded!r}")
    if loaded.name != name:
        raise ValueError(f"names a measure {loaded.name!r}, which must be named as the "
                         f"entry point, {name!r}")
    if loaded.kind != "window":
        raise ValueError(f"is a {loaded.kind} measure; plug-ins add window measures only "
                         "(event, block and score measures are computed by driftwatch's code)")
    return loaded


def _ensure_plugins() -> None:
    if not _plugins_loaded[0]:
        load_plugins()


def get(name: str) -> Measure:
    """The measure called ``name``; ``ValueError`` listing every name for an unknown one."""
    _ensure_plugins()
    measure = _MEASURES.get(name)
    if measure is None:
        raise ValueError(f"unknown measure {name!r}; measures: {', '.join(_MEASURES)}")
    return measure


def find(name: str) -> Measure | None:
    """The measure called ``name``, or None."""
    _ensure_plugins()
    return _MEASURES.get(name)


def measures() -> tuple[Measure, ...]:
    """Every registered measure, in report order."""
    _ensure_plugins()
    return tuple(_MEASURES.values())


def window_measures() -> tuple[Measure, ...]:
    """The measures a window reports, in report order (``auc`` first)."""
    _ensure_plugins()
    return _WINDOW[0]


def names(kind: Kind | None = None) -> tuple[str, ...]:
    """The registered names, of one kind or all, in report order."""
    return tuple(m.name for m in _MEASURES.values() if kind is None or m.kind == kind)


def watchable_names() -> tuple[str, ...]:
    """The names a model's watch may name (every kind but ``score``), in report order."""
    _ensure_plugins()
    return tuple(m.name for m in _MEASURES.values() if m.kind in WATCHABLE_KINDS)


def unwatchable_reason(name: str) -> str | None:
    """Why a model's watch cannot name ``name`` (unknown, or a label-free score signal),
    listing what it can; None when it can."""
    _ensure_plugins()
    measure = _MEASURES.get(name)
    if measure is not None and measure.kind in WATCHABLE_KINDS:
        return None
    watchable = ", ".join(watchable_names())
    if measure is not None:
        return (f"{name!r} is a label-free score signal, watched by join.score_drift's "
                f"detectors, not by a model's watches; watchable: {watchable}")
    if name in _plugin_problems:
        return f"{_plugin_problems[name]}; watchable: {watchable}"
    return f"must be one of {watchable}; got {name!r}"


def register(measure: Measure) -> None:
    """Add a measure: windows report it from their next read, monitors watch it, exporters
    export it. ``ValueError`` if the name is taken.

    Only window measures can be added: event and block measures are computed by the
    monitor's own code.
    """
    if not isinstance(measure, Measure):
        raise ValueError(f"register takes a Measure, got {type(measure).__name__}")
    if measure.name in _MEASURES:
        raise ValueError(f"measure {measure.name} is already registered")
    if measure.kind != "window":
        raise ValueError(f"measure {measure.name}: only window measures can be registered; "
                         f"{measure.kind} measures are computed by the monitor")
    _MEASURES[measure.name] = measure
    _WINDOW[0] = (*_WINDOW[0], measure)
    _window[measure.name] = measure


def unregister(name: str) -> None:
    """Remove a measure added by :func:`register`; the built-in ones stay."""
    if any(m.name == name for m in BUILTIN):
        raise ValueError(f"measure {name} is built in and cannot be unregistered")
    get(name)
    del _MEASURES[name]
    _WINDOW[0] = tuple(m for m in _WINDOW[0] if m.name != name)
    del _window[name]


@contextmanager
def registered(measure: Measure) -> Iterator[Measure]:
    """Register ``measure`` for the ``with`` block, then unregister it."""
    register(measure)
    try:
        yield measure
    finally:
        unregister(measure.name)
