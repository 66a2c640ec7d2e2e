"""The metric families of the false-alarm budget (:mod:`driftwatch.core.budget`), per model.

Part of every scrape (:class:`~driftwatch.sinks.prometheus.families.Families` composes them):
the budget itself, what it implies at the model's current traffic, the latest block's record time,
whether the model's events carry a time, and each blocks watch's minimum effect.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from driftwatch.sinks.prometheus.rendered import RenderedFamily

if TYPE_CHECKING:
    from driftwatch.core.report import BudgetView

__all__ = ["BudgetFamilies"]


class BudgetFamilies:
    """The budget's families of one scrape, created empty; :meth:`samples` gives a model's."""

    def __init__(self) -> None:
        self.budget_seconds = RenderedFamily(
            "driftwatch_false_alarm_budget_seconds",
            "The model's false-alarm budget (monitoring days_per_false_alarm × 86400): its "
            "blocks watches' CUSUMs together expect at most one false drift alarm per this "
            "much record time, at any traffic.",
            "gauge",
            labels=("model",),
        )
        self.expected_false_alarms = RenderedFamily(
            "driftwatch_expected_false_alarms_per_month",
            "False drift alarms to expect in 30 days on the model's blocks watches' CUSUMs if "
            "blocks kept the latest one's record time, at the worst change their "
            "indifference zone tolerates: 30/days_per_false_alarm or less for budgeted "
            "CUSUMs, more for one with an arl of its own at high traffic. Absent without "
            "record time.",
            "gauge",
            labels=("model",),
        )
        self.block_duration = RenderedFamily(
            "driftwatch_block_duration_seconds",
            "Record time (the events' ts) the model's latest closed block spanned: at least "
            "block_seconds, more where blocks wait for 20 events of a rare class. Absent "
            "before the second block and without record time.",
            "gauge",
            labels=("model",),
        )
        self.record_time = RenderedFamily(
            "driftwatch_record_time",
            "1 when the model's events carry a time (blocks close on time, the budget "
            "holds in time), 0 when none has (blocks close on information alone, and the "
            "budget holds per block only).",
            "gauge",
            labels=("model",),
        )
        self.min_effect = RenderedFamily(
            "driftwatch_min_effect",
            "The indifference zone of a blocks watch: the smallest sustained change worth "
            "an alarm, in the measure's units (changes up to half of it, or up to one block "
            "standard error short of it at high traffic, stay within the budget).",
            "gauge",
            labels=("model", "measure"),
        )

    def all(self) -> list[RenderedFamily]:
        return [self.budget_seconds, self.expected_false_alarms, self.block_duration,
                self.record_time, self.min_effect]

    def samples(self, model: str, budget: BudgetView
                ) -> Iterator[tuple[RenderedFamily, tuple[str, ...], float]]:
        """A model's samples; undefined values (NaN: no block yet, no record time) are
        left out, as every undefined value of the exporter is."""
        yield self.budget_seconds, (model,), budget.days_per_false_alarm * 86_400.0
        yield self.record_time, (model,), 1.0 if budget.record_time else 0.0
        if budget.expected_false_alarms == budget.expected_false_alarms:
            yield self.expected_false_alarms, (model,), budget.expected_false_alarms
        if budget.block_seconds == budget.block_seconds:
            yield self.block_duration, (model,), budget.block_seconds
        for measure, effect in sorted(budget.min_effects.items()):
            yield self.min_effect, (model, measure), effect
