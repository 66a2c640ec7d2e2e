"""CSV input for ``compare``: the replay's CSV source with the pairing's extra columns.

:class:`~driftwatch.replay.sources.CsvSource` turns each row into the JSON object of its
roles (label, score, prediction, ts, model). A comparison needs one or two more columns per
row — the challenger's score and prediction, or the event id of a join — so
:class:`PairedCsvSource` asks for those columns too (a missing one is a
:class:`~driftwatch.replay.sources.SourceError` naming it) and adds them to each record,
typed as a JSON producer would have written them: the score as a number, the prediction as
a class, the id as text.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

from driftwatch.compare.pairing import Pairing
from driftwatch.decoding.decoder import EventFormat
from driftwatch.replay.sources import CsvSource, _class_cell, _number


class PairedCsvSource(CsvSource):
    """A :class:`~driftwatch.replay.sources.CsvSource` that also carries the pairing's columns."""

    def __init__(
        self,
        path: str,
        fmt: EventFormat,
        columns: Mapping[str, str] | None,
        delimiter: str,
        pairing: Pairing,
    ) -> None:
        extra: dict[str, str] = {}
        if pairing.mode == "fields":
            extra["challenger_score"] = pairing.challenger_score or ""
            if pairing.challenger_prediction:
                extra["challenger_prediction"] = pairing.challenger_prediction
        else:
            extra["id"] = pairing.id_field or ""
        self._extra = extra
        # Explicit columns are required by the base class: a missing one is a SourceError.
        super().__init__(path, fmt, {**(columns or {}), **extra}, delimiter)

    def _value(self, row: Sequence[str], indices: Mapping[str, int]) -> bytes:
        base = {role: index for role, index in indices.items() if role not in self._extra}
        obj = json.loads(super()._value(row, base))
        for role, name in self._extra.items():
            index = indices[role]
            if index >= len(row) or not row[index].strip():
                continue
            cell = row[index]
            if role == "challenger_score":
                obj[name] = _number(cell)
            elif role == "challenger_prediction":
                obj[name] = _class_cell(cell, self.fmt)
            else:
                obj[name] = cell.strip()
        return json.dumps(obj).encode()
