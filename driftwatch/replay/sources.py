"""Where replayed records come from: JSON Lines files, CSV files, or a Kafka topic range.

Every source yields :class:`ReplayRecord` values — the record's bytes, its key and where it was
found — so that the replay decodes them with :func:`driftwatch.decoding.decoder.decode`, exactly as
the agent decodes Kafka records: the same field names, label classes, limits and rejection
reasons. A CSV row is turned into the JSON object the same record would have been on Kafka
(:class:`CsvSource`), so CSV files follow the same rules too.

Sources also report how far they have got (:meth:`ReplayInput.progress`), for the progress bar:
files in bytes of the file, a topic range in records. The topic range is
:class:`driftwatch.replay.kafka_range.KafkaRangeSource`.

Lifecycle: a source opens its file or consumer when iterated and closes it when the
iteration ends (also on an exception or an early ``break``). A problem that makes the whole
input unusable (no such file, a CSV header without the label column, an unknown topic) is a
:class:`SourceError` with a one-line message; a problem with one record never is.
"""

from __future__ import annotations

import codecs
import csv
import json
import os
import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, BinaryIO, Literal, Protocol

from driftwatch.decoding.decoder import EventFormat, Rejected
from driftwatch.sources.record import Record as AgentRecord

Format = Literal["jsonl", "csv"]

ROLES: tuple[str, ...] = ("label", "score", "prediction", "ts", "model")
"""The CSV column roles of ``--columns role=column``; label and score are required."""

REQUIRED_ROLES: tuple[str, ...] = ("label", "score")

BAD_CSV = "bad_csv"
"""The one rejection reason a replay adds to the decoder's: a row the csv module cannot read."""

STDIN = "-"
"""The file name that reads standard input."""

CHUNK_BYTES = 1 << 20
"""JSON Lines are read about this many bytes at a time (a few thousand lines): few enough
calls for the reading to cost nothing per line, often enough for a live progress bar."""


class SourceError(Exception):
    """The input cannot be replayed at all; ``str()`` is one line naming the problem."""


@dataclass(frozen=True, slots=True)
class ReplayRecord:
    """One record to decode, and where it came from.

    Attributes:
        value: the record value (a JSON object's bytes, as on Kafka).
        key: the Kafka record key; None for files.
        position: the 1-based line number in a file, or the offset in a Kafka partition.
        partition: the Kafka partition; None for files.
        rejected: set by a source that could not even read the record (a CSV row the csv
            module refuses, reason ``bad_csv``); the replay counts it without decoding.
    """

    value: bytes | None
    key: bytes | None
    position: int
    partition: int | None = None
    rejected: Rejected | None = None

    @property
    def where(self) -> str:
        """``line 12`` or ``partition 0 offset 12``, for messages."""
        if self.partition is None:
            return f"line {self.position}"
        return f"partition {self.partition} offset {self.position}"


@dataclass(frozen=True, slots=True)
class BadRecord:
    """A :class:`ReplayRecord` that did not become an event (for compare, half of a paired
    event): where, and the decoder's reason. Replay and compare keep the first ones."""

    position: int  # line number, or offset within ``partition``
    partition: int | None
    reason: str
    detail: str


class ReplayInput(Protocol):
    """An iterable of records that can say how far it has got."""

    name: str

    def __iter__(self) -> Iterator[ReplayRecord]: ...

    def progress(self) -> tuple[int, int | None]:
        """Units done and the total (None when unknown): bytes for files, records for Kafka."""
        ...


def agent_records(source: ReplayInput, topic: str | None = None) -> Iterator[AgentRecord]:
    """A replay source's records as the agent's (Kafka) records, so that the agent's loop
    runs over a file through :class:`~driftwatch.sources.memory.MemorySource`: the topic is
    ``topic`` (default: the source's name), the partition the record's (0 for a file), the
    offset its position (the line number) and the timestamp 0. A CSV row the csv module
    refused goes as it is (the agent has no ``bad_csv`` reason: its value, if any, is
    decoded and rejected by the decoder's rules)."""
    name = source.name if topic is None else topic
    for record in source:
        yield AgentRecord(name, record.partition or 0, record.position, record.key,
                          record.value, 0)


def detect_format(path: str, requested: Format | None) -> Format:
    """``requested``, else the format the file name says: ``.csv`` is CSV, anything else
    (``.jsonl``, ``.ndjson``, ``.json``, standard input) JSON Lines."""
    if requested is not None:
        return requested
    return "csv" if path.lower().endswith((".csv", ".tsv")) else "jsonl"


class _ByteCounter:
    """The total size of the file and how much of it has been read."""

    def __init__(self, handle: BinaryIO) -> None:
        self.done = 0
        try:
            size = os.fstat(handle.fileno()).st_size
        except (OSError, ValueError):
            size = 0
        self.total = size if size > 0 else None


def _open_binary(path: str) -> BinaryIO:
    if path == STDIN:
        return sys.stdin.buffer
    try:
        return Path(path).open("rb")
    except FileNotFoundError:
        raise SourceError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise SourceError(f"{path}: is a directory") from None
    except OSError as exc:
        raise SourceError(f"{path}: cannot read: {exc.strerror or exc}") from None


class JsonLinesSource:
    """A JSON Lines file: one record value per line, decoded as the agent decodes Kafka
    record values.

    Lines are numbered from 1. Empty (or whitespace-only) lines are skipped: a trailing
    blank line is common and is not a record. A line ending (``\\n`` or ``\\r\\n``) is not
    part of the value.
    """

    def __init__(self, path: str) -> None:
        self.name = path
        self._counter: _ByteCounter | None = None
        self._handle = _open_binary(path)  # fail early: before the replay starts

    def progress(self) -> tuple[int, int | None]:
        counter = self._counter
        return (0, None) if counter is None else (counter.done, counter.total)

    def close(self) -> None:
        """Close the file without reading it (when other processes read it instead)."""
        if self._handle is not sys.stdin.buffer:
            self._handle.close()

    def __iter__(self) -> Iterator[ReplayRecord]:
        for first, lines in self.chunks():
            for number, line in enumerate(lines, first):
                value = line.rstrip(b"\r\n")
                if value.strip():
                    yield ReplayRecord(value, None, number)

    def chunks(self, size: int = CHUNK_BYTES) -> Iterator[tuple[int, list[bytes]]]:
        """The file's lines in runs of about ``size`` bytes, as (number of the first line,
        the lines with their line endings, blank ones included): what a replay reads in bulk
        (:meth:`driftwatch.replay.run.Replay.process_lines`)."""
        handle = self._handle
        counter = self._counter = _ByteCounter(handle)
        first = 1
        try:
            while lines := handle.readlines(size):
                counter.done += sum(map(len, lines))
                yield first, lines
                first += len(lines)
        finally:
            if handle is not sys.stdin.buffer:
                handle.close()


def parse_columns(spec: str | None) -> dict[str, str]:
    """``label=y,score=p`` as ``{"label": "y", "score": "p"}``; ``SourceError`` naming an
    unknown role or a malformed item."""
    mapping: dict[str, str] = {}
    if not spec:
        return mapping
    for item in spec.split(","):
        role, sep, column = item.partition("=")
        role, column = role.strip(), column.strip()
        if not sep or not role or not column:
            raise SourceError(f"--columns: {item.strip()!r} is not ROLE=COLUMN")
        if role not in ROLES:
            raise SourceError(f"--columns: unknown role {role!r}; roles: {', '.join(ROLES)}")
        if role in mapping:
            raise SourceError(f"--columns: {role} is mapped twice")
        mapping[role] = column
    return mapping


def default_columns(fmt: EventFormat) -> dict[str, str]:
    """The column of each role when ``--columns`` does not say: the settings' field names."""
    return {
        "label": fmt.label_field,
        "score": fmt.score_field,
        "prediction": fmt.prediction_field,
        "ts": fmt.time_field,
        "model": fmt.model_field,
    }


class CsvSource:
    """A CSV file with a header row; each row becomes the JSON object the same event would
    be on Kafka, then is decoded like one.

    Why JSON: one decoder means one set of rules, so a file that replays cleanly is a stream
    the agent accepts, and a rejected row carries the same reason the agent would count.

    Columns are found by name, per role (label, score, prediction, ts, model): the names from
    ``columns`` (``--columns``), else the settings' field names. A column that ``columns``
    names, or the label or score column, must be in the header (else :class:`SourceError`
    naming it); optional columns left to the defaults may be absent. Cells are typed as a
    JSON producer would have written them: the score and the time become numbers when they
    parse as numbers, a label or prediction becomes an integer or true/false unless it
    matches a string class of the settings, and empty optional cells are absent. Rows are
    numbered by their line in the file (the header is line 1); empty rows are skipped.

    Parameters:
        path: the file, or ``-`` for standard input.
        fmt: the events format (field names and classes).
        columns: role → column name overrides.
        delimiter: the field separator (``,``; ``\\t`` for TSV files).
    """

    def __init__(self, path: str, fmt: EventFormat, columns: Mapping[str, str] | None = None,
                 delimiter: str = ",") -> None:
        self.name = path
        self._explicit = dict(columns or {})
        self._columns = {**default_columns(fmt), **self._explicit}
        self._delimiter = delimiter
        self._handle = _open_binary(path)
        self._counter = _ByteCounter(self._handle)
        # The header is read now, so a missing column is reported before the replay starts.
        self._reader = csv.reader(self._text_lines(self._handle, self._counter),
                                  delimiter=delimiter)
        try:
            header = next(self._reader)
        except StopIteration:
            self._close()
            raise SourceError(f"{path}: empty file, expected a header row") from None
        except csv.Error as exc:
            self._close()
            raise SourceError(f"{path}: unreadable header row: {exc}") from None
        try:
            self._indices = self._find_columns([cell.strip() for cell in header])
        except SourceError:
            self._close()
            raise
        self.fmt = self._event_format(fmt)
        """The events format to decode this file's records with: ``fmt`` with the columns'
        names as field names."""

    def progress(self) -> tuple[int, int | None]:
        return self._counter.done, self._counter.total

    def _close(self) -> None:
        if self._handle is not sys.stdin.buffer:
            self._handle.close()

    def _text_lines(self, handle: BinaryIO, counter: _ByteCounter) -> Iterator[str]:
        # Counting the bytes here, before csv sees them, gives the progress bar its position;
        # a text file's tell() is unavailable while it is being iterated.
        decoder = codecs.getincrementaldecoder("utf-8-sig")(errors="replace")
        for line in handle:
            counter.done += len(line)
            yield decoder.decode(line)

    def __iter__(self) -> Iterator[ReplayRecord]:
        reader, indices = self._reader, self._indices
        try:
            while True:
                try:
                    row = next(reader)
                except StopIteration:
                    return
                except csv.Error as exc:  # e.g. an oversized field; the reader goes on after it
                    yield ReplayRecord(None, None, reader.line_num,
                                 rejected=Rejected(BAD_CSV, str(exc)[:60]))
                    continue
                if not row or (len(row) == 1 and not row[0].strip()):
                    continue
                yield ReplayRecord(self._value(row, indices), None, reader.line_num)
        finally:
            self._close()

    def _find_columns(self, header: Sequence[str]) -> dict[str, int]:
        position: dict[str, int] = {}
        for index, name in enumerate(header):
            position.setdefault(name, index)
        indices: dict[str, int] = {}
        for role, column in self._columns.items():
            if column in position:
                indices[role] = position[column]
            elif role in self._explicit or role in REQUIRED_ROLES:
                how = f"mapped to {role} by --columns" if role in self._explicit else (
                    f"the {role} column by the settings' events section; map another with "
                    f"--columns {role}=COLUMN")
                raise SourceError(
                    f"{self.name}: no column {column!r} ({how}); the header has: "
                    f"{', '.join(header) or '(nothing)'}{self._delimiter_hint(header)}"
                )
        return indices

    def _delimiter_hint(self, header: Sequence[str]) -> str:
        """A hint when the header is one cell that another separator would split: a
        semicolon-separated file (the CSV of spreadsheets in locales whose decimal mark is a
        comma) read with the default comma, say."""
        if len(header) != 1:
            return ""
        for candidate, spelled in ((";", "';'"), ("\t", "'\\t'"), ("|", "'|'"), (",", "','")):
            if candidate != self._delimiter and candidate in header[0]:
                return f"; the header looks {spelled}-separated: try --delimiter {spelled}"
        return ""

    def _event_format(self, fmt: EventFormat) -> EventFormat:
        # Field names are the CSV column names, so a rejection's detail names the column
        # ("no 'p' field", "y=2 is not 1 or 0"); roles without a column get names no
        # column can have, so they stay absent.
        names = {role: self._columns[role] if role in self._indices else f"\0{role}"
                 for role in ROLES}
        return replace(fmt, label_field=names["label"], score_field=names["score"],
                       prediction_field=names["prediction"], time_field=names["ts"],
                       model_field=names["model"])

    def _value(self, row: Sequence[str], indices: Mapping[str, int]) -> bytes:
        obj: dict[str, Any] = {}
        for role, index in indices.items():
            if index >= len(row):
                continue  # a short row: the field is absent, as in a JSON object without it
            cell, name = row[index], self._columns[role]
            if role == "score":
                obj[name] = _number(cell)
            elif role in ("label", "prediction"):
                if role == "prediction" and not cell.strip():
                    continue
                obj[name] = _class_cell(cell, self.fmt)
            elif cell.strip():  # ts, model: an empty cell means none
                obj[name] = _number(cell) if role == "ts" else cell
        return json.dumps(obj).encode()


def _number(cell: str) -> Any:
    """A float when the cell is a number (NaN and infinities included: the decoder refuses
    them with its own reason), else the text."""
    try:
        return float(cell)
    except ValueError:
        return cell


def _class_cell(cell: str, fmt: EventFormat) -> Any:
    """The JSON value a producer would have sent for a class: the text when it is one of the
    settings' string classes, an integer or true/false when it reads as one, else the text
    (which the decoder rejects as bad_label). ``1.0`` stays text: the decoder refuses float
    labels, and so does a CSV replay."""
    for configured in (fmt.positive_label, fmt.negative_label):
        if isinstance(configured, str) and cell == configured:
            return cell
    text = cell.strip()
    if text.lower() in ("true", "false"):
        return text.lower() == "true"
    try:
        return int(text)
    except ValueError:
        return cell
