"""Stopping a command cleanly on SIGINT and SIGTERM, with a way out on a second Ctrl+C.

The handlers only set an event (a signal handler must not do the work itself: it runs
between two bytecodes of whatever the main thread was doing); the command's loop sees the
event, stops in order (the agent commits its offsets and saves its checkpoint) and exits 0.
A second SIGINT means the user does not want to wait: ``on_second`` runs at once and should
not return (it exits the process, after killing what must not outlive it).
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager


@contextmanager
def stop_on_signals(stop: threading.Event, on_second: Callable[[], None]) -> Iterator[None]:
    """SIGINT and SIGTERM set ``stop``; a second SIGINT calls ``on_second`` (which should
    not return). The previous handlers are restored on exit. Main thread only (as
    :func:`signal.signal`)."""

    def handle(signum: int, _frame: object) -> None:
        if stop.is_set() and signum == signal.SIGINT:
            on_second()
        stop.set()

    previous = {signum: signal.signal(signum, handle) for signum in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
