"""A minimal producer of driftwatch events, in plain kafka-python.

This is what a model service (or the job that joins its scores with the true outcomes once
they are known) sends: one JSON object per labelled prediction. driftwatch needs only the
label and the score; the rest is optional.

    {"model": "credit-risk", "label": 1, "score": 0.8731, "prediction": 1,
     "ts": 1717200000.25}

- ``label``: the true class once known: 0/1 or true/false (or the strings set by
  ``events.positive_label`` / ``negative_label``).
- ``score``: the model's score, any finite number, higher meaning "more positive".
- ``prediction`` (optional): the model's crisp decision, 0/1; without it driftwatch uses
  ``score >= threshold`` (``monitoring.defaults.threshold``, 0.5).
- ``ts`` (optional): event time, seconds since the epoch or an ISO-8601 string.
- ``model`` (optional): which model scored it; the record key is set to it too, so a
  multi-model agent can use ``events.model_source: key`` and every model stays on one
  partition.

Run it against any broker (``driftwatch demo`` starts one) with an agent on the same topic:

    python examples/producer.py --bootstrap localhost:9092 --topic driftwatch-events

Scores are synthetic (a model of AUC about 0.9 with 30 % positives) so it runs anywhere.
Needs only kafka-python (``pip install kafka-python``).
"""

from __future__ import annotations

import argparse
import json
import math
import random
import time

from kafka import KafkaProducer


def scored_event(rng: random.Random, model: str) -> dict[str, object]:
    """One labelled prediction: a positive share of 30 %, scores σ(x) with x ~ N(±0.9, 1)."""
    label = 1 if rng.random() < 0.3 else 0
    score = 1.0 / (1.0 + math.exp(-rng.gauss(0.9 if label else -0.9, 1.0)))
    return {
        "model": model,
        "label": label,
        "score": round(score, 4),
        "prediction": int(score >= 0.5),
        "ts": round(time.time(), 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description="Send scored, labelled events to Kafka.")
    parser.add_argument("--bootstrap", default="localhost:9092", help="host:port[,host:port]")
    parser.add_argument("--topic", default="driftwatch-events")
    parser.add_argument("--model", default="credit-risk", help="model id (field and key)")
    parser.add_argument("--count", type=int, default=10_000, help="events to send")
    parser.add_argument("--rate", type=float, default=500.0, help="events per second")
    parser.add_argument("--seed", type=int, default=None, help="random seed (default: none)")
    args = parser.parse_args()

    producer = KafkaProducer(
        bootstrap_servers=args.bootstrap.split(","),
        linger_ms=20,  # batch a little: thousands of small events per second
    )
    rng = random.Random(args.seed)
    start = time.monotonic()
    try:
        for sent in range(args.count):
            event = scored_event(rng, args.model)
            producer.send(args.topic, key=args.model.encode(), value=json.dumps(event).encode())
            ahead = sent / args.rate - (time.monotonic() - start)
            if ahead > 0:
                time.sleep(ahead)  # keep to --rate
    finally:
        producer.flush()
        producer.close()
    print(f"sent {args.count:,} events to {args.topic} in {time.monotonic() - start:.1f} s")


if __name__ == "__main__":
    main()
