"""A JSON Lines file, or standard input, as the agent's source (``source.kind: jsonl``).

``driftwatch run`` without Kafka: each line is one record value, decoded as a Kafka record's
value would be (the same fields, limits and rejections). The file is one partition, topic
its path (``stdin`` for ``-``), offsets its 1-based line numbers, as ``driftwatch replay``
numbers them; blank lines are skipped but counted, and a line ending is not part of the
value. The file is followed as it grows (``tail -f``): a line is read once its newline is
written, so a writer's half-written line is never taken.

Checkpoints work as with Kafka: the file's one partition resumes at the line after the last
saved one, so a restarted agent neither loses nor double-counts a line. There is nothing to
commit the offsets to (the checkpoint is the resume point), so the checkpoint is a file
(``checkpoint.backend`` ``auto`` picks it with this source). A file that does not exist yet
is waited for: ``/readyz`` answers 503 naming ``source.options.path`` until it appears. A
file replaced or truncated under the agent is not followed (log rotation needs a new run).
"""

from __future__ import annotations

import os
import select
import time
from typing import Annotated

from pydantic import Field, StringConstraints

from driftwatch.sources.protocol import LocalSource, OnAssignedHook, SourceContext
from driftwatch.sources.record import Record, TopicPartition

__all__ = ["STDIN", "JsonLinesFile", "jsonl_source"]

STDIN = "-"
"""The path that reads standard input."""

CHUNK_BYTES = 1 << 18
"""Read at most this many bytes per poll (a few thousand lines: one batch)."""


def jsonl_source(
    context: SourceContext, *,
    path: Annotated[str, StringConstraints(min_length=1)],
    poll_interval_seconds: Annotated[float, Field(gt=0, le=10)] = 0.5,
) -> JsonLinesFile:
    """The ``jsonl`` source: ``path`` (``-``: standard input) read as JSON Lines and
    followed as it grows; ``poll_interval_seconds`` is the longest a poll waits for new
    lines (so also how late a stop is noticed). The settings check both (the annotations);
    a program calling this directly gets the same checks as ``ValueError``."""
    if not path:
        raise ValueError("path must name a file, or - for standard input")
    if not 0 < poll_interval_seconds <= 10:
        raise ValueError(f"poll_interval_seconds must be in (0, 10], got "
                         f"{poll_interval_seconds!r}")
    return JsonLinesFile(path, on_assigned=context.on_assigned, wait_s=poll_interval_seconds)


class JsonLinesFile(LocalSource):
    """The records of a JSON Lines file, followed as it grows (see the module docstring).

    Parameters:
        path: the file; ``-`` reads standard input.
        on_assigned: called with the file's one partition when it is opened; the line it
            returns an offset for is the first one handed out.
        wait_s: the longest a :meth:`poll` waits for new lines.
    """

    def __init__(self, path: str, *, on_assigned: OnAssignedHook | None = None,
                 wait_s: float = 0.5) -> None:
        super().__init__()
        self.path = path
        self.partition = TopicPartition("stdin" if path == STDIN else path, 0)
        self._on_assigned = on_assigned
        self._wait_s = wait_s
        self._fd: int | None = None
        self._next_line = 1  # the number of the line that starts the buffer
        self._first = 1  # lines before this one are skipped (the checkpoint covers them)
        self._buffer = b""
        self._problem: str | None = None

    @property
    def ready(self) -> bool:
        return self._fd is not None and not self.closed

    @property
    def problem(self) -> str | None:
        return self._problem

    def poll(self) -> list[Record]:
        """The complete lines written since the last poll (none after a wait of at most
        ``wait_s``)."""
        if self.closed:
            raise RuntimeError("the jsonl source is closed")
        fd = self._fd if self._fd is not None else self._open()
        if fd is None:
            time.sleep(self._wait_s)
            return []
        readable, _, _ = select.select([fd], [], [], self._wait_s)
        data = os.read(fd, CHUNK_BYTES) if readable else b""
        if not data:
            if readable:  # at the end of the file (or of a closed pipe): wait for more
                time.sleep(self._wait_s)
            return []
        return self._lines(data)

    def _open(self) -> int | None:
        if self.path == STDIN:
            fd = 0
        else:
            try:
                fd = os.open(self.path, os.O_RDONLY)
            except OSError as error:
                self._problem = (f"source.options.path: cannot open {self.path!r}: "
                                 f"{error.strerror or error}")
                return None
        self._fd, self._problem = fd, None
        if self._on_assigned is not None:
            start = dict(self._on_assigned({self.partition}) or {})
            self._first = start.get(self.partition, 1)
        return fd

    def _lines(self, data: bytes) -> list[Record]:
        lines = (self._buffer + data).split(b"\n")
        self._buffer = lines.pop()  # after the last newline: not a whole line yet
        topic, number = self.partition.topic, self._next_line
        self._next_line += len(lines)
        first = self._first
        return [Record(topic, 0, line_number, None, value, 0)
                for line_number, line in enumerate(lines, number)
                if line_number >= first and (value := line.rstrip(b"\r")).strip()]

    def lag(self, *, refresh: bool = True) -> dict[tuple[str, int], int]:
        """Nothing measured: a growing file's unread lines are not counted."""
        return {}

    def close(self) -> None:
        if self._fd is not None and self._fd != 0:
            os.close(self._fd)
        self._fd = None
        super().close()
