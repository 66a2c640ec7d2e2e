"""A one-line progress bar on stderr, standard library only.

Why this small: a replay of a month of events takes seconds to minutes, long enough to want to
see it move, and a dependency for a bar is not worth it. The bar redraws at most
``interval_s`` apart (the replay asks every few thousand records, so the clock is not read
per record), and :meth:`Progress.clear` wipes it before anything else is printed to the same
terminal, so messages never end up glued to a half-drawn bar.
"""

from __future__ import annotations

import time
from typing import TextIO

BAR_WIDTH = 28


def format_duration(seconds: float) -> str:
    """``0:42``, ``12:05``, ``3:02:10``: minutes and seconds, hours when there are any."""
    whole = round(seconds)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


class Progress:
    """Draws ``[#####-----]  42%  8,400 records  52,000/s  alarms 1  ETA 0:12`` on
    ``stream``; the estimate assumes the rest goes at the rate so far (files only: a total
    must be known).

    Parameters:
        stream: where to draw (stderr).
        label: the first word of the line (the source's name, shortened).
        interval_s: least time between two redraws.
    """

    def __init__(self, stream: TextIO, label: str, interval_s: float = 0.1) -> None:
        self._stream = stream
        self._label = label if len(label) <= 30 else "…" + label[-29:]
        self._interval_s = interval_s
        self._start = time.monotonic()
        self._drawn_at = -float("inf")
        self._width = 0
        encoding = (getattr(stream, "encoding", None) or "").lower().replace("-", "")
        self._full, self._empty = ("█", "░") if encoding == "utf8" else ("#", "-")

    def update(self, done: int, total: int | None, records: int, alarms: int,
               force: bool = False) -> None:
        """Redraw, unless the last redraw was less than ``interval_s`` ago."""
        now = time.monotonic()
        if not force and now - self._drawn_at < self._interval_s:
            return
        self._drawn_at = now
        elapsed = max(now - self._start, 1e-9)
        parts = [self._label]
        eta = None
        if total:
            share = min(done / total, 1.0)
            filled = round(share * BAR_WIDTH)
            parts.append(self._full * filled + self._empty * (BAR_WIDTH - filled))
            parts.append(f"{share:4.0%}")
            if 0 < share < 1:
                eta = elapsed * (1 - share) / share  # the rate so far, over what remains
        parts.append(f"{records:,} records")
        parts.append(f"{records / elapsed:,.0f}/s")
        parts.append(f"alarms {alarms}")
        if eta is not None:
            parts.append(f"ETA {format_duration(eta)}")
        line = "  ".join(parts)
        padding = " " * max(0, self._width - len(line))
        self._stream.write("\r" + line + padding)
        self._stream.flush()
        self._width = len(line)

    def clear(self) -> None:
        """Erase the bar (before printing a message, and at the end)."""
        if self._width:
            self._stream.write("\r" + " " * self._width + "\r")
            self._stream.flush()
            self._width = 0
            self._drawn_at = -float("inf")  # redraw at the next update
