"""First contact explained: what each way of failing it means, in words naming the setting.

:func:`explain` is tested on plain handshake results (every outcome a handshake can have);
:class:`FirstContact` on real loopback addresses; :func:`refusal` on kafka-python's own
error classes. The same outcomes against Apache Kafka's TLS, SASL and ACLs are in
tests/integration/test_security.py.
"""

from __future__ import annotations

import time

import kafka.errors as kafka_errors
import pytest

from driftwatch.kafka.first_contact import (
    BrokerRefused,
    FirstContact,
    TopicUse,
    Verdict,
    explain,
    refusal,
)
from driftwatch.kafka.handshake import Handshake, TopicAccess
from tests.broker import Broker, free_port

EVERYTHING = frozenset({"READ", "WRITE", "CREATE", "DESCRIBE", "DESCRIBE_CONFIGS", "ALTER",
                        "ALTER_CONFIGS", "DELETE"})
USES = (
    TopicUse("events", "kafka.topics", frozenset({"READ"}), "input"),
    TopicUse("g-state", "checkpoint.topic", frozenset({"READ", "WRITE"}), "state"),
    TopicUse("rejected", "kafka.dead_letter_topic", frozenset({"WRITE"}), "output"),
)
SASL = {"security_protocol": "SASL_SSL", "sasl_mechanism": "PLAIN",
        "sasl_plain_username": "driftwatch", "sasl_plain_password": "secret",
        "ssl_cafile": "/etc/ca.pem"}


def verdict(*shakes: Handshake, config: dict[str, str] | None = None,
            group: str | None = "g") -> Verdict:
    return explain(shakes, config or {}, USES, group)


def done(**topics: TopicAccess) -> Handshake:
    return Handshake("b:9092", "done", topics=topics, group_authorized=True)


def test_no_address_answering_names_each_address_and_the_setting() -> None:
    result = verdict(Handshake("a:9092", "connect", "refused", "connection refused"),
                     Handshake("b:9092", "resolve", "unknown_host", "name or service not known"),
                     Handshake("c:9092", "connect", "timeout", "no answer within 5 s"),
                     Handshake("d:9092", "api_versions", "closed",
                               "the broker closed the connection"))
    assert result == Verdict(
        "unreachable",
        "cannot reach any broker of kafka.bootstrap_servers: a:9092 (connection refused), "
        "b:9092 (unknown host: name or service not known), c:9092 (no answer within 5 s), "
        "d:9092 (accepted the connection, then the broker closed the connection)")


@pytest.mark.parametrize(("shake", "config", "expected"), [
    (Handshake("b:9093", "tls", "untrusted", "unable to get local issuer certificate"), SASL,
     "the TLS certificate of the broker at b:9093 is not trusted (unable to get local issuer "
     "certificate) with kafka.ssl_cafile (/etc/ca.pem): kafka.ssl_cafile must name the CA "
     "that signed it"),
    (Handshake("b:9093", "tls", "untrusted", "Hostname mismatch, certificate is not valid for "
               "'b'."), {"security_protocol": "SSL"},
     "the TLS certificate of the broker at b:9093 is not trusted (Hostname mismatch, "
     "certificate is not valid for 'b'.) with the system's CA certificates (kafka.ssl_cafile "
     "is not set): kafka.ssl_cafile must name the CA that signed it; connect by a name its "
     "certificate lists, or set kafka.client_options.ssl_check_hostname: false"),
    (Handshake("b:9092", "tls", "not_tls", "unexpected eof while reading"),
     {"security_protocol": "SSL"},
     "the listener at b:9092 does not speak TLS (unexpected eof while reading), but "
     "kafka.security_protocol is SSL: use PLAINTEXT or SASL_PLAINTEXT for it, or the address "
     "of its TLS listener in kafka.bootstrap_servers"),
    (Handshake("b:9093", "tls", "tls", "tlsv13 alert certificate required"),
     {"security_protocol": "SSL"},
     "the TLS handshake with b:9093 failed (tlsv13 alert certificate required): check "
     "kafka.ssl_cafile, and kafka.ssl_certfile / kafka.ssl_keyfile when the broker requires a "
     "client certificate"),
    (Handshake("b:9093", "api_versions", "tls_listener", "a TLS record"), {},
     "the listener at b:9093 speaks TLS, but kafka.security_protocol is PLAINTEXT: set it to "
     "SSL (or SASL_SSL), with kafka.ssl_cafile naming the CA of the brokers' certificates"),
    (Handshake("b:9094", "sasl", "mechanism", "", mechanisms=("PLAIN",)),
     {**SASL, "sasl_mechanism": "SCRAM-SHA-512"},
     "the broker at b:9094 does not offer the SASL mechanism SCRAM-SHA-512 "
     "(kafka.sasl_mechanism); it offers: PLAIN"),
    (Handshake("b:9094", "sasl", "credentials",
               "Authentication failed: Invalid username or password"), SASL,
     "the broker at b:9094 refused the SASL PLAIN credentials of user 'driftwatch' "
     "(kafka.sasl_plain_username, kafka.sasl_plain_password): Authentication failed: Invalid "
     "username or password"),
    (Handshake("b:9094", "metadata", "closed", "the broker closed the connection"), {},
     "the listener at b:9094 closed the connection at the first request after ApiVersions: "
     "it requires SASL authentication, but kafka.security_protocol is PLAINTEXT: use "
     "SASL_PLAINTEXT or SASL_SSL, with kafka.sasl_mechanism and its credentials"),
    (Handshake("b:80", "api_versions", "not_kafka", 'it answered "HTTP/1.1 400"'), {},
     'b:80 is not a Kafka listener (it answered "HTTP/1.1 400"): check '
     "kafka.bootstrap_servers"),
])
def test_settings_the_broker_refuses_are_named(shake: Handshake, config: dict[str, str],
                                              expected: str) -> None:
    assert verdict(shake, config=config) == Verdict("refused", expected)


def test_the_password_is_never_quoted() -> None:
    refused = verdict(Handshake("b:9094", "sasl", "credentials", "Invalid"), config=SASL)
    assert "secret" not in refused.message


def test_a_refusal_wins_over_a_broker_that_is_down_or_one_that_answered() -> None:
    """The settings are the same for every address: one that refuses them proves them
    wrong, whatever the others did."""
    refused = Handshake("b:9094", "sasl", "credentials", "Invalid")
    down = Handshake("a:9094", "connect", "refused", "connection refused")
    assert verdict(down, refused, config=SASL).outcome == "refused"
    assert verdict(done(), refused, config=SASL).outcome == "refused"
    assert verdict(down, done()).outcome == "reached"


def test_every_missing_grant_is_listed_with_its_setting() -> None:
    result = verdict(
        Handshake("b:9094", "done", authenticated=True, group_authorized=False, topics={
            "events": TopicAccess(exists=None, authorized=False),
            "g-state": TopicAccess(exists=True, operations=frozenset({"READ", "DESCRIBE"})),
            "rejected": TopicAccess(exists=True, operations=frozenset({"WRITE", "DESCRIBE"})),
        }), config=SASL)
    assert result == Verdict(
        "refused", "the brokers deny User:driftwatch what the agent needs: grant READ on "
        "topic events (kafka.topics); WRITE on topic g-state (checkpoint.topic); READ on group "
        "g (kafka.group_id) (the list: docs/kafka-security.md)")


def test_a_broker_that_does_not_list_operations_is_not_second_guessed() -> None:
    """Tansu and brokers before 2.3 list no operations: nothing is refused up front (the
    first refused request will say)."""
    assert verdict(done(events=TopicAccess(exists=True), rejected=TopicAccess(exists=True)),
                   group=None) == Verdict("reached")


def test_a_missing_output_topic_is_one_warning() -> None:
    result = verdict(done(events=TopicAccess(exists=False, operations=EVERYTHING),
                          rejected=TopicAccess(exists=False, operations=EVERYTHING)))
    assert result.outcome == "reached"
    assert result.warnings == (
        "topic rejected (kafka.dead_letter_topic) does not exist: the agent does not create "
        "it, and what it writes there fails unless the brokers create topics on first use "
        "(auto.create.topics.enable)",)


def test_kafka_python_refusals_name_the_topic_or_group() -> None:
    topic = refusal(kafka_errors.TopicAuthorizationFailedError({"events"}), USES, "g",
                    "Kafka poll")
    assert isinstance(topic, BrokerRefused)
    assert str(topic) == ("TopicAuthorizationFailed while Kafka poll: grant the agent's "
                          "principal its ACLs on topic events (kafka.topics) (the list: "
                          "docs/kafka-security.md)")
    group = refusal(kafka_errors.GroupAuthorizationFailedError(), USES, "g", "Kafka commit")
    assert str(group) == ("GroupAuthorizationFailed while Kafka commit: grant READ on group g "
                          "(kafka.group_id) to the agent's principal")
    assert refusal(kafka_errors.KafkaTimeoutError(), USES, "g", "Kafka poll") is None
    assert refusal(kafka_errors.KafkaConnectionError(), USES, "g", "Kafka poll") is None


def test_first_contact_never_blocks_longer_than_asked_and_follows_up_once_reached(
        broker: Broker) -> None:
    seen: list[Handshake] = []
    contact = FirstContact([f"127.0.0.1:{free_port()}"], {}, timeout_s=2.0)
    result = None
    deadline = time.monotonic() + 30
    while result is None and time.monotonic() < deadline:
        result = contact.run(0.05)
    assert result is not None and result.outcome == "unreachable"
    assert contact.rounds == 1
    reached = FirstContact([broker.bootstrap], {}, uses=USES, group="g", then=seen.append)
    result = None
    while result is None and time.monotonic() < deadline:
        result = reached.run(0.05)
    assert result is not None and result.outcome == "reached"
    assert [w.split(" (")[0] for w in result.warnings] == ["topic rejected"]  # not created
    assert [shake.address for shake in seen] == [broker.bootstrap]


def test_a_refusal_raised_by_the_follow_up_is_the_verdict(broker: Broker) -> None:
    def refuse(_: Handshake) -> None:
        raise BrokerRefused("no CREATE")

    contact = FirstContact([broker.bootstrap], {}, then=refuse)
    result = None
    deadline = time.monotonic() + 30
    while result is None and time.monotonic() < deadline:
        result = contact.run(0.05)
    assert result == Verdict("refused", "no CREATE")


def test_step_retries_with_backoff_logs_once_and_ends_when_the_brokers_answer(
        broker: Broker, caplog: pytest.LogCaptureFixture) -> None:
    """No broker: one error line, the next round only after the backoff (1 s, then 2 s),
    the same reason not logged again; the brokers answering end first contact."""
    now = [0.0]
    down = f"127.0.0.1:{free_port()}"
    contact = FirstContact([down], {}, backoff_initial_s=1.0, backoff_max_s=8.0,
                           clock=lambda: now[0])

    def settle() -> bool:
        """Steps until the round the first one starts has ended."""
        deadline = time.monotonic() + 30
        contact.step(0.05)
        while contact.talking and time.monotonic() < deadline:
            contact.step(0.05)
        assert not contact.talking, "no verdict"
        return contact.reached

    caplog.set_level("INFO", logger="driftwatch.kafka.first_contact")
    assert not settle()
    assert contact.problem == (f"cannot reach any broker of kafka.bootstrap_servers: {down} "
                               "(connection refused)")
    assert contact.rounds == 1
    now[0] += 0.9
    assert not contact.step(0.01) and contact.rounds == 1, "not before the backoff"
    now[0] += 0.2
    assert not settle() and contact.rounds == 2
    now[0] += 1.5
    assert not contact.step(0.01) and contact.rounds == 2, "the backoff doubled"
    errors = [r.getMessage() for r in caplog.records if r.levelname == "ERROR"]
    assert errors == [f"{contact.problem}; nothing consumed yet; trying again in 1.0 s, then "
                      "less often (up to every 8 s)"], "the same reason, logged once"

    contact.addresses = (broker.bootstrap,)  # the brokers are there now
    now[0] += 1.0
    assert settle() and contact.problem is None and contact.step(0.01)
    assert caplog.records[-1].getMessage() == "the brokers of kafka.bootstrap_servers answer now"


def test_a_group_join_the_brokers_refuse_names_the_setting() -> None:
    """kafka-python reports these join errors as fatal, and the agent used to retry them
    every second for ever (docs/brokers.md): settings, not outages."""
    timeout = refusal(kafka_errors.InvalidSessionTimeoutError(), USES, "g", "Kafka poll")
    assert str(timeout) == (
        "InvalidSessionTimeoutError while Kafka poll, joining group g: kafka.session_timeout_ms "
        "is outside what the brokers accept (their group.min.session.timeout.ms and "
        "group.max.session.timeout.ms: 6000 and 1800000 by default)")
    shared = refusal(kafka_errors.InconsistentGroupProtocolError(), USES, "g", "Kafka poll")
    assert shared is not None and "give the agent a kafka.group_id of its own" in str(shared)
