"""Replicas handing over through the state topic, killed again and again: nothing lost.

The long version of tests/integration/test_handover.py: two ``driftwatch run`` processes in
one group over a four-partition topic (eight models, two keyed to each partition) with the
default backend (the Kafka state topic); while the stream is produced, one agent at a time
is SIGKILLed at a random moment and restarted at once, so its partitions move to the other
agent after the session timeout and part of them come back when it rejoins. At the end the
union of the agents' ``/metrics`` must equal one uninterrupted agent's (the pure monitors
fed every record once). Printed: partitions and agents, kills, events, whether the union
equals the reference, minutes.

``python -m benchmarks handover [--broker tansu|apache|both]`` (12 kills per broker, a few
minutes each, mostly waiting for rebalances; ``--quick``: 3);
``python -m benchmarks.handover --kills 20 --broker apache`` for more, and
``--partitions 12 --agents 3`` for the twelve-partition, three-agent group.
"""

from __future__ import annotations

import argparse
import random
import signal
import tempfile
import threading
import time
from pathlib import Path

from benchmarks.brokers import BROKER_CHOICES, broker_kinds, broker_label, open_broker
from tests.broker import free_port
from tests.integration.helpers import AgentProcess, agent_settings, create_topics
from tests.integration.test_handover import (
    KAFKA,
    PARTITIONS,
    TOPIC,
    assert_union_is_reference,
    keyed_stream,
    produce,
)

SESSION = {"session_timeout_ms": 6000, "max_poll_interval_ms": 5000}

EVENTS_PER_KILL = 2000
"""Events produced per kill (over 12 s): about 10 % of them pass between two kills."""


def run(kills: int, seed: int = 7, kind: str = "tansu", partitions: int = PARTITIONS,
        replicas: int = 2) -> str:
    """One run on a broker of ``kind``: ``replicas`` agents over ``partitions`` partitions
    (two models per partition); returns its table row."""
    started = time.monotonic()
    rng = random.Random(seed)
    models = [f"model-{i}" for i in range(2 * partitions)]
    records = keyed_stream(seed, EVENTS_PER_KILL * kills // len(models),
                           partitions=partitions, models=models)
    names = [chr(ord("a") + i) for i in range(replicas)]
    with tempfile.TemporaryDirectory() as directory, open_broker(kind) as broker:
        create_topics(broker.bootstrap, TOPIC, partitions=partitions)
        agents = [AgentProcess(agent_settings(
            broker.bootstrap, port=free_port(), group="handover",
            checkpoint_dir=Path(directory) / name,
            overrides=KAFKA | {"kafka": {"topics": [TOPIC], "client_id": name, **SESSION}}),
            Path(directory), name) for name in names]
        for agent in agents:
            agent.start().wait_ready()
        producing = threading.Thread(target=produce,
                                     args=(broker.bootstrap, records, 12.0 * kills))
        producing.start()
        done = 0
        try:
            for _ in range(kills):
                time.sleep(rng.uniform(4.0, 14.0))
                victim = rng.choice(agents)
                victim.wait_ready(60.0)  # Tansu may keep a group stuck if a join is killed
                victim.stop(signal.SIGKILL)
                done += 1
                victim.start()
            producing.join(timeout=600)
            try:
                assert_union_is_reference(agents, records)
                equal = "yes"
            except AssertionError as error:
                equal = f"NO: {str(error)[:300]}"
        except BaseException:  # the agents' side of the story, before their directory goes
            for agent in agents:
                print(agent.log(20_000), flush=True)
            raise
        finally:
            for agent in agents:
                if agent.running:
                    agent.stop()
                agent.kill()
    events = sum(1 for _, value in records if b'"high"' not in value)
    return (f"| {broker_label(kind)} | {partitions} / {replicas} | {done} | {events} "
            f"| {equal} | {(time.monotonic() - started) / 60:.1f} |")


def table(kills: int, seed: int, broker: str, partitions: int = PARTITIONS,
          replicas: int = 2) -> None:
    print("| broker | partitions / agents | SIGKILLs (one agent at a time) | events "
          "| union of /metrics = one uninterrupted agent | minutes |")
    print("|---|---|---|---|---|---|")
    for kind in broker_kinds(broker):
        print(run(kills, seed, kind, partitions, replicas), flush=True)


def main(quick: bool = False, broker: str = "both") -> None:
    table(3 if quick else 12, 7, broker)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(prog="python -m benchmarks.handover", description=__doc__)
    parser.add_argument("--kills", type=int, default=12)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--broker", choices=BROKER_CHOICES, default="both")
    parser.add_argument("--partitions", type=int, default=PARTITIONS)
    parser.add_argument("--agents", type=int, default=2)
    args = parser.parse_args()
    table(args.kills, args.seed, args.broker, args.partitions, args.agents)
