"""What the estimate costs the agent: records per CPU-second with estimation on and off.

The agent's loop without Kafka (:meth:`~driftwatch.agent.Agent.process_batch` on in-memory
records of one model, batches of 500, checkpoints off), publishing its snapshot as its loop
does (about once a second: the estimate is read there, O(d log d), never per event), with
the default monitors at d = 1000, 100 predictions per second of record time (so check blocks,
like the labelled blocks, close on their 30 s rather than on 20 expected events of each
class). Two layouts of the same calibrated stream: whole events
(each record a label and a score: every event enters the estimate and checks it) and
predictions and labels as separate records joined by the agent (``join.kind_field``;
predictions enter the estimate when read, labels check it when they join, each 200
predictions later). Off and on alternate; each is the median of the repeats (and on / off
the median of each repeat's ratio, which cancels the load that changes between repeats); the
target (issue 24) is on within 25 % of off.
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import os
import random
import statistics
import time
from typing import Any

from driftwatch.agent import Agent
from driftwatch.kafka.source import Record
from driftwatch.settings import Settings

TOPIC = "bench-events"
LAG = 200  # a label arrives 200 predictions after its prediction (joined layout)
RATE = 100.0  # predictions per second of record time


def values(count: int, joined: bool) -> list[bytes]:
    """Calibrated scores p = σ(−1.4 + 1.5·x), x ~ N(0, 1), labels ~ Bernoulli(p)."""
    rng = random.Random(24)
    events = []
    for i in range(count):
        p = 1.0 / (1.0 + math.exp(-(-1.4 + 1.5 * rng.gauss(0.0, 1.0))))
        events.append((i, int(rng.random() < p), p))
    if not joined:
        return [json.dumps({"model": "bench", "label": y, "score": p,
                            "ts": 1.7e9 + i / RATE}).encode() for i, y, p in events]
    out = []
    for i, _, p in events:
        out.append(json.dumps({"kind": "prediction", "event_id": i, "model": "bench",
                               "score": p, "ts": 1.7e9 + i / RATE}).encode())
        if i >= LAG:
            j, y, _ = events[i - LAG]
            out.append(json.dumps({"kind": "label", "event_id": j, "label": y,
                                   "ts": 1.7e9 + i / RATE}).encode())
    return out


def cpu_per_record(records: list[Record], estimation: bool, joined: bool) -> float:
    """CPU seconds per record of the agent's loop over ``records``."""
    settings: dict[str, Any] = {"checkpoint": {"enabled": False}, "logging": {"level": "ERROR"}}
    if estimation:
        settings["monitoring"] = {"defaults": {"estimation": {"enabled": True}}}
    if joined:
        settings["join"] = {"enabled": True, "kind_field": "kind",
                            "score_drift": {"enabled": False}}
    agent = Agent(Settings.model_validate(settings))
    start = time.process_time()
    for first in range(0, len(records), 500):
        agent.process_batch(records[first:first + 500])
        agent._publish_snapshot()  # what the loop does after each batch
    return (time.process_time() - start) / len(records)


def main(quick: bool = False) -> None:
    logging.getLogger("driftwatch").setLevel(logging.ERROR)
    count = 30_000 if quick else 100_000
    repeats = 3 if quick else 5
    print(f"{count:,} predictions of one model, d = 1000, default monitors, medians of "
          f"{repeats} alternating runs; load average {os.getloadavg()[0]:.1f} on "
          f"{os.cpu_count()} CPUs.\n")
    print("| layout | records | off: records per CPU-second | on: records per CPU-second | "
          "on / off |")
    print("|---|---:|---:|---:|---:|")
    for joined in (False, True):
        encoded = values(count, joined)
        records = [Record(TOPIC, 0, offset, None, value, 0)
                   for offset, value in enumerate(encoded)]
        runs: dict[bool, list[float]] = {False: [], True: []}
        for _ in range(repeats):
            for estimation in (False, True):
                runs[estimation].append(cpu_per_record(records, estimation, joined))
        off, on = 1.0 / statistics.median(runs[False]), 1.0 / statistics.median(runs[True])
        ratio = statistics.median(a / b for a, b in zip(runs[False], runs[True], strict=True))
        layout = "predictions and labels apart (join)" if joined else "whole events"
        print(f"| {layout} | {len(records):,} | {off:,.0f} | {on:,.0f} | {ratio:.2f} |")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    main(quick=parser.parse_args().quick)
