"""Replicas that hand over through the state topic (checkpoint.backend kafka), on a real broker.

Real ``driftwatch run`` processes in one consumer group over a four-partition topic; eight
models, each keyed to one partition (as a producer keying by model gets). The promise: the
union of the agents' final ``/metrics`` (each model on exactly one agent; rejection counts
summed) equals what one agent that never stopped shows, the pure monitors fed every record
once. Checked after a restart with an empty disk, after a SIGKILL of one of two agents,
across a scale from one agent to three and back to one, (Apache Kafka) with twelve
partitions shared by three agents, one of them killed and back, and with static members
(``kafka.group_instance_id``): a killed one back without a rebalance, and (Apache Kafka)
a replaced one that stops.

The longer versions: ``benchmarks/handover.py`` (a dozen kills, also with twelve partitions
and three agents) and ``benchmarks/state_topic.py`` (more data).
"""

from __future__ import annotations

import re
import signal
import threading
import time
from collections.abc import Sequence
from pathlib import Path

import pytest
from kafka import KafkaProducer
from kafka.admin import KafkaAdminClient

from driftwatch.exits import EXIT_INVALID
from driftwatch.settings import Settings
from driftwatch.simulate import generate
from tests.broker import Broker
from tests.integration.crashes import reference
from tests.integration.helpers import (
    JOIN_S,
    AgentProcess,
    Labels,
    Metrics,
    StartAgent,
    create_topics,
    event_json,
    sigkill_mid_stream,
    wait_for,
)

TOPIC = "events"
PARTITIONS = 4
MODELS = [f"model-{i}" for i in range(8)]
MONITORING = {"defaults": {"window_size": 300, "sample_every": 10}}
KAFKA = {"kafka": {"topics": [TOPIC]}, "monitoring": MONITORING,
         "checkpoint": {"backend": "kafka", "interval_seconds": 1}}
COOPERATIVE = {**KAFKA, "kafka": {**KAFKA["kafka"], "assignment_strategy": "cooperative-sticky"}}
BAD = b'{"model": "model-0", "label": 1, "score": "high"}'

Keyed = list[tuple[int, bytes]]


def keyed_stream(seed: int, per_model: int, *, partitions: int = PARTITIONS,
                 models: Sequence[str] = MODELS) -> Keyed:
    """``(partition, value)``: model ``i``'s events on partition ``i % partitions``,
    interleaved, with an invalid record now and then (rejections are state too)."""
    parts = [[event_json(e, model) for e in generate(
        "sudden_auc_drop" if i % 2 else "stationary", seed=seed + i, length=per_model)]
        for i, model in enumerate(models)]
    records: Keyed = []
    for j in range(per_model):
        for i in range(len(models)):
            records.append((i % partitions, parts[i][j]))
        if j % 97 == 96:
            records.append((j % partitions, BAD))
    return records


def produce(bootstrap: str, records: Keyed, seconds: float = 0.0) -> None:
    """Send ``records`` to their partitions, spread over about ``seconds``; wait for acks."""
    producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=5)
    try:
        pause = seconds / max(len(records) // 50, 1)
        for n, (partition, value) in enumerate(records):
            producer.send(TOPIC, value=value, partition=partition)
            if pause and n % 50 == 49:
                time.sleep(pause)
        producer.flush(timeout=30)
    finally:
        producer.close(timeout=5)


def values(records: Keyed) -> list[bytes]:
    """The values in an order the reference can use: per partition, as each partition's
    records are read (models never share a partition, so per model the order is kept)."""
    return [value for _, value in records]


def union(scrapes: Sequence[Metrics]) -> dict[tuple[str, Labels], float]:
    """The monitor-state samples of all agents: a model's series on one agent only;
    rejection counters summed over agents."""
    merged: dict[tuple[str, Labels], float] = {}
    for metrics in scrapes:
        for key, value in metrics.state().items():
            if key[0] == "driftwatch_events_rejected_total":
                merged[key] = merged.get(key, 0.0) + value
            else:
                assert key not in merged, f"{key} exported by two agents (a frozen series?)"
                merged[key] = value
    return merged


def assert_union_is_reference(agents: Sequence[AgentProcess], records: Keyed) -> None:
    expected = reference(values(records), Settings(monitoring=MONITORING)).state
    total = sum(1 for _, value in records if value != BAD)

    def settled() -> list[Metrics] | None:
        scrapes = [agent.scrape() for agent in agents]
        processed = sum(m.total("driftwatch_events_processed_total") for m in scrapes)
        return scrapes if processed == total else None

    scrapes = wait_for(settled, JOIN_S * 2, f"{total} events over {len(agents)} agent(s)",
                       interval_s=0.3,
                       diagnostics=lambda: "\n".join(agent.log(3000) for agent in agents))
    got = union(scrapes)
    assert got.keys() == expected.keys()
    different = {key: (got[key], value) for key, value in expected.items() if got[key] != value}
    assert not different, f"union of /metrics != one uninterrupted agent (got, want): {different}"


def test_a_restart_with_an_empty_disk_restores_from_the_state_topic(
    broker: Broker, start_agent: StartAgent, tmp_path: Path
) -> None:
    create_topics(broker.bootstrap, TOPIC, partitions=PARTITIONS)
    records = keyed_stream(41, 400)
    half = len(records) // 2
    agent = start_agent("first", KAFKA, group="restart")
    agent.wait_ready()
    produce(broker.bootstrap, records[:half])
    assert_union_is_reference([agent], records[:half])
    assert agent.stop()[0] == 0
    assert not (tmp_path / "first-state").exists(), "backend kafka writes nothing to disk"

    # latest: a partition the state topic did not cover would start at the end of the log,
    # so the first half can only come back from the state topic.
    later = {"kafka": {"topics": [TOPIC], "auto_offset_reset": "latest"}}
    again = start_agent("second", KAFKA | later, group="restart")
    again.wait_ready()
    assert_union_is_reference([again], records[:half])  # before any new record
    assert "restored 8 model(s) of 4 partition(s) from state topic restart-state" in \
        again.output()
    produce(broker.bootstrap, records[half:])
    assert_union_is_reference([again], records)
    metrics = again.scrape()
    assert metrics.get("driftwatch_state_split_models") == 0


def test_sigkill_one_of_two_agents_and_the_other_takes_over_exactly(
    broker: Broker, start_agent: StartAgent
) -> None:
    create_topics(broker.bootstrap, TOPIC, partitions=PARTITIONS)
    records = keyed_stream(42, 700)
    first, second = start_agent("a", KAFKA, group="kill"), start_agent("b", KAFKA, group="kill")
    for agent in (first, second):
        agent.wait_ready()
    # Kill mid-stream, once the victim has taken part of it (and saved some of it).
    sigkill_mid_stream(first, lambda: produce(broker.bootstrap, records, 12.0), processed=600,
                       what="agent a has events and a save")
    assert_union_is_reference([second], records)


def test_scale_one_to_three_and_back_to_one(
    broker: Broker, start_agent: StartAgent
) -> None:
    create_topics(broker.bootstrap, TOPIC, partitions=PARTITIONS)
    records = keyed_stream(43, 600)
    parts = [records[: len(records) // 3], records[len(records) // 3: 2 * len(records) // 3],
             records[2 * len(records) // 3:]]
    one = start_agent("one", KAFKA, group="scale")
    one.wait_ready()
    produce(broker.bootstrap, parts[0])
    assert_union_is_reference([one], parts[0])

    two, three = start_agent("two", KAFKA, group="scale"), start_agent("three", KAFKA,
                                                                          group="scale")
    agents = [one, two, three]
    wait_for(lambda: all(a.scrape().get("driftwatch_ready") == 1 and
                         a.scrape().total("driftwatch_events_processed_total") > 0
                         for a in agents), JOIN_S * 2, "three agents sharing the partitions",
             interval_s=0.3, diagnostics=lambda: "\n".join(a.log(3000) for a in agents))
    produce(broker.bootstrap, parts[1])
    assert_union_is_reference(agents, parts[0] + parts[1])

    for agent in (two, three):
        assert agent.stop()[0] == 0
    produce(broker.bootstrap, parts[2])
    assert_union_is_reference([one], records)


HOLDINGS = re.compile(r"partitions (assigned|revoked|lost)[^\n]*")


def holdings(agent: AgentProcess) -> list[tuple[str, frozenset[int]]]:
    """The agent's assignment changes, as its source logged them: ``(assigned|revoked|lost,
    partitions)``, in order."""
    return [(found.group(1), frozenset(int(p) for p in re.findall(r"partition=(\d+)",
                                                                  found.group(0))))
            for found in HOLDINGS.finditer(agent.output())]


def moves(agent: AgentProcess) -> list[tuple[str, frozenset[int]]]:
    """:func:`holdings` without the empty revokes of an eager assignor's every join."""
    return [change for change in holdings(agent) if change[1]]


def restores(agent: AgentProcess) -> list[int]:
    """The models of each restore from the state topic the agent completed, in order."""
    return [int(n) for n in re.findall(r"restored (\d+) model\(s\) of", agent.output())]


def test_cooperative_rebalances_move_only_the_partitions_that_change_owner(
    broker: Broker, start_agent: StartAgent
) -> None:
    """kafka.assignment_strategy cooperative-sticky: a second agent joins and leaves
    (SIGTERM), a third joins and is SIGKILLed mid-stream. The first agent's partitions that
    no other agent took are assigned to it once, never revoked and restored once, while
    every partition that moves is revoked and restored once per move; the union of the
    agents' /metrics equals one uninterrupted agent's at every step."""
    create_topics(broker.bootstrap, TOPIC, partitions=PARTITIONS)
    records = keyed_stream(45, 400)
    parts = [records[i * len(records) // 4: (i + 1) * len(records) // 4] for i in range(4)]
    first = start_agent("first", COOPERATIVE, group="coop")
    first.wait_ready()
    produce(broker.bootstrap, parts[0])
    assert_union_is_reference([first], parts[0])

    second = start_agent("second", COOPERATIVE, group="coop")
    second.wait_ready()  # partitions assigned: the first agent has given them up
    produce(broker.bootstrap, parts[1])
    assert_union_is_reference([first, second], parts[0] + parts[1])
    assert second.stop()[0] == 0
    produce(broker.bootstrap, parts[2])
    assert_union_is_reference([first], parts[0] + parts[1] + parts[2])

    third = start_agent("third", COOPERATIVE, group="coop")
    third.wait_ready()
    sigkill_mid_stream(third, lambda: produce(broker.bootstrap, parts[3], 8.0), processed=0,
                       what="agent third has events and a save")
    assert_union_is_reference([first], records)

    changes = holdings(first)
    everything = frozenset(range(PARTITIONS))
    assert changes[0] == ("assigned", everything), changes
    moved = [partitions for change, partitions in changes[1:]]
    assert [change for change, _ in changes[1:]] == ["revoked", "assigned"] * 2, changes
    assert moved[0] == moved[1] and moved[2] == moved[3], changes  # given up, taken back
    kept = everything - moved[0] - moved[2]
    assert kept and all(not partitions & kept for partitions in moved), \
        f"partitions no one else took moved all the same: {changes}"
    per_partition = len(MODELS) // PARTITIONS
    assert restores(first) == [0, per_partition * len(moved[1]), per_partition * len(moved[3])], \
        first.output()  # the first assignment found nothing saved; then only what moved
    # A commit refused while the group rebalances is no outage for an agent reading its kept
    # partitions meanwhile (Tansu's second round takes seconds): never unreachable.
    assert "Kafka broker reachable again" not in first.output(), first.output()


def assignment(bootstrap: str, group: str) -> dict[str, list[int]]:
    """``{client_id: partitions of TOPIC}`` of ``group`` as its coordinator reports it
    (DescribeGroups), or ``{}`` while the group is not stable (rebalancing)."""
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        described = admin.describe_groups([group])[group]
    finally:
        admin.close()
    if described["group_state"] != "Stable":
        return {}
    return {member["client_id"]: sorted(
        partition for assigned in member["member_assignment"]["assigned_partitions"]
        if assigned["topic"] == TOPIC for partition in assigned["partitions"])
        for member in described["members"]}


def wait_assignment(bootstrap: str, group: str, expected: dict[str, list[int]]) -> None:
    wait_for(lambda: assignment(bootstrap, group) == expected, JOIN_S, f"assignment {expected}",
             interval_s=0.5, diagnostics=lambda: f"now: {assignment(bootstrap, group)}")


@pytest.mark.brokers("apache", reason="issue 21: twelve partitions and three agents on the "
                     "broker users run (the two-agent handovers above run on both)")
def test_twelve_partitions_three_agents_a_kill_and_a_return_stay_exact(
    broker: Broker, start_agent: StartAgent
) -> None:
    """Three agents share twelve partitions (24 models, two per partition) four each, in the
    contiguous ranges of the range assignor the join's sharding relies on (eager: the
    strategy a join over two topics gets, pinned here); one is SIGKILLed
    mid-stream, the group gives its partitions to the other two after the session timeout,
    and its return takes them back. The union of their /metrics equals one uninterrupted
    agent's after the kill and at the end. The long version: ``python -m benchmarks.handover
    --partitions 12 --agents 3``."""
    create_topics(broker.bootstrap, TOPIC, partitions=12)
    models = [f"model-{i}" for i in range(24)]
    records = keyed_stream(44, 250, partitions=12, models=models)
    first, rest = records[: len(records) // 2], records[len(records) // 2:]
    agents = {name: start_agent(name, KAFKA | {"kafka": {"topics": [TOPIC], "client_id": name,
                                                         "assignment_strategy": "range"}},
                                group="twelve")
              for name in ("a", "b", "c")}
    for agent in agents.values():
        agent.wait_ready()
    everyone = {"a": [0, 1, 2, 3], "b": [4, 5, 6, 7], "c": [8, 9, 10, 11]}
    wait_assignment(broker.bootstrap, "twelve", everyone)

    producing = threading.Thread(target=produce, args=(broker.bootstrap, first, 8.0))
    producing.start()
    try:
        agents["b"].wait_metrics(lambda m: m.total("driftwatch_events_processed_total") > 300
                                 and (m.get("driftwatch_checkpoint_saves_total") or 0) >= 1,
                                 "agent b has events and a save")
        assert producing.is_alive(), "the kill must land mid-stream"
        agents["b"].stop(signal.SIGKILL)
    finally:
        producing.join(timeout=60)
    wait_assignment(broker.bootstrap, "twelve", {"a": list(range(6)), "c": list(range(6, 12))})
    assert_union_is_reference([agents["a"], agents["c"]], first)

    agents["b"].start().wait_ready()
    wait_assignment(broker.bootstrap, "twelve", everyone)
    produce(broker.bootstrap, rest)
    assert_union_is_reference(list(agents.values()), records)


def test_a_static_member_killed_and_started_again_takes_its_partitions_back_without_a_rebalance(
    broker: Broker, start_agent: StartAgent
) -> None:
    """``kafka.group_instance_id`` (static membership, KIP-345): agent b is SIGKILLed
    mid-stream and started again with the same id before its session times out, as
    Kubernetes restarts a killed container in its Pod. The group does not rebalance: agent a
    keeps its partitions (no revoke, no assignment after the kill), b's second life is given
    back exactly its own and restores their models from the state topic, and the union of the
    agents' /metrics equals one uninterrupted agent's. (The session timeout is raised so
    that a slow restart on a loaded machine stays inside it.)"""
    create_topics(broker.bootstrap, TOPIC, partitions=PARTITIONS)
    records = keyed_stream(46, 500)
    first, rest = records[: len(records) // 2], records[len(records) // 2:]
    agents = {name: start_agent(name, KAFKA | {"kafka": {
        "topics": [TOPIC], "client_id": name, "assignment_strategy": "range",
        "session_timeout_ms": 30_000, "heartbeat_interval_ms": 1_000,
        "group_instance_id": f"driftwatch-{name}"}}, group="static")
        for name in ("a", "b")}
    for agent in agents.values():
        agent.wait_ready()

    def held(agent: AgentProcess) -> frozenset[int]:
        changes = moves(agent)
        return changes[-1][1] if changes and changes[-1][0] == "assigned" else frozenset()

    # Not DescribeGroups: Tansu's answer breaks kafka-python's parsing of it.
    wait_for(lambda: len(held(agents["a"])) == len(held(agents["b"])) == 2, JOIN_S,
             "two partitions each", diagnostics=lambda: agents["a"].output() + agents["b"].output())
    own = {name: held(agent) for name, agent in agents.items()}
    settled = {name: len(moves(agent)) for name, agent in agents.items()}
    sigkill_mid_stream(agents["b"], lambda: produce(broker.bootstrap, first, 8.0),
                       processed=300, what="agent b has events and a save")
    agents["b"].start().wait_ready()
    produce(broker.bootstrap, rest)
    assert_union_is_reference(list(agents.values()), records)

    assert moves(agents["a"])[settled["a"]:] == [], agents["a"].output()
    assert moves(agents["b"])[settled["b"]:] == [("assigned", own["b"])], agents["b"].output()
    per_partition = len(MODELS) // PARTITIONS
    assert restores(agents["b"])[-1] == 2 * per_partition, agents["b"].output()


@pytest.mark.brokers("apache", reason="Tansu 0.6 does not fence a replaced static member: "
                     "it accepts the older one's commits (docs/brokers.md, differences)")
def test_two_agents_given_one_group_instance_id_the_replaced_one_stops_naming_the_setting(
    broker: Broker, start_agent: StartAgent
) -> None:
    """A second agent that joins with the ``kafka.group_instance_id`` of a running one takes
    its place (KIP-345: the broker fences the older member). The older one cannot read on:
    it exits 2, as for any setting the brokers refuse, naming the setting, while the newer
    one reads every partition."""
    create_topics(broker.bootstrap, TOPIC, partitions=PARTITIONS)
    same = KAFKA | {"kafka": {"topics": [TOPIC], "assignment_strategy": "range",
                              "group_instance_id": "driftwatch-0"}}
    older = start_agent("older", same, group="fenced")
    older.wait_ready()
    newer = start_agent("newer", same, group="fenced")
    newer.wait_ready()
    assert moves(newer)[-1] == ("assigned", frozenset(range(PARTITIONS))), newer.output()
    # kafka-python stops the older one's heartbeats but not its fetches: what tells it is the
    # first commit it tries, after the first save of records it read.
    records = keyed_stream(47, 100)
    produce(broker.bootstrap, records)
    code = older.wait_exit(JOIN_S)
    assert code == EXIT_INVALID, older.output()
    assert "FencedInstanceIdError" in older.output()
    assert "kafka.group_instance_id" in older.output()
    assert_union_is_reference([newer], records)
