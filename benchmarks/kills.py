"""SIGKILL ``driftwatch run`` 20 times (or more) with the default checkpoint settings.

The long version of tests/integration/test_kills.py, with the harness of
tests/integration/crashes.py: a real broker (Tansu, Apache Kafka, or each in turn:
``--broker``), a three-model stream (a sudden and a
gradual AUC drop, a stationary model, a few invalid records) produced slowly, the agent as a
process killed at random moments of three kinds (right after it processed unsaved records,
inside a save, anywhere), then a last run to the end of the stream. Printed: the kills by
kind, how many landed before the run's first save and how many inside a save (confirmed by
the save's temporary file outliving the process), the events lost and counted twice (both
must be 0), and whether the final checkpoint and every monitor-state metric equal the pure
monitors fed the same records once.

``python -m benchmarks kills [--broker tansu|apache|both]`` (20 kills per broker, about 5
minutes each, mostly waiting; ``--quick``: 6 kills);
``python -m benchmarks.kills --kills 50 --broker apache`` for more.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from benchmarks.brokers import BROKER_CHOICES, broker_kinds, broker_label, open_broker
from driftwatch.settings import Settings
from tests.broker import free_port
from tests.integration.crashes import (
    KINDS,
    MONITORING,
    KillRun,
    assert_equal_to_reference,
    reference,
)


def run(kills: int, seed: int = 41, verbose: bool = False, kind: str = "tansu") -> str:
    """One kill run on a broker of ``kind``; returns its table row."""
    started = time.monotonic()
    per_model = 400 * kills
    with tempfile.TemporaryDirectory() as directory, open_broker(kind) as broker, \
            KillRun(broker.bootstrap, Path(directory), free_port(), seed=seed,
                    per_model=per_model, produce_seconds=14.0 * kills,
                    log=print if verbose else lambda line: None) as killed:
        killed.start_producing()
        for index in range(kills):
            killed.kill_once(KINDS[index % len(KINDS)])
        metrics, payload = killed.finish()
        expected = reference(killed.values, Settings(monitoring=MONITORING))
        try:
            assert_equal_to_reference(metrics, payload, expected, killed.topic,
                                      len(killed.values))
            equal = "yes"
        except AssertionError as error:
            equal = f"NO: {str(error)[:300]}"
    report = killed.report
    by_kind = " / ".join(str(report.count(lambda k, each=each: k.kind == each))
                         for each in KINDS)
    return (f"| {broker_label(kind)} | {len(report.kills)} | {by_kind} "
            f"| {report.count(lambda k: k.before_first_save)} "
            f"| {report.count(lambda k: k.mid_save)} | {report.expected} | {report.lost} "
            f"| {report.double_counted} | {equal} | {(time.monotonic() - started) / 60:.1f} |")


def table(kills: int, seed: int, verbose: bool, broker: str) -> None:
    print("| broker | kills | early / in a save / random | before the run's first save "
          "| inside a save (confirmed) | events | lost | counted twice "
          "| final state = reference | minutes |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for kind in broker_kinds(broker):
        print(run(kills, seed, verbose, kind), flush=True)


def main(quick: bool = False, broker: str = "both") -> None:
    table(6 if quick else 20, 41, False, broker)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(prog="python -m benchmarks.kills", description=__doc__)
    parser.add_argument("--kills", type=int, default=20)
    parser.add_argument("--seed", type=int, default=41)
    parser.add_argument("--verbose", action="store_true", help="print each kill")
    parser.add_argument("--broker", choices=BROKER_CHOICES, default="both")
    args = parser.parse_args()
    table(args.kills, args.seed, args.verbose, args.broker)
