"""The agent on a secured Apache Kafka: TLS, SASL/PLAIN and ACLs, with the agent's own settings.

One broker for the module (:class:`~tests.integration.secured.SecuredKafka`): SASL_PLAINTEXT,
SSL with client certificates, SASL_SSL, the StandardAuthorizer, no topic created on first
use. Each test runs ``driftwatch run`` as a real process with settings a user writes
(``kafka.security_protocol``, ``kafka.sasl_*``, ``kafka.ssl_*``):

- the agent runs on each listener; a principal granted exactly the ACLs docs/kafka-security.md
  lists consumes, dead-letters, publishes alarms, saves to and restores from the state topic;
- leaving out any one of those ACLs stops the agent at once with exit 2 and one line naming
  the missing grant (or, for the group's READ past its DESCRIBE, at the join);
- refused credentials, a SASL mechanism the broker does not offer, each TLS mismatch, and a
  session timeout below the broker's minimum stop it with exit 2 and one line naming the
  setting, after one attempt (the broker's log shows one failed login, not a storm);
- a consumed topic that does not exist is waited for, named on ``/readyz``, and picked up
  once created.
"""

from __future__ import annotations

import re
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kafka import KafkaConsumer
from kafka.admin import ConfigResource, ConfigResourceType

from driftwatch.exits import EXIT_INVALID, EXIT_OK
from driftwatch.simulate import generate
from tests.apache_kafka import ApacheKafkaUnavailable
from tests.broker import free_port
from tests.conftest import require_tool, tool_missing
from tests.integration.helpers import (
    JOIN_S,
    AgentProcess,
    agent_settings,
    consume,
    event_json,
    http_get,
    produce,
    wait_for,
)
from tests.integration.secured import (
    TLS_PRINCIPAL,
    SecuredKafka,
    acl,
    agent_acls,
    settings_for,
)

EXIT_S = 60.0
"""Bound on a refused agent's exit (it exits right after its first round of first contact:
milliseconds after its start on an idle machine; the rest is Python's start-up under load)."""

MISSING = [("READ", "TOPIC", "input"), ("READ", "GROUP", "group"), ("READ", "TOPIC", "state"),
           ("WRITE", "TOPIC", "state"), ("CREATE", "TOPIC", "state"),
           ("WRITE", "TOPIC", "dead"), ("WRITE", "TOPIC", "alarms")]
"""Each ACL of the documented list, by role: the cases of the missing-ACL test."""

USERS = ("driftwatch", "tls-checker", "describer", "waiter", "wrong-password", "revoked",
         *(f"lacks-{operation.lower()}-{role}" for operation, _, role in MISSING))


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SecuredKafka]:
    require_tool("openssl", "the tests' certificates: apt-get install -y openssl")
    require_tool("java", "Apache Kafka 4 needs Java 17+: apt-get install -y default-jdk-headless")
    require_tool("mvn", "Apache Kafka's jars come from Maven Central: apt-get install -y maven")
    kafka = SecuredKafka(tmp_path_factory.mktemp("secured"), USERS)
    try:
        kafka.start()
    except ApacheKafkaUnavailable as exc:
        kafka.close()
        tool_missing("apache-kafka", str(exc))
    yield kafka
    kafka.close()


def agent(tmp_path: Path, name: str, kafka: dict[str, Any], **sections: Any) -> AgentProcess:
    settings = agent_settings(kafka["bootstrap_servers"][0], port=free_port(),
                              group=kafka.get("group_id", f"group-{name}"),
                              checkpoint_dir=tmp_path / f"{name}-state",
                              overrides=settings_for(kafka, **sections))
    return AgentProcess(settings, tmp_path, name)


def refused(process: AgentProcess) -> str:
    """The agent's last line, once it exited 2 (a refusal), with no traceback."""
    code = process.launch().wait_exit(EXIT_S)
    output = process.output()
    assert code == EXIT_INVALID, output
    assert "Traceback" not in output
    last = output.rstrip().splitlines()[-1]
    assert last.startswith("driftwatch: "), output
    return last.removeprefix("driftwatch: ")


def names(case: str) -> dict[str, str]:
    """Topic and group names of one test case (each case its own, so cases never meet)."""
    return {"topic": f"{case}-events", "group": f"{case}-group", "state": f"{case}-group-state",
            "dead": f"{case}-rejected", "alarms": f"{case}-alarms"}


def test_exactly_the_documented_acls_run_the_agent(secured: SecuredKafka,
                                                   tmp_path: Path) -> None:
    """User:driftwatch, granted the list of docs/kafka-security.md and nothing more, runs
    the agent on SASL_PLAINTEXT: it creates its state topic, consumes, sends a rejected record
    to the dead-letter topic and its alarms to the alarms topic, saves; restarted, it restores
    from the state topic and reads nothing twice."""
    n = names("exact")
    secured.create_topics(n["topic"], n["dead"], n["alarms"])
    secured.grant(agent_acls("User:driftwatch", topics=[n["topic"]], group=n["group"],
                             state_topic=n["state"], dead_letter_topic=n["dead"],
                             alarms_topic=n["alarms"]))
    events = [event_json(e, "fraud") for e in generate("sudden_auc_drop", seed=5, length=4000)]
    produce(secured.plaintext, n["topic"], [*events, b"not json"])
    kafka = secured.kafka_settings("SASL_PLAINTEXT", "driftwatch") | {
        "topics": [n["topic"]], "group_id": n["group"], "dead_letter_topic": n["dead"],
        "alarms_topic": n["alarms"]}
    process = agent(tmp_path, "exact", kafka).start()
    metrics = process.wait_metrics(
        lambda m: m.get("driftwatch_events_processed_total", model="fraud") == len(events)
        and m.total("driftwatch_events_rejected_total") == 1, "every record")
    alarms = metrics.total("driftwatch_alarms_total")
    assert alarms >= 1, "the drift must raise an alarm, for the alarms topic to get one"
    assert [record.headers[0] for record in consume(secured.plaintext, n["dead"], 1)] == [
        ("reason", b"not_json")]
    assert len(consume(secured.plaintext, n["alarms"], int(alarms))) == alarms
    process.wait_metrics(lambda m: (m.get("driftwatch_checkpoint_saves_total") or 0) >= 1,
                         "a save to the state topic")
    code, _ = process.stop(signal.SIGTERM)
    assert code == EXIT_OK, process.log()

    process.start()
    process.wait_ready(JOIN_S)
    restored = process.scrape()
    assert restored.get("driftwatch_events_processed_total", model="fraud") == len(events)
    assert restored.total("driftwatch_alarms_total") == alarms, "nothing read twice"
    code, _ = process.stop(signal.SIGTERM)
    assert code == EXIT_OK, process.log()
    assert not re.search(r"Authorization|denied|refuse", process.output()), process.log()
    assert state_topic_policy(secured, n["state"]) == "compact"


def state_topic_policy(secured: SecuredKafka, topic: str) -> str:
    """The topic's ``cleanup.policy`` as the broker describes it."""
    admin = secured.admin()
    try:
        described = admin.describe_configs(
            [ConfigResource(ConfigResourceType.TOPIC, topic, {"cleanup.policy": None})],
            config_filter="all")
    finally:
        admin.close()
    configs = next(iter(next(iter(described.values())).values()))
    entry = configs["cleanup.policy"]
    return str(entry["value"] if isinstance(entry, dict) else entry)


@pytest.mark.parametrize("protocol", ["SSL", "SASL_SSL"])
def test_the_agent_runs_on_each_tls_listener(secured: SecuredKafka, tmp_path: Path,
                                             protocol: str) -> None:
    """TLS with a client certificate (the principal is its subject), and SASL over TLS: the
    agent's ssl_* and sasl_* settings, as written in a settings file."""
    n = names(protocol.lower().replace("_", "-"))
    principal = f"User:{TLS_PRINCIPAL}" if protocol == "SSL" else "User:tls-checker"
    secured.create_topics(n["topic"])
    secured.grant(agent_acls(principal, topics=[n["topic"]], group=n["group"],
                             state_topic=n["state"]))
    events = [event_json(e, "m") for e in generate("stationary", seed=2, length=300)]
    produce(secured.plaintext, n["topic"], events)
    kafka = secured.kafka_settings(protocol, "tls-checker") | {"topics": [n["topic"]],
                                                               "group_id": n["group"]}
    process = agent(tmp_path, protocol, kafka).start()
    process.wait_metrics(lambda m: m.get("driftwatch_events_processed_total", model="m")
                         == len(events), "every event")
    code, _ = process.stop(signal.SIGTERM)
    assert code == EXIT_OK, process.log()


@pytest.mark.parametrize(("operation", "resource", "role"), MISSING,
                         ids=[f"{o}-{role}" for o, _, role in MISSING])
def test_each_missing_acl_is_named(secured: SecuredKafka, tmp_path: Path, operation: str,
                                   resource: str, role: str) -> None:
    user = f"lacks-{operation.lower()}-{role}"
    n = names(user)
    secured.create_topics(n["topic"], n["dead"], n["alarms"])
    which = {"input": n["topic"], "group": n["group"], "state": n["state"],
             "dead": n["dead"], "alarms": n["alarms"]}[role]
    secured.grant(agent_acls(f"User:{user}", topics=[n["topic"]], group=n["group"],
                             state_topic=n["state"], dead_letter_topic=n["dead"],
                             alarms_topic=n["alarms"], leave_out=(operation, resource, which)))
    kafka = secured.kafka_settings("SASL_PLAINTEXT", user) | {
        "topics": [n["topic"]], "group_id": n["group"], "dead_letter_topic": n["dead"],
        "alarms_topic": n["alarms"]}
    line = refused(agent(tmp_path, user, kafka))
    setting = {"input": "kafka.topics", "group": "kafka.group_id", "state": "checkpoint.topic",
               "dead": "kafka.dead_letter_topic", "alarms": "kafka.alarms_topic"}[role]
    if operation == "CREATE":
        assert line.startswith(f"the brokers refuse to create state topic {which} "
                               f"(checkpoint.topic): TopicAuthorizationFailedError: grant "
                               "CREATE on it (or on the cluster)"), line
    else:
        kind = "group" if resource == "GROUP" else "topic"
        assert line == (f"the brokers deny User:{user} what the agent needs: grant "
                        f"{operation} on {kind} {which} ({setting}) (the list: "
                        "docs/kafka-security.md)")


def test_a_group_that_may_be_described_but_not_read_is_refused_at_the_join(
        secured: SecuredKafka, tmp_path: Path) -> None:
    """DESCRIBE on the group passes first contact (it finds the coordinator); the join needs
    READ, and its refusal is not retried either."""
    n = names("describer")
    secured.create_topics(n["topic"])
    secured.grant([*agent_acls("User:describer", topics=[n["topic"]], group=None,
                               state_topic=n["state"]),
                   acl("User:describer", "DESCRIBE", "GROUP", n["group"])])
    kafka = secured.kafka_settings("SASL_PLAINTEXT", "describer") | {
        "topics": [n["topic"]], "group_id": n["group"]}
    assert refused(agent(tmp_path, "describer", kafka)) == (
        "GroupAuthorizationFailed while Kafka poll: grant READ on group describer-group "
        "(kafka.group_id) to the agent's principal")


def test_an_acl_removed_while_the_agent_runs_stops_it_naming_the_topic(
        secured: SecuredKafka, tmp_path: Path) -> None:
    """READ on the input topic revoked under a running agent: the next request about the
    topic (a fetch, the lag probe, or the commit after a save) is refused, and the agent
    stops with exit 2 naming the topic, rather than retrying for ever."""
    n = names("revoked")
    secured.create_topics(n["topic"])
    secured.grant(agent_acls("User:revoked", topics=[n["topic"]], group=n["group"],
                             state_topic=n["state"]))
    events = [event_json(e, "m") for e in generate("stationary", seed=6, length=400)]
    produce(secured.plaintext, n["topic"], events[:200])
    kafka = secured.kafka_settings("SASL_PLAINTEXT", "revoked") | {"topics": [n["topic"]],
                                                                   "group_id": n["group"]}
    process = agent(tmp_path, "revoked", kafka).start()
    process.wait_processed(200)
    secured.revoke("User:revoked", "READ", "TOPIC", n["topic"])
    produce(secured.plaintext, n["topic"], events[200:])
    code = process.wait_exit(EXIT_S)
    output = process.output()
    assert code == EXIT_INVALID, output
    last = output.rstrip().splitlines()[-1]
    assert re.fullmatch(  # whichever request about the topic comes first
        r"driftwatch: TopicAuthorizationFailed while Kafka (poll|probe|commit): grant the "
        rf"agent's principal its ACLs on topic {n['topic']} \(kafka\.topics\) \(the list: "
        r"docs/kafka-security\.md\)", last), last
    assert "Traceback" not in output


def test_a_session_timeout_the_brokers_refuse_is_named(secured: SecuredKafka,
                                                        tmp_path: Path) -> None:
    """Below the broker's group.min.session.timeout.ms (6 s by default, which this broker
    keeps) the join is refused; the agent used to retry it every second for ever."""
    n = names("driftwatch-short")
    secured.create_topics(n["topic"])
    secured.grant(agent_acls("User:driftwatch", topics=[n["topic"]], group=n["group"],
                             state_topic=n["state"]))
    kafka = secured.kafka_settings("SASL_PLAINTEXT", "driftwatch") | {
        "topics": [n["topic"]], "group_id": n["group"], "session_timeout_ms": 3000,
        "heartbeat_interval_ms": 1000}
    assert refused(agent(tmp_path, "short", kafka)) == (
        f"InvalidSessionTimeoutError while Kafka poll, joining group {n['group']}: "
        "kafka.session_timeout_ms is outside what the brokers accept (their "
        "group.min.session.timeout.ms and group.max.session.timeout.ms: 6000 and 1800000 by "
        "default)")


def test_refused_credentials_are_one_error_naming_the_setting_and_one_failed_login(
        secured: SecuredKafka, tmp_path: Path) -> None:
    before = secured.failed_logins()
    kafka = secured.kafka_settings("SASL_PLAINTEXT", "wrong-password") | {
        "sasl_plain_password": "not-the-password", "topics": ["any"]}
    line = refused(agent(tmp_path, "wrong-password", kafka))
    assert line == (
        f"the broker at {secured.address('SASL')} refused the SASL PLAIN credentials of user "
        "'wrong-password' (kafka.sasl_plain_username, kafka.sasl_plain_password): "
        "Authentication failed: Invalid username or password")
    assert "not-the-password" not in (tmp_path / "wrong-password.log").read_text()
    wait_for(lambda: secured.failed_logins() > before, 30, "the broker to log the login")
    assert secured.failed_logins() == before + 1, "one attempt, no retry storm"


def test_a_sasl_mechanism_the_broker_does_not_offer_is_named(secured: SecuredKafka,
                                                            tmp_path: Path) -> None:
    kafka = secured.kafka_settings("SASL_SSL", "driftwatch") | {
        "sasl_mechanism": "SCRAM-SHA-512", "topics": ["any"]}
    assert refused(agent(tmp_path, "scram", kafka)) == (
        f"the broker at {secured.address('SASL_SSL')} does not offer the SASL mechanism "
        "SCRAM-SHA-512 (kafka.sasl_mechanism); it offers: PLAIN")


TLS_CASES = {
    # case: (the settings' protocol, the listener they point at, keys left out, the line)
    "plaintext to the TLS listener": ("PLAINTEXT", "SSL", (), (
        "the listener at {address} speaks TLS, but kafka.security_protocol is PLAINTEXT: set "
        "it to SSL (or SASL_SSL), with kafka.ssl_cafile naming the CA of the brokers' "
        "certificates")),
    "TLS to the plaintext listener": ("SSL", "PLAINTEXT", (), (
        "the listener at {address} does not speak TLS (")),
    "a CA that did not sign the broker's certificate": ("SSL", "SSL", ("ssl_cafile",), (
        "the TLS certificate of the broker at {address} is not trusted (unable to get local "
        "issuer certificate) with kafka.ssl_cafile ({other}): kafka.ssl_cafile must name the "
        "CA that signed it")),
    "no client certificate where one is required": (
        "SSL", "SSL", ("ssl_certfile", "ssl_keyfile"), (
            "the TLS handshake with {address} failed (")),
    "plaintext to the SASL listener": ("PLAINTEXT", "SASL", (), (
        "the listener at {address} closed the connection at the first request after "
        "ApiVersions: it requires SASL authentication, but kafka.security_protocol is "
        "PLAINTEXT: use SASL_PLAINTEXT or SASL_SSL, with kafka.sasl_mechanism and its "
        "credentials")),
}


@pytest.mark.parametrize("case", list(TLS_CASES))
def test_each_tls_mismatch_is_one_error_naming_the_setting(secured: SecuredKafka,
                                                          tmp_path: Path, case: str) -> None:
    protocol, listener, left_out, expected = TLS_CASES[case]
    kafka = secured.kafka_settings(protocol) | {
        "bootstrap_servers": [secured.address(listener)], "topics": ["any"]}
    other = str(secured.certificates.other_ca)
    for key in left_out:
        del kafka[key]
    if "ssl_cafile" in left_out:  # replaced by a CA that signed nothing here
        kafka["ssl_cafile"] = other
    line = refused(agent(tmp_path, "tls", kafka))
    assert line.startswith(expected.format(address=secured.address(listener), other=other)), \
        line
    if "ssl_certfile" in left_out:
        assert "kafka.ssl_certfile / kafka.ssl_keyfile" in line, line


def test_a_topic_that_does_not_exist_is_named_waited_for_and_read_once_created(
        secured: SecuredKafka, tmp_path: Path) -> None:
    n = names("waiter")
    secured.grant(agent_acls("User:waiter", topics=[n["topic"]], group=n["group"],
                             state_topic=n["state"]))
    kafka = secured.kafka_settings("SASL_PLAINTEXT", "waiter") | {"topics": [n["topic"]],
                                                                  "group_id": n["group"]}
    process = agent(tmp_path, "waiter", kafka).start()
    expected = (f"topic {n['topic']} (kafka.topics) does not exist on the brokers; waiting "
                "for it to be created (the agent does not create the topics it reads)")
    wait_for(lambda: f"ERROR driftwatch.kafka.offsets: {expected}" in process.output(), JOIN_S,
             "the line naming the missing topic", diagnostics=process.log)
    wait_for(lambda: http_get(f"{process.url}/readyz") == (
        503, f"not ready: kafka: {expected}".encode()), 10.0, "/readyz to name the topic",
        diagnostics=process.log)  # the snapshot it answers from is refreshed every second
    assert not topic_exists(secured, n["topic"]), "the agent created the topic it reads"

    secured.create_topics(n["topic"])
    events = [event_json(e, "m") for e in generate("stationary", seed=3, length=200)]
    produce(secured.plaintext, n["topic"], events)
    process.wait_metrics(lambda m: m.get("driftwatch_events_processed_total", model="m")
                         == len(events), "the events of the topic created later")
    process.wait_ready(JOIN_S)
    code, _ = process.stop(signal.SIGTERM)
    assert code == EXIT_OK, process.log()
    assert process.output().count(expected) == 1, "one line, not one per probe"


def topic_exists(secured: SecuredKafka, topic: str) -> bool:
    consumer = KafkaConsumer(bootstrap_servers=secured.plaintext)
    try:
        return topic in consumer.topics()
    finally:
        consumer.close()
