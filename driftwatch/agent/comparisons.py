"""Champion and challenger in the agent: paired windows fed by records carrying two scores.

A shadow deployment logs, for each event, the production model's score and the candidate's.
A *comparison* names the model whose records carry both (its events feed its monitor as
usual, through the settings' score field) and the field holding the challenger's score; the
agent decodes each such record a second time with that field as the score, and both events
go to one :class:`~driftwatch.core.comparison.window.PairedWindow` (the same last d events
for both models). A record of the model without a usable challenger score is counted by the
decoder's reason, never fatal.

:class:`Comparisons` is the runtime (owned by the agent's loop thread: feed, snapshot,
export/restore for the checkpoint); its snapshots
(:class:`~driftwatch.sinks.comparison_snapshot.ComparisonSnapshot`) are rendered at each
scrape by :class:`~driftwatch.sinks.prometheus.comparison_collector.ComparisonCollector`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from driftwatch.core.comparison.window import ComparisonConfig, PairedWindow
from driftwatch.decoding.decoder import Decoded, EventFormat, Rejected, decode
from driftwatch.sinks.comparison_snapshot import ComparisonSnapshot

ABSENT_FIELD = "\0absent"
"""A field name no producer writes: a challenger without a prediction field derives it."""



class _Comparison:
    __slots__ = ("config", "events", "fmt", "snapshot", "snapshot_at", "unpaired", "window")

    def __init__(self, config: ComparisonConfig, fmt: EventFormat) -> None:
        self.config = config
        self.fmt = replace(
            fmt,
            score_field=config.challenger_score_field,
            prediction_field=config.challenger_prediction_field or ABSENT_FIELD,
        )
        self.window = PairedWindow(
            config.window_size,
            config.threshold,
            config.challenger_threshold,
            block_size=config.block_size,
            blocks=config.blocks,
        )
        self.events = 0
        self.unpaired: dict[str, int] = {}
        self.snapshot: ComparisonSnapshot | None = None
        self.snapshot_at = -1


class Comparisons:
    """Every configured comparison; feeds, snapshots and checkpoints them.

    Costs: :meth:`feed` is one more decode of the record and one
    :meth:`~driftwatch.core.comparison.window.PairedWindow.update` (O(log d)) per comparison
    of the record's model; :meth:`snapshots` recomputes a comparison's statistics only when
    it has new events (DeLong over the window is O(d log d), well under a millisecond at
    d = 1 000).
    """

    def __init__(self, configs: Sequence[ComparisonConfig], fmt: EventFormat) -> None:
        self._all = [_Comparison(config, fmt) for config in configs]
        self._by_model: dict[str, list[_Comparison]] = {}
        for comparison in self._all:
            self._by_model.setdefault(comparison.config.model, []).append(comparison)

    def __len__(self) -> int:
        return len(self._all)

    def feed(self, value: bytes | None, key: bytes | None, champion: Decoded) -> None:
        """Pair a record its model's monitor has just taken (nothing for other models)."""
        for comparison in self._by_model.get(champion.model, ()):
            challenger = decode(value, key, comparison.fmt)
            if isinstance(challenger, Rejected):
                reason = challenger.reason
                comparison.unpaired[reason] = comparison.unpaired.get(reason, 0) + 1
                continue
            a, b = champion.event, challenger.event
            comparison.window.update(a.y_true, a.y_score, b.y_score, a.y_pred, b.y_pred)
            comparison.events += 1

    def snapshots(self) -> tuple[ComparisonSnapshot, ...]:
        """One immutable snapshot per comparison, for the exporter."""
        result = []
        for comparison in self._all:
            if comparison.snapshot is None or comparison.snapshot_at != comparison.events:
                config = comparison.config
                comparison.snapshot = ComparisonSnapshot(
                    config.name,
                    config.model,
                    comparison.events,
                    dict(comparison.unpaired),
                    comparison.window.statistics() if len(comparison.window) else {},
                )
                comparison.snapshot_at = comparison.events
            elif comparison.snapshot.unpaired != comparison.unpaired:
                comparison.snapshot = replace(
                    comparison.snapshot, unpaired=dict(comparison.unpaired)
                )
            result.append(comparison.snapshot)
        return tuple(result)

    def export_state(self) -> dict[str, Any]:
        """Plain data for the checkpoint: each comparison's window and counts, by name."""
        return {c.config.name: _export(c) for c in self._all}

    def export_model(self, model: str) -> dict[str, Any]:
        """:meth:`export_state` of ``model``'s comparisons only. The state topic saves them
        in the model's record: they take exactly the records its monitor takes, so the
        offsets the record covers are theirs too."""
        return {c.config.name: _export(c) for c in self._by_model.get(model, ())}

    def drop(self, models: Iterable[str]) -> None:
        """Start ``models``' comparisons afresh (their partitions moved to another replica,
        which restores them): no frozen values stay on ``/metrics``."""
        for model in models:
            comparisons = self._by_model.get(model, [])
            for index, comparison in enumerate(comparisons):
                fresh = _Comparison(comparison.config, comparison.fmt)
                comparisons[index] = fresh
                self._all[self._all.index(comparison)] = fresh

    def restore(self, states: Mapping[str, Any]) -> None:
        """Restore the comparisons a checkpoint holds; all or nothing.

        A comparison whose model, window size, thresholds or block settings changed since the
        checkpoint starts afresh (its window would not be the configured one); one that is no
        longer configured is dropped. Raises ``ValueError`` for a malformed state.
        """
        restored = []
        for comparison in self._all:
            state = states.get(comparison.config.name)
            if not isinstance(state, Mapping) or state.get("model") != comparison.config.model:
                continue
            window = PairedWindow.from_state(state["window"])
            config = comparison.config
            if (
                window.size != config.window_size
                or (window.champion.threshold, window.challenger.threshold)
                != (config.threshold, config.challenger_threshold)
                or window.export_state()["block_size"] != config.block_size
                or window.export_state()["blocks"] != config.blocks
            ):
                continue
            events, unpaired = state["events"], state["unpaired"]
            if isinstance(events, bool) or not isinstance(events, int) or events < 0:
                raise ValueError(f"comparison {config.name}: events must be a count")
            if not isinstance(unpaired, Mapping) or not all(
                isinstance(k, str) and isinstance(v, int) and v >= 0 for k, v in unpaired.items()
            ):
                raise ValueError(f"comparison {config.name}: unpaired must map reasons to counts")
            restored.append((comparison, window, events, dict(unpaired)))
        for comparison, window, events, unpaired in restored:
            comparison.window, comparison.events, comparison.unpaired = window, events, unpaired
            comparison.snapshot = None


def _export(comparison: _Comparison) -> dict[str, Any]:
    return {
        "model": comparison.config.model,
        "events": comparison.events,
        "unpaired": dict(comparison.unpaired),
        "window": comparison.window.export_state(),
    }
