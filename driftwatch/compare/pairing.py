"""From records to paired events: one event scored by the champion and by the challenger.

Two layouts are common, and both are read through the agent's decoder so that a record is
accepted or rejected for the same reasons as in the agent:

- **fields**: each record carries both scores, the champion's in the settings' score field
  and the challenger's in another (``--challenger-score``), optionally with each model's
  crisp prediction. The record is decoded twice, once per score field.
- **join**: each model writes its own records (the settings' model field tells them apart)
  with a shared event id field (``--join ID_FIELD``); a champion record and a challenger
  record with the same id make one paired event, in the order the pair completes. Their
  labels must agree. Records of other models are counted and skipped. Records waiting for
  their partner are held up to ``max_pending``; beyond it the oldest is dropped and counted
  as unpaired, as is every record still waiting at the end.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Literal

from driftwatch.decoding.decoder import Decoded, EventFormat, Rejected
from driftwatch.decoding.fast_decoder import FastDecoder

ABSENT_FIELD = "\0absent"
"""A field name no JSON producer writes: a role without a field stays absent."""

PAIRING_REASONS: tuple[str, ...] = (
    "missing_id",  # join: the record has no usable event id
    "duplicate_id",  # join: a second record of the same model with a pending id
    "label_mismatch",  # join: the two models' records disagree on the label
    "unpaired",  # join: no partner arrived (dropped from pending, or at the end)
    "other_model",  # join: a record of neither model (skipped, not an error)
)
"""Rejection reasons the pairing adds to the decoder's."""


@dataclass(frozen=True, slots=True)
class PairedEvent:
    """One labelled event scored by both models, and where it was found."""

    y_true: int
    champion_score: float
    challenger_score: float
    champion_pred: int | None
    challenger_pred: int | None
    ts: float | None
    position: int


@dataclass(frozen=True, slots=True)
class Pairing:
    """How records become paired events (see the module docstring)."""

    mode: Literal["fields", "join"]
    challenger_score: str | None = None
    challenger_prediction: str | None = None
    id_field: str | None = None
    champion: str | None = None
    challenger: str | None = None
    max_pending: int = 100_000

    def __post_init__(self) -> None:
        if self.mode == "fields" and not self.challenger_score:
            raise ValueError("pairing by fields needs the challenger's score field")
        if self.mode == "join" and not (self.id_field and self.champion and self.challenger):
            raise ValueError("pairing by join needs the id field and both model ids")
        if self.mode == "join" and self.champion == self.challenger:
            raise ValueError(f"champion and challenger are the same model {self.champion!r}")


class Pairer:
    """Turns records into :class:`PairedEvent` values, or rejections, one record at a time."""

    def __init__(self, fmt: EventFormat, pairing: Pairing) -> None:
        self.pairing = pairing
        # The replay's fast path in front of the agent's decoder: same results, less time.
        self._decode = FastDecoder(fmt)
        self._decode_challenger = FastDecoder(
            replace(
                fmt,
                score_field=pairing.challenger_score or fmt.score_field,
                prediction_field=pairing.challenger_prediction or ABSENT_FIELD,
            )
        )
        # join: event id → (model, decoded event, position), oldest first.
        self._pending: dict[object, tuple[str, Decoded, int]] = {}
        self.dropped = 0

    @property
    def pending(self) -> int:
        """Records waiting for their partner (join)."""
        return len(self._pending)

    def feed(
        self, value: bytes | None, key: bytes | None, position: int
    ) -> PairedEvent | Rejected | None:
        """The paired event this record completes, a rejection, or None (waiting, join)."""
        champion = self._decode(value, key)
        if isinstance(champion, Rejected):
            return champion
        if self.pairing.mode == "fields":
            challenger = self._decode_challenger(value, key)
            if isinstance(challenger, Rejected):
                return Rejected(challenger.reason, f"challenger: {challenger.detail}")
            return _paired(champion, challenger, position)
        return self._join(value, champion, position)

    def _join(
        self, value: bytes | None, decoded: Decoded, position: int
    ) -> PairedEvent | Rejected | None:
        pairing = self.pairing
        if decoded.model not in (pairing.champion, pairing.challenger):
            return Rejected("other_model", f"model {decoded.model!r}")
        event_id = _event_id(value, pairing.id_field or "")
        if isinstance(event_id, Rejected):
            return event_id
        waiting = self._pending.get(event_id)
        if waiting is None:
            self._pending[event_id] = (decoded.model, decoded, position)
            if len(self._pending) > pairing.max_pending:
                del self._pending[next(iter(self._pending))]
                self.dropped += 1
                return Rejected("unpaired", f"more than {pairing.max_pending} records pending")
            return None
        model, other, _ = waiting
        if model == decoded.model:
            return Rejected("duplicate_id", f"{pairing.id_field}={event_id!r} twice for {model!r}")
        del self._pending[event_id]
        if other.event.y_true != decoded.event.y_true:
            return Rejected(
                "label_mismatch", f"{pairing.id_field}={event_id!r}: the two records' labels differ"
            )
        if decoded.model == pairing.champion:
            return _paired(decoded, other, position)
        return _paired(other, decoded, position)

    def finish(self) -> int:
        """Records still waiting at the end (counted as unpaired); clears them."""
        left = len(self._pending)
        self._pending.clear()
        return left


def _paired(champion: Decoded, challenger: Decoded, position: int) -> PairedEvent:
    a, b = champion.event, challenger.event
    return PairedEvent(
        a.y_true,
        a.y_score,
        b.y_score,
        a.y_pred,
        b.y_pred,
        a.ts if a.ts is not None else b.ts,
        position,
    )


def _event_id(value: bytes | None, field: str) -> object:
    """The record's event id (a string or an integer), or a rejection. The decoder has
    already parsed the value once; the id is outside its events format, so it is read here."""
    obj = json.loads(value or b"{}")
    raw = obj.get(field) if isinstance(obj, Mapping) else None
    if isinstance(raw, bool) or not isinstance(raw, str | int) or raw == "":
        return Rejected("missing_id", f"no usable {field!r} field (a string or an integer)")
    return raw
