"""Result records that hold NaN compare equal to themselves on every Python: 3.13's
dataclasses compare fields with ``==`` (NaN != NaN), 3.12's compared tuples (whose identity
shortcut made a NaN field equal to itself). CI runs this on 3.11, 3.12 and 3.13."""

from __future__ import annotations

import dataclasses
import math
import pickle

import pytest

from driftwatch.core.comparison.mcnemar import CrispComparison, McNemarResult
from driftwatch.core.report import Alarm


def alarm(**changes: object) -> Alarm:
    base = Alarm("m", "auc", "cusum", "drift", 0.8, math.nan, 30, 70, 1200, None)
    return dataclasses.replace(base, **changes)  # type: ignore[arg-type]


def test_an_alarm_with_nan_fields_equals_its_copy() -> None:
    first, copied = alarm(), pickle.loads(pickle.dumps(alarm()))
    assert first.normalized is not copied.normalized  # two NaN objects: no identity shortcut
    assert first == copied
    assert not first != copied  # noqa: SIM202 (the operator itself is under test)
    assert hash(first) == hash(copied)
    assert alarm(normalized=float("nan"), reference=float("nan")) == alarm()
    assert len({alarm(), alarm(normalized=float("nan")), copied}) == 1


@pytest.mark.parametrize("field", ["value", "normalized", "reference", "event_time", "model"])
def test_any_differing_field_makes_alarms_unequal(field: str) -> None:
    other = {"value": 0.81, "normalized": 0.5, "reference": 0.9, "event_time": 5.0,
             "model": "n"}[field]
    assert alarm() != alarm(**{field: other})
    assert alarm(**{field: other}) != alarm()


def test_records_of_other_classes_are_never_equal() -> None:
    assert alarm() != tuple(getattr(alarm(), f.name) for f in dataclasses.fields(Alarm))
    assert alarm().__eq__(object()) is NotImplemented


def test_comparison_results_with_nan_equal_their_copies() -> None:
    mcnemar = McNemarResult(0, 0, math.nan, 1.0, "exact", 0.0)
    result = CrispComparison(10, 1.0, 1.0, math.nan, math.nan, mcnemar)
    copied = pickle.loads(pickle.dumps(result))
    assert result == copied and hash(result) == hash(copied)
    assert result != dataclasses.replace(result, agreement_kappa=0.0)
