"""A secured Apache Kafka for the security tests: TLS, SASL/PLAIN and ACLs, as users run it.

:class:`SecuredKafka` is one :class:`~tests.apache_kafka.ApacheKafkaBroker` with, besides
its PLAINTEXT listener (inter-broker and the tests' admin door: its principal, ANONYMOUS, is
a super user, as is the controller's), three listeners the agent connects to:

- ``SASL`` (SASL_PLAINTEXT) and ``SASL_SSL``: SASL/PLAIN, users from a JAAS configuration in
  ``server.properties`` (``listener.name.<listener>.plain.sasl.jaas.config``);
- ``SSL``: TLS with client certificates required (``ssl.client.auth=required``), the
  principal being the certificate's subject (``User:CN=driftwatch-tls``).

The certificates are made with the ``openssl`` command (a throwaway CA, the broker's
certificate for 127.0.0.1 and localhost, a client certificate, and an unrelated CA for the
"untrusted" cases), the broker reads them as PEM (``ssl.keystore.type=PEM``). ACLs are
enforced by KRaft's ``StandardAuthorizer``; topics are not created on first use
(``auto.create.topics.enable=false``), as in most production clusters; group settings are
Kafka's defaults.

:func:`agent_acls` is the list of ACLs docs/kafka-security.md gives, as the tests grant it.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kafka.admin import (
    ACL,
    ACLFilter,
    ACLOperation,
    ACLPermissionType,
    ACLResourcePatternType,
    KafkaAdminClient,
    NewTopic,
    ResourcePattern,
    ResourcePatternFilter,
    ResourceType,
)

from tests.apache_kafka import ApacheKafkaBroker, Listener

PASSWORD = "s3cret-of-{}"
"""Every SASL user's password: the user name in a fixed sentence."""

TLS_PRINCIPAL = "CN=driftwatch-tls"
"""The subject of the client certificate: the SSL listener's principal is ``User:`` + it."""


@dataclass(frozen=True)
class Certificates:
    """PEM files: the CA the brokers' certificate comes from, the broker's key and
    certificate, a client's, and a CA that signed nothing here."""

    ca: Path
    broker_keystore: Path
    client_certificate: Path
    client_key: Path
    other_ca: Path


def make_certificates(directory: Path) -> Certificates:
    """A throwaway CA, a broker certificate for 127.0.0.1 / localhost and a client
    certificate signed by it, and an unrelated CA, with ``openssl``."""
    directory.mkdir(parents=True, exist_ok=True)

    def openssl(*arguments: str) -> None:
        subprocess.run(["openssl", *arguments], cwd=directory, check=True,
                       capture_output=True, timeout=60)

    for name, subject in (("ca", "/CN=driftwatch test CA"), ("other-ca", "/CN=another CA")):
        openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
                "-keyout", f"{name}.key", "-out", f"{name}.pem", "-subj", subject)
    (directory / "san.ext").write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    for name, subject, extensions in (("broker", "/CN=localhost", ["-extfile", "san.ext"]),
                                      ("client", f"/{TLS_PRINCIPAL}", [])):
        openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{name}.key",
                "-out", f"{name}.csr", "-subj", subject)
        openssl("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
                "-CAcreateserial", "-days", "2", "-out", f"{name}.pem", *extensions)
    keystore = directory / "broker-keystore.pem"
    keystore.write_text((directory / "broker.key").read_text()
                        + (directory / "broker.pem").read_text())
    return Certificates(directory / "ca.pem", keystore, directory / "client.pem",
                        directory / "client.key", directory / "other-ca.pem")


class SecuredKafka:
    """The secured broker (see the module docstring), its users, and an admin client.

    Parameters:
        directory: the broker's and the certificates' directory.
        users: the SASL users (each one's password: :data:`PASSWORD`).
    """

    def __init__(self, directory: Path, users: Sequence[str]) -> None:
        self.certificates = make_certificates(directory / "tls")
        self.users = tuple(users)
        jaas = ("org.apache.kafka.common.security.plain.PlainLoginModule required "
                + " ".join(f'user_{user}="{PASSWORD.format(user)}"' for user in self.users)
                + ";")
        self.broker = ApacheKafkaBroker(
            directory / "kafka",
            listeners=[Listener("SASL", "SASL_PLAINTEXT"), Listener("SSL", "SSL"),
                       Listener("SASL_SSL", "SASL_SSL")],
            server_properties={
                "sasl.enabled.mechanisms": "PLAIN",
                "listener.name.sasl.plain.sasl.jaas.config": jaas,
                "listener.name.sasl_ssl.plain.sasl.jaas.config": jaas,
                "listener.name.ssl.ssl.client.auth": "required",
                "ssl.keystore.type": "PEM",
                "ssl.keystore.location": str(self.certificates.broker_keystore),
                "ssl.truststore.type": "PEM",
                "ssl.truststore.location": str(self.certificates.ca),
                "authorizer.class.name":
                    "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
                # ANONYMOUS: the PLAINTEXT and controller listeners (the broker itself, and
                # the tests' administration); the agent only uses the other three.
                "super.users": "User:ANONYMOUS",
                "auto.create.topics.enable": "false",
                # Kafka's default (the shared test broker allows 1 s for the kill tests).
                "group.min.session.timeout.ms": "6000",
            },
        )

    def start(self) -> SecuredKafka:
        self.broker.start()
        return self

    def close(self) -> None:
        self.broker.close()

    @property
    def plaintext(self) -> str:
        return self.broker.bootstrap

    def address(self, listener: str) -> str:
        return self.broker.address(listener)

    def failed_logins(self) -> int:
        """Failed SASL logins the broker logged so far (each attempt is one line)."""
        return self.broker.log_path.read_text(errors="replace").count(
            "Invalid username or password")

    # -- what the agent's settings say to reach it ------------------------------------------

    def kafka_settings(self, protocol: str, user: str | None = None) -> dict[str, Any]:
        """The agent's ``kafka`` settings for the listener of ``protocol``, with the agent's
        own keys (as a user writes them)."""
        listener = {"SASL_PLAINTEXT": "SASL", "SSL": "SSL", "SASL_SSL": "SASL_SSL",
                    "PLAINTEXT": "PLAINTEXT"}[protocol]
        settings: dict[str, Any] = {"bootstrap_servers": [self.address(listener)],
                                    "security_protocol": protocol}
        if protocol.startswith("SASL_"):
            assert user is not None
            settings |= {"sasl_mechanism": "PLAIN", "sasl_plain_username": user,
                         "sasl_plain_password": PASSWORD.format(user)}
        if protocol.endswith("SSL"):
            settings["ssl_cafile"] = str(self.certificates.ca)
        if protocol == "SSL":
            settings |= {"ssl_certfile": str(self.certificates.client_certificate),
                         "ssl_keyfile": str(self.certificates.client_key)}
        return settings

    # -- administration (PLAINTEXT, super user) ---------------------------------------------

    def admin(self) -> KafkaAdminClient:
        return KafkaAdminClient(bootstrap_servers=self.plaintext, request_timeout_ms=30000)

    def create_topics(self, *names: str, compacted: Iterable[str] = ()) -> None:
        compact = set(compacted)
        admin = self.admin()
        try:
            admin.create_topics([NewTopic(name, 1, 1, topic_configs={"cleanup.policy":
                                                                     "compact"}
                                          if name in compact else {}) for name in names])
        finally:
            admin.close()

    def grant(self, acls: Iterable[ACL]) -> None:
        admin = self.admin()
        try:
            result = admin.create_acls(list(acls))
            assert not result["failed"], result["failed"]
        finally:
            admin.close()

    def revoke(self, principal: str, operation: str, resource: str, name: str) -> None:
        """Delete the ALLOW ACL :func:`acl` makes of these."""
        admin = self.admin()
        try:
            admin.delete_acls([ACLFilter(
                principal, "*", ACLOperation[operation], ACLPermissionType.ALLOW,
                ResourcePatternFilter(ResourceType[resource], name,
                                      ACLResourcePatternType.LITERAL))])
        finally:
            admin.close()


def acl(principal: str, operation: str, resource: str, name: str) -> ACL:
    """One ALLOW ACL of ``principal`` for ``operation`` on the literal resource."""
    return ACL(principal, "*", ACLOperation[operation], ACLPermissionType.ALLOW,
               ResourcePattern(ResourceType[resource], name))


def agent_acls(principal: str, *, topics: Sequence[str], group: str | None,
               state_topic: str | None, create_state_topic: bool = True,
               dead_letter_topic: str | None = None, alarms_topic: str | None = None,
               leave_out: tuple[str, str, str] | None = None) -> Iterator[ACL]:
    """The ACLs docs/kafka-security.md lists for an agent, as ``(operation, resource type,
    name)`` triples granted to ``principal``; ``leave_out`` is one of them, not granted."""
    wanted: list[tuple[str, str, str]] = [("READ", "TOPIC", topic) for topic in topics]
    if group is not None:
        wanted.append(("READ", "GROUP", group))
    if state_topic is not None:
        wanted += [("READ", "TOPIC", state_topic), ("WRITE", "TOPIC", state_topic)]
        if create_state_topic:
            wanted.append(("CREATE", "TOPIC", state_topic))
    wanted += [("WRITE", "TOPIC", topic) for topic in (dead_letter_topic, alarms_topic)
               if topic is not None]
    assert leave_out is None or leave_out in wanted, (leave_out, wanted)
    return (acl(principal, operation, resource, name)
            for operation, resource, name in wanted if (operation, resource, name) != leave_out)


def settings_for(kafka: Mapping[str, Any], **sections: Mapping[str, Any]) -> dict[str, Any]:
    """Overrides of :func:`tests.integration.helpers.agent_settings`: these ``kafka`` keys,
    the state topic as the checkpoint, and any other sections."""
    return {"kafka": dict(kafka), "checkpoint": {"backend": "kafka"}, **sections}
