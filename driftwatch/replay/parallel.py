"""Replaying a JSON Lines file of several models in several processes.

Why by model: a model's events must reach its monitor in order, one after the other, but the
monitors of different models share nothing. So each of n worker processes reads the whole
file, decodes every line (cheap next to a monitor update) so that all of them rank the models
alike by first event, and gives to monitors only the models whose rank is its own modulo n;
rejected lines, and the lines of models the settings' ``events.only_models`` skips, are
counted by the worker their line number falls to. :func:`~driftwatch.replay.run.merge` joins
the n results into exactly what one process gives: same counts, same alarms in the same
order, same models in the same order, same bad records, same figure data
(``tests/test_replay_speed.py``). The ``limits.max_models`` rule holds too, because every
worker knows every model's rank.

Processes are forked (Linux and macOS): the workers inherit the replay's settings and
callbacks instead of pickling them, and send back only their results. Where fork is not
available, or the file is standard input, the replay runs in one process.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import time
from collections.abc import Callable, Collection
from multiprocessing.connection import Connection
from typing import Any

from driftwatch.decoding.decoder import Decoded, EventFormat
from driftwatch.decoding.fast_decoder import FastDecoder
from driftwatch.replay.run import Replay, ReplayResult, merge
from driftwatch.replay.sources import CHUNK_BYTES, STDIN, JsonLinesSource

MakeReplay = Callable[[tuple[int, int]], Replay]
"""Builds the :class:`Replay` of a share, without ``on_bad`` and ``on_alarm`` callbacks
(the caller calls them on the merged result's bad records and alarms, in order)."""

Tick = Callable[[int, int | None, int, int], None]
"""Progress: (bytes done, bytes in all, records, alarms)."""

PROBE_LINES = 5_000
"""Lines read at the start of a file to see how many models it holds."""


def available() -> bool:
    return "fork" in multiprocessing.get_all_start_methods()


def jobs_for(path: str, fmt: EventFormat, requested: int | None,
             only_models: Collection[str] = ()) -> int:
    """How many processes to use for ``path``: ``requested`` if given, else one per model
    seen in the first :data:`PROBE_LINES` lines (of ``only_models`` when not empty: the
    others are skipped), at most one per idle CPU (:func:`idle_cpus`); 1 (one process) for
    standard input or without fork."""
    if path == STDIN or not available():
        return 1
    if requested is not None:
        return max(1, requested)
    if fmt.model_source != "field":
        return 1
    try:
        with open(path, "rb") as handle:
            lines = handle.readlines(CHUNK_BYTES)[:PROBE_LINES]
    except OSError:
        return 1
    decode = FastDecoder(fmt)
    models = {result.model for result in map(decode, lines) if isinstance(result, Decoded)}
    if only_models:
        models &= set(only_models)
    return max(1, min(len(models), idle_cpus()))


def idle_cpus() -> int:
    """The CPUs this process may use less the machine's load (the 1-minute average), at
    least 1: on a machine whose cores are busy, more processes only add the decoding that
    each of them repeats."""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    try:
        load = os.getloadavg()[0]
    except OSError:
        load = 0.0
    return max(1, round((cpus or 1) - load))


def _work(path: str, make_replay: MakeReplay, share: tuple[int, int], out: Connection,
          counters: Any) -> None:
    """A worker: replay its share, keeping its counters current, and send the result."""
    mine = share[0]
    replay = make_replay(share)
    source = JsonLinesSource(path)
    start = time.perf_counter()
    try:
        for first, lines in source.chunks():
            replay.process_lines(lines, first)
            done, _ = source.progress()
            counters[3 * mine: 3 * mine + 3] = [done, replay.records, replay.alarm_count]
    except KeyboardInterrupt:  # the parent reports what was replayed so far
        pass
    result = replay.result(path, time.perf_counter() - start)
    out.send((result, replay.ranks(), replay.field_samples()))
    out.close()


def run_parallel(path: str, make_replay: MakeReplay, jobs: int, tick: Tick | None = None,
                 interval_s: float = 0.1) -> ReplayResult:
    """Replay ``path`` in ``jobs`` processes and merge their results (see the module
    docstring). ``tick`` is called about every ``interval_s`` seconds with the slowest
    worker's position and the records and alarms so far.

    A KeyboardInterrupt reaches the workers too (they are in the terminal's process group):
    each sends what it replayed so far, and the merged result is returned with the
    KeyboardInterrupt raised again once it is in (as :class:`KeyboardInterrupt` with the
    result as its argument).
    """
    context = multiprocessing.get_context("fork")
    counters = context.Array("q", 3 * jobs, lock=False)
    total = os.stat(path).st_size or None
    workers, pipes = [], []
    start = time.perf_counter()
    for mine in range(jobs):
        receive, send = context.Pipe(duplex=False)
        worker = context.Process(target=_work, args=(path, make_replay, (mine, jobs), send,
                                                     counters), daemon=True)
        worker.start()
        send.close()
        workers.append(worker)
        pipes.append(receive)
    interrupted = False
    parts: list[Any] = [None] * jobs
    try:
        waiting = set(range(jobs))
        while waiting:
            for index in list(waiting):
                if pipes[index].poll(interval_s / jobs):
                    parts[index] = pipes[index].recv()
                    waiting.discard(index)
                elif not workers[index].is_alive() and not pipes[index].poll():
                    raise RuntimeError(f"replay worker {index} ended with exit code "
                                       f"{workers[index].exitcode} and no result")
            if tick is not None:
                values = list(counters)
                done = min(values[0::3])
                tick(done, total, sum(values[1::3]), sum(values[2::3]))
    except KeyboardInterrupt:
        interrupted = True
        for index, pipe in enumerate(pipes):
            if parts[index] is None:
                with contextlib.suppress(EOFError):  # a worker that ended without a result
                    parts[index] = pipe.recv()
    finally:
        for worker in workers:
            worker.join(timeout=5)
            if worker.is_alive():
                worker.terminate()
    result = merge(path, [part for part in parts if part is not None],
                   time.perf_counter() - start)
    if interrupted:
        raise KeyboardInterrupt(result)
    return result
