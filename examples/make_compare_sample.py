"""Write examples/champion-challenger.jsonl: two models scored on the same events, for `compare`.

Each record carries the label and both models' scores, as a shadow deployment logs them: the
champion's in ``score`` (the settings' default score field) and the challenger's in
``challenger_score``. Both follow the binormal model (a positive's latent score is shifted by
μ, a negative's is not, unit variance; AUC = Φ(μ/√2)) with 30 % positives: the champion at
AUC 0.80 (μ = 1.19), the challenger at AUC 0.83 (μ = 1.35). Their noise is correlated
(ρ = 0.6), as two models trained on the same features are, which is what makes the paired
tests (DeLong, McNemar, per-block Wilcoxon) more sensitive than comparing two separate AUCs.
Scores are the latent values through a logistic, so the default threshold 0.5 makes sense;
rounded to 4 decimals. 8 000 events, one every 10 seconds from 2024-06-01T00:00:00Z.
Same seed, same file, byte for byte.

Regenerate the sample and the figure of docs/compare.md (from the repository root):

    python examples/make_compare_sample.py
    driftwatch compare examples/champion-challenger.jsonl \\
        --challenger-score challenger_score --plot examples/compare.png
"""

from __future__ import annotations

import argparse
import json
import math
import random
from collections.abc import Iterator
from pathlib import Path

SEED = 14
LENGTH = 8_000
POSITIVE_SHARE = 0.3
CHAMPION_SHIFT, CHALLENGER_SHIFT = 1.19, 1.35  # AUC Φ(μ/√2): 0.80 and 0.83
CORRELATION = 0.6
START_TS = 1_717_200_000  # 2024-06-01T00:00:00Z
SECONDS_PER_EVENT = 10

DEFAULT_OUT = Path(__file__).with_name("champion-challenger.jsonl")


def _probability(latent: float) -> float:
    return round(1.0 / (1.0 + math.exp(-1.6 * (latent - 0.9))), 4)


def sample_lines(seed: int = SEED) -> Iterator[str]:
    """The sample's lines (without newlines)."""
    rng = random.Random(seed)
    other = math.sqrt(1.0 - CORRELATION**2)
    for t in range(LENGTH):
        label = int(rng.random() < POSITIVE_SHARE)
        shared, own = rng.gauss(0.0, 1.0), rng.gauss(0.0, 1.0)
        champion = CHAMPION_SHIFT * label + shared
        challenger = CHALLENGER_SHIFT * label + CORRELATION * shared + other * own
        record = {
            "label": label,
            "score": _probability(champion),
            "challenger_score": _probability(challenger),
            "ts": START_TS + SECONDS_PER_EVENT * t,
        }
        yield json.dumps(record)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT,
                        help=f"where to write (default: {DEFAULT_OUT.name} next to this script)")
    parser.add_argument("--seed", type=int, default=SEED, help=f"seed (default {SEED})")
    args = parser.parse_args()
    with args.out.open("w", encoding="utf-8", newline="\n") as out:
        for line in sample_lines(args.seed):
            out.write(line + "\n")
    print(f"wrote {LENGTH:,} events to {args.out}")


if __name__ == "__main__":
    main()
