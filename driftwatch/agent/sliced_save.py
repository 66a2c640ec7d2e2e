"""A save to the state topic spread over the loop's iterations, so that it never stops the loop.

At 10 000 models of d = 1 000 exporting every model takes tens of seconds; done at once it
would stop the loop (and the heartbeat-bound poll) that long. :class:`SlicedSave` takes the
save's snapshot at once (which models moved, the offsets, the joins and the metas: cheap) and
then, at each loop iteration, exports the next models for at most ``slice_s`` and sends their
records without waiting (kafka-python sends asynchronously); once every model is sent it
moves the round on as the acknowledgements arrive
(:class:`~driftwatch.state.topic.SaveRound`: the joins after the models, the metas last).
Each model's record is a consistent pair (its state and the offsets it covers at the moment
of its export), which is all the argument for exactness asks of a record; the metas carry
the snapshot's offsets, which are the only offsets committed once the round is done
(docs/state.md#saves-that-do-not-stop-the-loop).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from driftwatch.kafka.offsets import TopicPartition
from driftwatch.state.topic import SaveRound

__all__ = ["SlicedSave"]

Export = Callable[[Sequence[str]], tuple[Mapping[str, Any], Mapping[str, object]]]
"""Exports a slice of models: their payload (records now) and their progress now."""


class SlicedSave:
    """One save round under way (module docstring).

    Parameters:
        saving: the store's round, begun with the snapshot's joins and metas.
        offsets: the snapshot's offsets (the metas'): durable once the round is done.
        models: the models the round writes (those that moved), in order.
        writer: the epoch of the snapshot; the round is void once it changed (partitions
            were assigned or revoked: :attr:`~driftwatch.agent.partition_states.
            PartitionStates.writer`).
        slice_s: the longest time one :meth:`step` spends exporting.
        clock: a monotonic clock.
    """

    def __init__(self, saving: SaveRound, offsets: Mapping[TopicPartition, int],
                 models: Sequence[str], writer: str, *, slice_s: float,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.saving = saving
        self.offsets = dict(offsets)
        self.writer = writer
        self.exported: dict[str, object] = {}
        """Per model sent, its progress when exported (what its record holds)."""
        self._models = list(models)
        self._next = 0
        self._slice_s = slice_s
        self._clock = clock
        self.busy_s = 0.0
        """Loop time this round has taken so far (its slices and polls)."""
        self.longest_step_s = 0.0

    @property
    def models(self) -> int:
        return len(self._models)

    @property
    def exporting(self) -> bool:
        """Whether models are left to export."""
        return self._next < len(self._models)

    def step(self, export: Export) -> bool:
        """Export and send the next models for up to ``slice_s`` (at least one), or move
        the round on as acknowledgements arrived; True once it is done.

        Raises what :meth:`~driftwatch.state.topic.SaveRound.poll` raises.
        """
        started = self._clock()
        try:
            while self.exporting:
                payload, progress = export((self._models[self._next],))
                self.saving.send_models(payload)
                self.exported.update(progress)
                self._next += 1
                if self._clock() - started >= self._slice_s:
                    return False
            self.saving.models_sent()  # also when no model moved: the metas still go
            return self.saving.poll()
        finally:
            took = self._clock() - started
            self.busy_s += took
            self.longest_step_s = max(self.longest_step_s, took)
