"""Write examples/events-drift.jsonl: recorded events with a known drift, for `replay`.

The events come from driftwatch's seeded simulator (driftwatch.simulate): one model whose
scores follow the binormal model at AUC 0.9 with 30 % positives, and whose AUC drops
suddenly to 0.8 at event 10 000 (0-based: the 10 001st event is the first one drawn from the
worse model); 20 000 events, one per second from 2024-06-01T00:00:00Z. The class ratio never
changes, so every alarm before event 10 000 would be false and the drop is the one real
change. Same seed, same file, byte for byte, on any machine.

Regenerate the sample and the figure of docs/replay.md (from the repository root):

    python examples/make_sample.py
    driftwatch replay examples/events-drift.jsonl --config examples/sidecar.yaml \\
        --plot examples/replay.png

Each line is one Kafka record value as a producer would send it (see examples/producer.py):

    {"label": 0, "score": 0.2931, "ts": 1717200000}

Scores are rounded to 4 decimals to keep the file small (about 0.9 MB); ties that rounding
creates are counted half, as prequential AUC prescribes.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterator
from pathlib import Path

from driftwatch.simulate import generate

SEED = 2
LENGTH = 20_000
CHANGE_AT = 10_000
AUC, DROP, POSITIVE_SHARE = 0.9, 0.1, 0.3
START_TS = 1_717_200_000  # 2024-06-01T00:00:00Z
RATE = 1.0  # events per second of event time

DEFAULT_OUT = Path(__file__).with_name("events-drift.jsonl")


def sample_lines(seed: int = SEED) -> Iterator[str]:
    """The sample's lines (without newlines)."""
    stream = generate("sudden_auc_drop", seed=seed, length=LENGTH, change_at=CHANGE_AT,
                      auc=AUC, drop=DROP, positive_share=POSITIVE_SHARE, start_ts=START_TS,
                      rate=RATE)
    for event in stream:
        ts = event.ts if event.ts is not None else START_TS
        record = {"label": event.y_true, "score": round(event.y_score, 4),
                  "ts": int(ts) if ts == int(ts) else ts}
        yield json.dumps(record)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT,
                        help=f"where to write (default: {DEFAULT_OUT.name} next to this script)")
    parser.add_argument("--seed", type=int, default=SEED, help=f"simulator seed (default {SEED})")
    args = parser.parse_args()
    with args.out.open("w", encoding="utf-8", newline="\n") as out:
        for line in sample_lines(args.seed):
            out.write(line + "\n")
    print(f"wrote {LENGTH:,} events to {args.out}")


if __name__ == "__main__":
    main()
