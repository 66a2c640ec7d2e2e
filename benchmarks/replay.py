"""Records per second through ``driftwatch replay``, beside the per-record path it replaced.

The reference is the replay as it was before chunked reading, the fast decoder and the
processes (:func:`per_record_replay`, kept here verbatim in substance): a
:class:`~driftwatch.replay.sources.ReplayRecord` per line, the agent's
:func:`~driftwatch.decoding.decoder.decode` per record, and a monitor per model. Both run the same
seeded files with the default settings, interleaved, and the median of a few repeats is
reported with the ratio measured in the same run, in wall time and in this process's CPU time
(on a shared machine the CPU time is the steadier measure of a one-process path; the
processes' row can only be timed on the wall):

- one model, 200 000 records (100 000 in ``--quick``): what a month of one model looks like;
- four models interleaved, the same count: one process, then one process per model up to
  the machine's CPUs (``--jobs``), which only helps when cores are idle;
- as a ceiling for one process, the monitor updates alone on events decoded in advance:
  what a replay would reach if reading and decoding were free.

Each row also checks that the result (everything the report shows) is the reference's.

A table after it runs the issue's day: one model at 200 events a second for a day of
record time (17.28 million records; an hour in ``--quick``) through the whole command, against
the target of 30 s.

Another table, printed first, compares whole commands, start-up included: the release whose
replay the issue measured (:data:`OLD_RELEASE`, extracted from this repository's history with
``git archive`` and run with the same interpreter) against today's ``driftwatch replay``, each
a child process on the same files, interleaved, in the child's CPU time (user + system, from
``os.wait4``) and in wall time: one model and four models at 200 000 records, and one model
at 1 000 000 in the full run, where start-up weighs less. Both versions run from compiled
bytecode, as installed packages do (an untimed run of each compiles it into a cache of its
own, even where ``PYTHONDONTWRITEBYTECODE`` is set: otherwise every timed run recompiles
both versions' modules, a tenth of a second of start-up that no installation pays). The old
release's defaults differ from today's, so its results are not compared; today's command's
``--json`` report is checked against the per-record path's.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks import ENVIRONMENT
from driftwatch.core.monitor import Monitor, MonitorConfig
from driftwatch.decoding.decoder import REJECTION_REASONS, Decoded, EventFormat, Rejected, decode
from driftwatch.decoding.fast_decoder import json_library
from driftwatch.replay.parallel import available, run_parallel
from driftwatch.replay.report import to_json
from driftwatch.replay.run import (
    MAX_KEPT_BAD_RECORDS,
    TOO_MANY_MODELS,
    Replay,
    ReplayAlarm,
    ReplayResult,
    run,
)
from driftwatch.replay.sources import BadRecord, JsonLinesSource
from driftwatch.simulate import generate

START_TS = 1_717_200_000
OLD_RELEASE = "3db08c2"
"""The release whose ``driftwatch replay`` the issue measured (13 300 records/s)."""
REPOSITORY = Path(__file__).resolve().parents[1]


def write_file(path: Path, models: int, records: int, seed: int = 3) -> None:
    """``records`` events, AUC 0.9 dropping to 0.8 halfway, of ``models`` interleaved models."""
    per_model = records // models
    streams = [generate("sudden_auc_drop", seed=seed + m, length=per_model,
                        change_at=per_model // 2, auc=0.9, drop=0.1, positive_share=0.3,
                        start_ts=START_TS, rate=1.0) for m in range(models)]
    with path.open("w", encoding="utf-8") as out:
        for events in zip(*streams, strict=True):
            for m, event in enumerate(events):
                record: dict[str, Any] = {"label": event.y_true,
                                          "score": round(event.y_score, 4),
                                          "ts": int(event.ts or START_TS)}
                if models > 1:
                    record["model"] = f"model-{m}"
                out.write(json.dumps(record) + "\n")


def per_record_replay(path: str, fmt: EventFormat, config_for: Callable[[str], MonitorConfig],
                      max_models: int) -> ReplayResult:
    """The replay before this change: one ReplayRecord and one ``decode`` per line, one monitor
    per model (the loop of ``Replay.process``, without the figure's series)."""
    start = time.perf_counter()
    monitors: dict[str, Monitor] = {}
    rejected = dict.fromkeys((*REJECTION_REASONS, TOO_MANY_MODELS), 0)
    bad: list[BadRecord] = []
    alarms: list[ReplayAlarm] = []
    records = events = 0

    def reject(position: int, found: Rejected) -> None:
        rejected[found.reason] += 1
        if len(bad) < MAX_KEPT_BAD_RECORDS:
            bad.append(BadRecord(position, None, found.reason, found.detail))

    with open(path, "rb") as handle:
        for number, line in enumerate(handle, start=1):
            value = line.rstrip(b"\r\n")
            if not value.strip():
                continue
            records += 1
            result: Decoded | Rejected = decode(value, None, fmt)
            if isinstance(result, Rejected):
                reject(number, result)
                continue
            monitor = monitors.get(result.model)
            if monitor is None:
                if len(monitors) >= max_models:
                    reject(number, Rejected(TOO_MANY_MODELS, f"model {result.model!r} would "
                                            f"exceed limits.max_models={max_models}"))
                    continue
                monitor = monitors[result.model] = Monitor(result.model,
                                                           config_for(result.model))
            events += 1
            for alarm in monitor.update(result.event):
                alarms.append(ReplayAlarm(alarm, number, None))
    return ReplayResult(
        source=path, records=records, events=events, rejected=rejected, bad_records=bad,
        alarms=alarms, snapshots={m: monitor.snapshot() for m, monitor in monitors.items()},
        configs={m: monitor.config for m, monitor in monitors.items()},
        seconds=time.perf_counter() - start,
    )


def comparable(result: ReplayResult) -> str:
    """Everything the report shows, but the time it took."""
    report = to_json(result)
    report.pop("seconds")
    return json.dumps(report, sort_keys=True)


def extract_release(commit: str, directory: Path) -> str | None:
    """Extract ``commit`` of this repository into ``directory``; None when done, else why not
    (no git, not a git checkout, or the commit is not in its history)."""
    git = shutil.which("git")
    if git is None:
        return "git is not installed"
    found = subprocess.run([git, "-C", str(REPOSITORY), "rev-parse", "--verify", "--quiet",
                            f"{commit}^{{commit}}"], capture_output=True, check=False)
    if found.returncode != 0:
        return f"commit {commit} is not in the history of {REPOSITORY} (a shallow clone?)"
    archive = subprocess.run([git, "-C", str(REPOSITORY), "archive", commit],
                             capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(directory)], input=archive, check=True)
    return None


def run_command(argv: list[str], pythonpath: Path, out: Path) -> tuple[float, float]:
    """Run ``python argv`` as a child with ``PYTHONPATH=pythonpath`` and standard output in
    ``out``; return its CPU time (user + system, from ``os.wait4``) and wall time, seconds.
    The child runs in ``out``'s directory: ``python -m`` puts its working directory first on
    the module path, ahead of ``PYTHONPATH``, and this repository's must not be it.

    The child keeps its compiled bytecode in a cache of its own, next to ``out``
    (``PYTHONPYCACHEPREFIX``, whatever ``PYTHONDONTWRITEBYTECODE`` says): an installed
    package runs from bytecode compiled at installation, so after one untimed run each
    version is timed as users run it, not recompiling its modules at every start."""
    env = {**ENVIRONMENT, "PYTHONPATH": str(pythonpath),
           "PYTHONPYCACHEPREFIX": str(Path(out.parent, "pycache", pythonpath.name))}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    with out.open("wb") as stdout:
        start = time.perf_counter()
        child = subprocess.Popen([sys.executable, *argv], stdout=stdout, env=env,
                                 cwd=out.parent)
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - start
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} exited with status {child.returncode}")
    return usage.ru_utime + usage.ru_stime, wall


def commands(quick: bool, repeats: int, directory: Path, files: dict[str, Path],
             expected: dict[str, str]) -> None:
    """The first table: the old release's command against today's, child processes."""
    old = Path(directory, "old-release")
    old.mkdir()
    why_not = extract_release(OLD_RELEASE, old)
    if why_not is not None:
        print(f"Skipped the comparison with release {OLD_RELEASE}: {why_not}.\n")
        return
    files = dict(files)
    if not quick:
        files["1 model, 10⁶"] = Path(directory, "million.jsonl")
        write_file(files["1 model, 10⁶"], 1, 1_000_000)
        expected["1 model, 10⁶"] = comparable(per_record_replay(
            str(files["1 model, 10⁶"]), EventFormat(), lambda _model: MonitorConfig(), 1000))
    versions = {"old": old, "today": REPOSITORY}
    for pythonpath in versions.values():  # each child imports the version it is meant to
        where = Path(directory, "where.txt")
        run_command(["-c", "import driftwatch; print(driftwatch.__file__)"], pythonpath, where)
        assert Path(where.read_text().strip()).is_relative_to(pythonpath), where.read_text()
        # One untimed run compiles the bytecode the timed runs load (as an installation has).
        run_command(["-m", "driftwatch", "replay", str(files["1 model"])], pythonpath, where)
    cpu: dict[tuple[str, str], list[float]] = {}
    wall: dict[tuple[str, str], list[float]] = {}
    same: dict[str, bool] = {}
    out = Path(directory, "out.json")
    for _ in range(repeats):  # interleaved
        for name, path in files.items():
            for version, pythonpath in versions.items():
                argv = ["-m", "driftwatch", "replay", str(path)]
                if version == "today":
                    argv.append("--json")
                seconds, elapsed = run_command(argv, pythonpath, out)
                cpu.setdefault((name, version), []).append(seconds)
                wall.setdefault((name, version), []).append(elapsed)
                if version == "today":
                    report = json.loads(out.read_bytes())
                    report.pop("seconds")
                    same[name] = same.get(name, True) and \
                        json.dumps(report, sort_keys=True) == expected[name]
    print(f"Whole commands, start-up included: `driftwatch replay FILE` of release "
          f"{OLD_RELEASE} (the replay the issue measured) against today's (`--json`), each a "
          f"child process with its default settings; CPU = the child's user + system time; "
          f"median of {repeats} interleaved repeats, each version's bytecode compiled by an "
          "untimed run before (as installed). Today's report is checked against the "
          "per-record path's; the old release's defaults differ, so only its speed counts.\n")
    print("| file | records | old release CPU s | today CPU s | ratio, CPU | old wall s | "
          "today wall s | ratio, wall | today records/s (wall) | same result |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name, path in files.items():
        records = sum(1 for _ in path.open("rb"))
        old_cpu, new_cpu = (statistics.median(cpu[name, v]) for v in versions)
        old_wall, new_wall = (statistics.median(wall[name, v]) for v in versions)
        print(f"| {name} | {records:,} | {old_cpu:.2f} | {new_cpu:.2f} | "
              f"{old_cpu / new_cpu:.2f}× | {old_wall:.2f} | {new_wall:.2f} | "
              f"{old_wall / new_wall:.2f}× | {records / new_wall:,.0f} | "
              f"{'yes' if same[name] else '**NO**'} |")
    print()


DAY_RATE = 200.0
"""The issue's day: one model at 200 events a second, 17.28 million records, in ≤ 30 s."""


def write_day(path: Path, seconds: float, seed: int = 20) -> int:
    """``seconds`` of record time of one model at :data:`DAY_RATE` events a second (AUC 0.9,
    30 % positives, times to the millisecond), written fast: numpy draws, one format per
    line. Returns the number of records."""
    rng = np.random.default_rng(seed)
    count = int(seconds * DAY_RATE)
    with path.open("w", encoding="utf-8") as out:
        for start in range(0, count, 500_000):
            n = min(500_000, count - start)
            labels = rng.random(n) < 0.3
            scores = rng.normal(0.0, 1.0, n) + 1.8124 * labels
            times = START_TS + (start + np.arange(n)) / DAY_RATE
            out.write("".join(f'{{"label": {y:d}, "score": {x:.4f}, "ts": {t:.3f}}}\n'
                              for y, x, t in zip(labels.tolist(), scores.tolist(),
                                                 times.tolist(), strict=True)))
    return count


def day_table(quick: bool, directory: Path, repeats: int) -> None:
    """A day of one model at 200 events a second through the whole command, against the
    issue's 30 s (an hour and its share of the 30 s in ``--quick``)."""
    seconds = 3600.0 if quick else 86_400.0
    path = Path(directory, "day.jsonl")
    records = write_day(path, seconds)
    target = 30.0 * seconds / 86_400.0
    out = Path(directory, "day.json")
    run_command(["-m", "driftwatch", "replay", str(path), "--json"], REPOSITORY, out)  # warm
    cpu, wall = [], []
    for _ in range(repeats):
        seconds_cpu, elapsed = run_command(["-m", "driftwatch", "replay", str(path), "--json"],
                                           REPOSITORY, out)
        cpu.append(seconds_cpu)
        wall.append(elapsed)
    report = json.loads(out.read_bytes())
    same = "-"
    if quick:  # small enough to replay record by record as well
        report.pop("seconds")
        same = "yes" if json.dumps(report, sort_keys=True) == comparable(per_record_replay(
            str(path), EventFormat(), lambda _model: MonitorConfig(), 1000)) else "**NO**"
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"One model at {DAY_RATE:.0f} events a second, {seconds / 3600:g} h of record time "
          f"(the issue's target: a day in ≤ 30 s), `driftwatch replay FILE --json` as a child "
          f"process, start-up included, median of {repeats}; load average at the end "
          f"{load:.1f}.\n")
    print("| records | wall s | CPU s | records/s (wall) | target wall s | met | "
          "same as per record |")
    print("|---|---|---|---|---|---|---|")
    median_wall = statistics.median(wall)
    print(f"| {records:,} | {median_wall:.1f} | {statistics.median(cpu):.1f} | "
          f"{records / median_wall:,.0f} | {target:.1f} | "
          f"{'yes' if median_wall <= target else 'no'} | {same} |\n")


def main(quick: bool = False) -> None:
    repeats = 3 if quick else 5
    records = 100_000 if quick else 200_000
    fmt, config_for, max_models = EventFormat(), lambda _model: MonitorConfig(), 1000
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    jobs = min(4, cpus or 1)
    with tempfile.TemporaryDirectory() as directory:
        big = {"1 model": Path(directory, "one-200k.jsonl"),
               "4 models": Path(directory, "four-200k.jsonl")}
        write_file(big["1 model"], 1, 200_000)
        write_file(big["4 models"], 4, 200_000)
        expected = {name: comparable(per_record_replay(str(path), fmt, config_for, max_models))
                    for name, path in big.items()}
        commands(quick, repeats, Path(directory), big, expected)
        day_table(quick, Path(directory), 1 if quick else 3)
        files = big
        if records != 200_000:
            files = {"1 model": Path(directory, "one.jsonl"),
                     "4 models": Path(directory, "four.jsonl")}
            write_file(files["1 model"], 1, records)
            write_file(files["4 models"], 4, records)

        def current(path: Path) -> ReplayResult:
            return run(JsonLinesSource(str(path)), Replay(fmt, config_for, max_models),
                       str(path))

        def parallel(path: Path) -> ReplayResult:
            return run_parallel(str(path), lambda share: Replay(fmt, config_for, max_models,
                                                                share=share), jobs)

        decoded = {name: [decode(line, None, fmt) for line in path.read_bytes().splitlines()]
                   for name, path in files.items()}

        def monitors_alone(path: Path) -> ReplayResult:
            """The ceiling of one process: the monitor updates alone, decoded in advance."""
            name = next(n for n, p in files.items() if p == path)
            monitors: dict[str, Monitor] = {}
            for found in decoded[name]:
                assert isinstance(found, Decoded)
                monitor = monitors.get(found.model)
                if monitor is None:
                    monitor = monitors[found.model] = Monitor(found.model, MonitorConfig())
                monitor.update(found.event)
            return ReplayResult(source=str(path), records=len(decoded[name]))

        rows: list[tuple[str, str, Callable[[Path], ReplayResult]]] = [
            ("1 model", "per record (before)",
             lambda p: per_record_replay(str(p), fmt, config_for, max_models)),
            ("1 model", "chunks + fast decode, 1 process", current),
            ("1 model", "ceiling: monitor updates alone", monitors_alone),
            ("4 models", "per record (before)",
             lambda p: per_record_replay(str(p), fmt, config_for, max_models)),
            ("4 models", "chunks + fast decode, 1 process", current),
        ]
        if available() and jobs > 1:
            rows.append(("4 models", f"chunks + fast decode, {jobs} processes", parallel))
        rates: dict[int, list[float]] = {i: [] for i in range(len(rows))}
        cpu_rates: dict[int, list[float]] = {i: [] for i in range(len(rows))}
        results: dict[int, str] = {}
        for _ in range(repeats):  # interleaved, so every row sees the same machine load
            for i, (name, _, replay) in enumerate(rows):
                start, cpu = time.perf_counter(), time.process_time()
                result = replay(files[name])
                rates[i].append(result.records / (time.perf_counter() - start))
                cpu_rates[i].append(result.records / (time.process_time() - cpu))
                results[i] = comparable(result)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"`driftwatch replay` of seeded JSON Lines files, {records:,} records, default "
          f"settings (d = 1000; AUC and the two per-class error rates watched on blocks); "
          f"JSON parser of the fast path: {json_library()}; median of {repeats} interleaved "
          f"repeats; load average at the end {load:.1f} on {cpus} CPUs. Every row's result "
          "is checked against the per-record path's.\n")
    print("| file | path | records/s (wall) | records per CPU-second | ratio to per record, "
          "CPU | ratio, wall | same result |")
    print("|---|---|---|---|---|---|---|")
    base: dict[str, tuple[float, float]] = {}
    for i, (name, label, _) in enumerate(rows):
        rate = statistics.median(rates[i])
        cpu_rate = statistics.median(cpu_rates[i])
        base.setdefault(name, (rate, cpu_rate))
        reference = next(j for j, row in enumerate(rows) if row[0] == name)
        same = "yes" if results[i] == results[reference] else "**NO**"
        if label.startswith("ceiling"):
            same = "(not a replay)"
        processes = "processes" in label  # their CPU time is the children's, not counted here
        cpu = "-" if processes else f"{cpu_rate:,.0f}"
        cpu_ratio = "-" if processes else f"{cpu_rate / base[name][1]:.2f}×"
        print(f"| {name} | {label} | {rate:,.0f} | {cpu} | {cpu_ratio} | "
              f"{rate / base[name][0]:.2f}× | {same} |")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    main(quick=parser.parse_args().quick)
