"""Which input partition each model belongs to, and what a replay after a restore skips.

The agent's bookkeeping for the state topic (:mod:`driftwatch.state.topic`, whose module
docstring gives the record layout and why it is exact): every model has a *home* partition
(where its first event came from) under which its state is saved, and the set of partitions
it took events from, whose offsets its record carries; after a restore, each model skips the
records below the offset its state covers, and the rejection counts those below the
partition's saved offset (and so do the counts of other models' records skipped by
``events.only_models``). A model seen on more than one partition is counted in
:attr:`PartitionStates.split`: it cannot be handed over exactly between replicas.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any

from driftwatch.state.topic import Restored, TopicPartition

__all__ = ["PartitionStates"]


class PartitionStates:
    """The agent's side of the state topic: which model lives where, and what to skip.

    Tracks, per model, its home partition and the partitions it took events from; per
    restored model and partition, the offset below which its records are already in its
    state; per partition, the offset below which rejections are already counted and the
    rejection counts. O(1) per record.
    """

    def __init__(self, shard_of: Callable[[TopicPartition], TopicPartition] = lambda tp: tp
                 ) -> None:
        self._shard_of = shard_of
        """The join's shard of a partition (:class:`~driftwatch.agent.join_shards.JoinShards`):
        a model whose events come from one shard's partitions is not split."""
        self.homes: dict[str, TopicPartition] = {}
        self.seen: dict[str, set[TopicPartition]] = {}
        self._skip_below: dict[tuple[str, TopicPartition], int] = {}
        self._rejected_below: dict[TopicPartition, int] = {}
        self.rejected: dict[TopicPartition, dict[str, int]] = {}
        self.skipped: dict[TopicPartition, int] = {}
        """Per partition, its records skipped as other models' (``events.only_models``)."""
        self.split: set[str] = set()
        """Models seen on more than one partition, or restored elsewhere: not handed over
        exactly (see the module docstring)."""
        self._join_below: dict[TopicPartition, int] = {}
        self._replaying: dict[TopicPartition, int] = {}
        self._halves: dict[str, tuple[TopicPartition, int] | None] = {}
        """Pending halves of pairs whose position decides a replay: None for one restored
        pending in its join (below every offset a model covers), else where it was read."""
        self.writer = _new_writer()
        """Names this owner's records while its partitions stay the same (an *epoch*: a
        restore or a drop starts a new one): a meta record lifts the covers of records
        of its own epoch only (:func:`~driftwatch.state.topic.resumes_from`)."""
        self._saved: dict[str, object] = {}
        """Per model, its progress when its state was last exported by a save of this epoch
        that then succeeded (:meth:`unsaved`)."""

    def take(self, model: str, tp: TopicPartition, offset: int) -> bool:
        """Note an event of ``model`` at ``tp``/``offset``; False when its state already
        holds it (a replay after a restore) and it must be skipped."""
        below = self._skip_below.get((model, tp))
        if below is not None:
            if offset < below:
                return False
            del self._skip_below[(model, tp)]
        self._see(model, tp, (tp,))
        return True

    def _see(self, model: str, tp: TopicPartition, partitions: Sequence[TopicPartition]
             ) -> None:
        self.homes.setdefault(model, tp)
        seen = self.seen.setdefault(model, set())
        if not seen.issuperset(partitions):
            seen.update(partitions)
            if len({self._shard_of(p) for p in seen}) > 1:
                self.split.add(model)

    def join_takes(self, tp: TopicPartition, offset: int) -> bool:
        """False when the record at ``tp``/``offset`` is already in its restored join (a
        replay after a restore): the join must not take it again."""
        below = self._join_below.get(tp)
        if below is not None:
            if offset < below:
                return False
            del self._join_below[tp]
        until = self._replaying.get(tp)
        if until is not None and offset >= until:  # no model skips anything of tp any more
            del self._replaying[tp]
            if not self._replaying:
                self._halves.clear()
        return True

    def pending_half(self, event_id: str, tp: TopicPartition, offset: int) -> None:
        """Note a record now pending in the join, while its position matters: while models
        restored from the state topic still skip records of ``tp``."""
        if offset < self._replaying.get(tp, -1):
            self._halves[event_id] = (tp, offset)

    def take_pair(self, model: str, event_id: str, tp: TopicPartition, offset: int,
                  partitions: Sequence[TopicPartition]) -> bool:
        """Note a pair of ``model`` completed by the record at ``tp``/``offset`` in the join
        shard of ``partitions``; False when the model's restored state holds it already.

        The state was saved at one instant, so it holds the pair exactly when *both* halves
        had been read then: both below the offsets it covers. Which half completes a pair
        may differ in a replay (two topics interleave differently), so both are checked;
        a half restored pending in the join was read before the join's save, which is never
        after the model's (the join is written after the models).
        """
        known = event_id in self._halves
        other = self._halves.pop(event_id, None)
        other_held = known and (other is None or other[1] < self._skip_below.get(
            (model, other[0]), -1))
        if other_held and offset < self._skip_below.get((model, tp), -1):
            return False
        self._see(model, tp, partitions)
        return True

    def reject(self, tp: TopicPartition, offset: int, reason: str) -> bool:
        """Count a rejection at ``tp``/``offset``; False when the restored counts hold it."""
        below = self._rejected_below.get(tp)
        if below is not None and offset < below:
            return False
        counts = self.rejected.setdefault(tp, {})
        counts[reason] = counts.get(reason, 0) + 1
        return True

    def skip(self, tp: TopicPartition, offset: int) -> bool:
        """Count another model's record at ``tp``/``offset`` as skipped; False when the
        restored count holds it. Saved like the rejections, so that a restored replica's
        ``driftwatch_events_skipped_total`` agrees with its siblings'."""
        below = self._rejected_below.get(tp)
        if below is not None and offset < below:
            return False
        self.skipped[tp] = self.skipped.get(tp, 0) + 1
        return True

    def unsaved(self, progress: Mapping[str, object]) -> dict[str, object]:
        """The models (of ``progress``: model → how far its monitor got,
        :func:`~driftwatch.pipeline.progress`) whose state a save must write, with their
        progress: those that moved since a successful save of this epoch exported them, and
        those none did (new, restored, or of an epoch before). The others' records on the
        state topic hold their state as it is, and the save's meta records vouch that they
        took nothing since (docs/state.md#changed-only-saves). Nothing per record: two
        counts the monitor keeps anyway, compared here once per model and save."""
        saved = self._saved
        return {model: seen for model, seen in progress.items() if saved.get(model) != seen}

    def saved(self, exported: Mapping[str, object], writer: str) -> None:
        """A save of epoch ``writer`` succeeded (every record of it acknowledged, metas
        included), having exported the models of ``exported`` at that progress. A save of
        an earlier epoch changes nothing: every model is written again anyway."""
        if writer == self.writer:
            self._saved.update(exported)

    def payload(self, monitors: Mapping[str, Any], positions: Mapping[Any, int],
                joins: Mapping[TopicPartition, tuple[Sequence[TopicPartition], Any]]
                | None = None,
                comparisons: Callable[[str], Mapping[str, Any]] | None = None,
                only: Collection[TopicPartition] | None = None) -> dict[str, Any]:
        """A save of ``monitors`` (model → exported state), ``joins`` (shard → its
        partitions and exported state), each model's ``comparisons`` (name → exported
        state) and the partitions at ``positions`` (partition → next offset), for
        :meth:`StateTopicStore.save`. ``only``: the partitions whose metas the save writes
        (all of ``positions`` by default); the models' covers still name every partition
        they took events from."""
        models = {}
        for model, state in monitors.items():
            home = self.homes.get(model)
            if home is None:
                continue  # admitted but never fed (no event reached it): nothing to keep
            covers = [(tp, positions[tp]) for tp in sorted(self.seen.get(model, {home}))
                      if tp in positions]
            models[model] = {"home": home, "covers": covers, "state": state}
            compared = comparisons(model) if comparisons is not None else None
            if compared:
                models[model]["comparisons"] = dict(compared)
        partitions = [(tuple(tp), {"offset": offset,
                                   "rejected": dict(self.rejected.get(tp, {})),
                                   "skipped": self.skipped.get(tp, 0)})
                      for tp, offset in sorted(positions.items())
                      if only is None or tp in only]
        shards = [{"home": shard, "state": state,
                   "covers": [(tp, positions[tp]) for tp in tps if tp in positions]}
                  for shard, (tps, state) in sorted((joins or {}).items())]
        return {"models": models, "joins": shards, "partitions": partitions,
                "writer": self.writer}

    def _new_epoch(self) -> None:
        """The partitions owned changed: records of the epoch before are no longer lifted
        by this owner's metas, so every model is written again at the next save."""
        self.writer = _new_writer()
        self._saved.clear()

    def restored(self, restored: Restored) -> None:
        """Take over what :meth:`StateTopicStore.load` returned."""
        self._new_epoch()
        for model, covers in restored.covers.items():
            self.homes[model] = restored.homes[model]
            self.seen[model] = set(covers)
            if len({self._shard_of(tp) for tp in covers}) > 1:
                self.split.add(model)
            for tp, offset in covers.items():
                if tp in restored.offsets and offset > restored.offsets[tp]:
                    self._skip_below[(model, tp)] = offset
                    self._replaying[tp] = max(self._replaying.get(tp, -1), offset)
        for join_covers in restored.join_covers.values():
            for tp, offset in join_covers.items():
                if tp in restored.offsets and offset > restored.offsets[tp]:
                    self._join_below[tp] = offset
        for shard, state in restored.joins.items():
            if any(tp in self._replaying for tp in restored.join_covers[shard]):
                join = state.get("join", {})
                for record in [*join.get("predictions", ()), *join.get("labels", ())]:
                    self._halves[str(record[0])] = None
        for tp, below in restored.rejected_below.items():
            if below > restored.offsets[tp]:
                self._rejected_below[tp] = below
            self.rejected[tp] = dict(restored.rejected.get(tp, {}))
            self.skipped[tp] = restored.skipped.get(tp, 0)
        self.split |= restored.split

    def reset(self, tp: TopicPartition) -> None:
        """``tp``'s offsets went back (the topic was recreated or truncated; every record
        read from now on is a new event): forget what a restore said to skip there, whose
        offsets meant the old log, and start a new epoch, so that the next save writes every
        model again with covers of the new log. Otherwise a model quiet since the reset
        would keep a record covering an old offset above the new ones, which no meta lifts
        or lowers, and a restore would skip its new events below that offset."""
        self._new_epoch()
        self._forget_restored_marks({tp})

    def replaying(self, partitions: Collection[TopicPartition]) -> bool:
        """Whether the replay after a restore is still under way on any of ``partitions``
        for the join (the positions of the pending halves it notes are not what a restore
        would rebuild: :meth:`restored` takes every pending half as read before)."""
        return any(tp in self._replaying for tp in partitions)

    def kept(self, partitions: Collection[TopicPartition], positions: Mapping[Any, int],
             shards: Mapping[TopicPartition, Collection[TopicPartition]]) -> Restored:
        """``partitions`` as the restore of a complete save at ``positions`` (each
        partition's next offset) would give them back, monitors, joins' and comparisons'
        states aside: the models homed there with their covers, and per partition its
        offset, rejection and skip counts, and the covers of the joins of ``shards`` (shard
        → its partitions). Where a restore still has records skipped (its replay is not past
        them), the cover is that mark's, as the save would have written it; so
        :meth:`restored` sets the same marks again (:mod:`driftwatch.agent.kept`)."""
        offsets = {tp: positions[tp] for tp in partitions if tp in positions}
        restored = Restored(offsets=offsets)
        for model, home in self.homes.items():
            if home in offsets:
                restored.homes[model] = home
                restored.covers[model] = {
                    tp: max(positions[tp], self._skip_below.get((model, tp), -1))
                    for tp in self.seen.get(model, {home}) if tp in positions}
        for tp, offset in offsets.items():
            restored.rejected_below[tp] = max(offset, self._rejected_below.get(tp, -1))
            restored.rejected[tp] = dict(self.rejected.get(tp, {}))
            restored.skipped[tp] = self.skipped.get(tp, 0)
        for shard, tps in shards.items():
            covers = {tp: max(positions[tp], self._join_below.get(tp, -1))
                      for tp in tps if tp in positions}
            if covers.keys() & offsets.keys():
                restored.join_covers[shard] = covers
        return restored

    def _forget_restored_marks(self, partitions: Collection[TopicPartition]) -> None:
        """Drop what a restore said to skip on ``partitions`` (models' records, the join's,
        rejections) and the pending halves no partition replays any more."""
        for key in [key for key in self._skip_below if key[1] in partitions]:
            del self._skip_below[key]
        for tp in partitions:
            self._join_below.pop(tp, None)
            self._rejected_below.pop(tp, None)
            self._replaying.pop(tp, None)
        if not self._replaying:
            self._halves.clear()

    def drop(self, partitions: Collection[TopicPartition]
             ) -> tuple[set[str], dict[str, int], int]:
        """Forget ``partitions``: returns the models homed there (to drop from the monitors)
        and the rejection and skip counts they held (to take off the agent's totals)."""
        gone = {model for model, home in self.homes.items() if home in partitions}
        self._new_epoch()
        for model in gone:
            del self.homes[model]
            self.seen.pop(model, None)
            self.split.discard(model)
        self._forget_restored_marks(partitions)
        removed: dict[str, int] = {}
        skipped = 0
        for tp in partitions:
            for reason, count in self.rejected.pop(tp, {}).items():
                removed[reason] = removed.get(reason, 0) + count
            skipped += self.skipped.pop(tp, 0)
        return gone, removed, skipped


def _new_writer() -> str:
    return uuid.uuid4().hex[:16]
