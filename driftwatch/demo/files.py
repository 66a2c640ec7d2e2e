"""Simulated records to a file: what ``driftwatch simulate --output FILE`` writes.

The records are those the Kafka feed (:mod:`driftwatch.demo.feed`) sends, built by the same
functions (:mod:`driftwatch.simulate.records`), in the order it sends them: the models
interleaved event by event (:func:`labelled_records`), or, in the two-stream form, every
model's predictions and labels merged by time (:func:`joinable_records`). So
``driftwatch replay FILE`` with the same settings watches what an agent reading the topic
would have watched.

Formats: JSON Lines (one record value per line, as on Kafka) or CSV (a header row of the
record's field names, one row per event; ``.tsv`` separates by tabs), the two that
``driftwatch replay`` reads, chosen by the file name unless given. CSV holds labelled events
only: ``replay`` reads no event id or kind from CSV columns, so the two-stream form is JSON
Lines only (:func:`check_format`).

Lifecycle: the records go to a temporary file beside ``path``, renamed over it once all are
written, so an interrupted or failed run leaves no partial file (and an older file of that
name untouched); ``-`` writes to standard output instead.
"""

from __future__ import annotations

import contextlib
import csv
import heapq
import json
import math
import os
import sys
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, Literal, TextIO

from driftwatch.core.events import Event
from driftwatch.core.join import Label, Prediction
from driftwatch.simulate.records import JoinFields, RecordFormat, event_record, joinable_record

__all__ = ["STDOUT", "FileFormat", "check_format", "delimiter_of", "file_format",
           "joinable_records", "labelled_records", "output_file", "write_records"]

FileFormat = Literal["jsonl", "csv"]

STDOUT = "-"
"""The file name that writes to standard output."""


def file_format(path: str, requested: FileFormat | None = None) -> FileFormat:
    """``requested``, else what the file name says: ``.csv`` and ``.tsv`` are CSV, anything
    else (``.jsonl``, ``.ndjson``, standard output) JSON Lines; as ``replay`` reads them."""
    if requested is not None:
        return requested
    return "csv" if path.lower().endswith((".csv", ".tsv")) else "jsonl"


def check_format(kind: FileFormat, *, joinable: bool) -> None:
    """``ValueError`` when ``kind`` cannot hold the records: the two-stream form in CSV."""
    if joinable and kind == "csv":
        raise ValueError("CSV holds labelled events only (replay reads no event id or kind "
                         "column from CSV): with join enabled in the settings, write JSON "
                         "Lines (.jsonl)")


def labelled_records(streams: Mapping[str, Iterable[Event]], fmt: RecordFormat, *,
                     rate: float, duration_s: float | None = None
                     ) -> Iterator[dict[str, Any]]:
    """The records of every model's events, event ``i`` of each model in turn (the feed's
    order); with ``duration_s``, the events a feed at ``rate`` sends in that long: the first
    ``ceil(duration_s × rate)`` of each model."""
    limit = None if duration_s is None else math.ceil(duration_s * rate)
    iterators = {model: iter(events) for model, events in streams.items()}
    count = 0
    while iterators and (limit is None or count < limit):
        for model, events in list(iterators.items()):
            event = next(events, None)
            if event is None:
                del iterators[model]
            else:
                yield event_record(event, model, fmt)
        count += 1


def joinable_records(streams: Mapping[str, Iterable[Prediction | Label]], fmt: RecordFormat,
                     join: JoinFields, *, duration_s: float | None = None
                     ) -> Iterator[dict[str, Any]]:
    """Every model's predictions and labels merged by time (the feed's order); with
    ``duration_s``, those due less than that long after the first."""
    merged: Iterator[Prediction | Label] = heapq.merge(*streams.values(), key=lambda r: r.ts)
    first: float | None = None
    for record in merged:
        first = record.ts if first is None else first
        if duration_s is not None and record.ts - first >= duration_s:
            return
        yield joinable_record(record, fmt, join)


@contextlib.contextmanager
def output_file(path: str) -> Iterator[TextIO]:
    """The text stream to write ``path`` through: standard output for ``-``, else a new
    temporary file beside ``path`` (with the permissions a new file gets), renamed over
    ``path`` when the block ends normally and deleted when it raises (an error, Ctrl+C).
    ``OSError`` when the file cannot be created."""
    if path == STDOUT:
        yield sys.stdout
        sys.stdout.flush()
        return
    target = Path(path)
    handle, temporary = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp",
                                         dir=target.parent)
    try:
        os.chmod(temporary, 0o666 & ~_umask())  # mkstemp's file is private (0600)
        with os.fdopen(handle, "w", encoding="utf-8", newline="") as out:
            yield out
        os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def write_records(out: TextIO, records: Iterable[dict[str, Any]], kind: FileFormat,
                  delimiter: str = ",") -> int:
    """Write ``records`` to ``out`` as ``kind`` (CSV: with a header row, fields separated by
    ``delimiter``); return how many."""
    count = 0
    writer: csv.DictWriter[str] | None = None
    for record in records:
        if kind == "jsonl":
            out.write(json.dumps(record, separators=(",", ":")) + "\n")
        else:
            if writer is None:  # every record of a run has the same fields: one format
                writer = csv.DictWriter(out, fieldnames=list(record), delimiter=delimiter,
                                        lineterminator="\n")
                writer.writeheader()
            writer.writerow(record)
        count += 1
    return count


def delimiter_of(path: str) -> str:
    """The CSV field separator for ``path``: a tab for ``.tsv`` (as ``replay`` reads it),
    else a comma."""
    return "\t" if path.lower().endswith(".tsv") else ","


def _umask() -> int:
    mask = os.umask(0o022)  # the only way to read it is to set it: set it back at once
    os.umask(mask)
    return mask
