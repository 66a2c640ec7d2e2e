"""The agent's first contact with its brokers, and what each way of failing it means.

Before it consumes anything the agent talks to every bootstrap address
(:func:`~driftwatch.kafka.handshake.handshake`, all at once, on worker threads so that the loop,
and a Ctrl+C, never wait for a silent address) and turns what happened into a
:class:`Verdict` naming the setting to look at:

- **reached**: a broker answered every step; the topics and the group the agent uses were
  checked against the operations its principal may perform (when the broker says: Apache
  Kafka 2.3+). Warnings (an output topic that does not exist) are logged once.
- **unreachable**: no address answered: the name did not resolve, the port refused, nothing
  answered in time. Possibly passing (the brokers are starting, a network is down): the
  source tries again with backoff, ``/readyz`` says why, and nothing is saved meanwhile.
- **refused**: the brokers answered and refused the agent's settings: an untrusted
  certificate, TLS on one side only, a SASL mechanism not offered, refused credentials, a
  missing ACL, an address that is not a Kafka listener. Retrying cannot help, so the agent
  stops with :class:`BrokerRefused`: one error naming the setting (``driftwatch run`` exits
  2, like a bad setting), and no storm of failed logins on the brokers.

:func:`refusal` gives the same treatment to the errors kafka-python raises later that
retrying cannot mend: authorization (an ACL removed while the agent runs, the group's READ,
which only a join tests) and a group join the brokers refuse (``kafka.session_timeout_ms``
outside their bounds, a group id shared with another application).
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import kafka.errors as kafka_errors  # type: ignore[import-untyped]

from driftwatch.kafka.handshake import Handshake, handshake

__all__ = ["BrokerRefused", "FirstContact", "TopicUse", "Verdict", "explain", "refusal",
           "state_topic_refused"]

log = logging.getLogger(__name__)

ACL_DOCS = "docs/kafka-security.md"
"""Where the ACLs the agent needs are listed, for the messages that ask for one."""

REPEAT_LOG_S = 300.0
"""While no broker answers, the error is logged again at most this often (and whenever its
reason changes): an outage stays in the log's last minutes without one line per attempt;
``/readyz`` and ``driftwatch_not_ready`` show it all along."""


class BrokerRefused(Exception):
    """The brokers refuse the agent's settings (authentication, TLS, a missing ACL): retrying
    cannot help. ``str()`` is one line naming the setting or the ACL; ``driftwatch run``
    prints it and exits 2."""


@dataclass(frozen=True, slots=True)
class TopicUse:
    """A topic the agent uses and what it does with it.

    Attributes:
        topic: the topic's name.
        setting: the setting that names it (``kafka.topics``, ``checkpoint.topic``, ...).
        needs: the ACL operations the agent performs on it (``READ``, ``WRITE``; ``DESCRIBE``
            is implied by either).
        role: ``input`` (consumed; waited for when missing), ``state`` (the state topic,
            created when missing, which needs CREATE on it or on the cluster) or ``output``
            (produced to; the agent does not create it).
    """

    topic: str
    setting: str
    needs: frozenset[str]
    role: Literal["input", "state", "output"]


@dataclass(frozen=True, slots=True)
class Verdict:
    """The outcome of one round of first contact (see the module docstring).

    Attributes:
        outcome: ``reached``, ``unreachable`` or ``refused``.
        message: why not reached, in one line naming the setting; empty when reached.
        warnings: when reached, what deserves one warning (an output topic missing).
    """

    outcome: Literal["reached", "unreachable", "refused"]
    message: str = ""
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class _Settings:
    """The settings the messages name, as they are set."""

    protocol: str
    mechanism: str | None
    username: str | None
    cafile: str | None


def explain(handshakes: Sequence[Handshake], client_config: Mapping[str, Any],
            uses: Sequence[TopicUse], group: str | None) -> Verdict:
    """The verdict on one handshake per bootstrap address (see the module docstring).

    A refusal anywhere is the verdict: the settings are the same for every address, so an
    address that refuses them proves them wrong even while another is down.
    """
    settings = _Settings(str(client_config.get("security_protocol", "PLAINTEXT")),
                         client_config.get("sasl_mechanism"),
                         client_config.get("sasl_plain_username"),
                         client_config.get("ssl_cafile"))
    for shake in handshakes:
        message = _refused(shake, settings)
        if message is not None:
            return Verdict("refused", message)
    done = next((shake for shake in handshakes if shake.done), None)
    if done is None:
        reasons = ", ".join(f"{shake.address} ({_unreachable(shake)})" for shake in handshakes)
        return Verdict("unreachable", "cannot reach any broker of kafka.bootstrap_servers: "
                       + reasons)
    missing = _missing_grants(done, uses, group)
    if missing:
        who = f"User:{settings.username}" if settings.username else "the agent's principal"
        return Verdict("refused", f"the brokers deny {who} what the agent needs: grant "
                       + "; ".join(missing) + f" (the list: {ACL_DOCS})")
    warnings = tuple(
        f"topic {use.topic} ({use.setting}) does not exist: the agent does not create it, "
        "and what it writes there fails unless the brokers create topics on first use "
        "(auto.create.topics.enable)"
        for use in uses
        if use.role == "output" and (access := done.topics.get(use.topic)) is not None
        and access.exists is False)
    return Verdict("reached", warnings=warnings)


def _refused(shake: Handshake, settings: _Settings) -> str | None:
    """The message when this handshake proves the settings wrong, else None."""
    at = shake.address
    protocol = f"kafka.security_protocol is {settings.protocol}"
    if shake.kind == "untrusted":
        trust = f"kafka.ssl_cafile ({settings.cafile})" if settings.cafile else \
            "the system's CA certificates (kafka.ssl_cafile is not set)"
        hint = "; connect by a name its certificate lists, or set " \
            "kafka.client_options.ssl_check_hostname: false" \
            if "mismatch" in shake.detail.lower() else ""
        return (f"the TLS certificate of the broker at {at} is not trusted ({shake.detail}) "
                f"with {trust}: kafka.ssl_cafile must name the CA that signed it{hint}")
    if shake.kind == "not_tls":
        return (f"the listener at {at} does not speak TLS ({shake.detail}), but {protocol}: "
                "use PLAINTEXT or SASL_PLAINTEXT for it, or the address of its TLS listener "
                "in kafka.bootstrap_servers")
    if shake.stage == "tls" and shake.kind == "tls":
        return (f"the TLS handshake with {at} failed ({shake.detail}): check "
                "kafka.ssl_cafile, and kafka.ssl_certfile / kafka.ssl_keyfile when the broker "
                "requires a client certificate")
    if shake.kind == "tls_listener":
        return (f"the listener at {at} speaks TLS, but {protocol}: set it to SSL (or "
                "SASL_SSL), with kafka.ssl_cafile naming the CA of the brokers' certificates")
    if shake.kind == "mechanism":
        offered = ", ".join(shake.mechanisms) or "none"
        return (f"the broker at {at} does not offer the SASL mechanism {settings.mechanism} "
                f"(kafka.sasl_mechanism); it offers: {offered}")
    if shake.kind == "credentials":
        return (f"the broker at {at} refused the SASL {settings.mechanism} credentials of "
                f"user {settings.username!r} (kafka.sasl_plain_username, "
                f"kafka.sasl_plain_password): {shake.detail}")
    if shake.stage == "metadata" and shake.kind == "closed" and \
            not settings.protocol.startswith("SASL_"):
        return (f"the listener at {at} closed the connection at the first request after "
                f"ApiVersions: it requires SASL authentication, but {protocol}: use "
                "SASL_PLAINTEXT or SASL_SSL, with kafka.sasl_mechanism and its credentials")
    if shake.kind == "not_kafka":
        return (f"{at} is not a Kafka listener ({shake.detail}): check "
                "kafka.bootstrap_servers")
    return None


def _unreachable(shake: Handshake) -> str:
    if shake.kind == "unknown_host":
        return f"unknown host: {shake.detail}"
    if shake.stage == "connect":
        return shake.detail
    if shake.kind == "closed":
        return f"accepted the connection, then {shake.detail}"
    if shake.kind == "timeout":
        return "accepted the connection, then no answer in time"
    return shake.detail


def _missing_grants(shake: Handshake, uses: Sequence[TopicUse], group: str | None
                    ) -> list[str]:
    """``OPERATION on topic T (setting)`` for each operation the broker says the principal
    may not perform, and the group's READ when even its coordinator was refused."""
    missing: list[str] = []
    for use in uses:
        access = shake.topics.get(use.topic)
        if access is None:
            continue
        if not access.authorized:
            denied = sorted(use.needs)
        elif access.operations is None:
            continue  # the broker does not say: the first refusal will
        else:
            denied = sorted(use.needs - access.operations)
        if denied:
            missing.append(f"{' and '.join(denied)} on topic {use.topic} ({use.setting})")
    if group is not None and shake.group_authorized is False:
        missing.append(f"READ on group {group} (kafka.group_id)")
    return missing


def refusal(error: BaseException, uses: Iterable[TopicUse], group: str | None,
            doing: str) -> BrokerRefused | None:
    """The :class:`BrokerRefused` that a kafka-python ``error`` raised while ``doing``
    something (``consuming``, ``saving the state``) amounts to, or None when it is not a
    refusal (then it may pass, and is retried)."""
    settings = {use.topic: use.setting for use in uses}
    if isinstance(error, kafka_errors.TopicAuthorizationFailedError):
        topics = sorted(_topics_of(error) & settings.keys()) or sorted(settings)
        named = ", ".join(f"{topic} ({settings[topic]})" for topic in topics)
        return BrokerRefused(f"TopicAuthorizationFailed while {doing}: grant the agent's "
                             f"principal its ACLs on topic {named} (the list: {ACL_DOCS})")
    if isinstance(error, kafka_errors.GroupAuthorizationFailedError):
        return BrokerRefused(f"GroupAuthorizationFailed while {doing}: grant READ on group "
                             f"{group} (kafka.group_id) to the agent's principal")
    group_setting = _GROUP_REFUSALS.get(type(error))
    if group_setting is not None:
        return BrokerRefused(f"{type(error).__name__} while {doing}, joining group {group}: "
                             + group_setting)
    if isinstance(error, kafka_errors.ClusterAuthorizationFailedError):
        return BrokerRefused(f"ClusterAuthorizationFailed while {doing}: the agent's "
                             f"principal lacks a cluster permission (the list: {ACL_DOCS})")
    if isinstance(error, (kafka_errors.AuthorizationError,
                          kafka_errors.SaslAuthenticationFailedError)):
        return BrokerRefused(f"{type(error).__name__} while {doing}: {error} (check the "
                             f"kafka.sasl_* settings and the ACLs: {ACL_DOCS})")
    return None


def state_topic_refused(topic: str, operation: str, error: BaseException) -> BrokerRefused:
    """The state topic (``checkpoint.topic``) refused to the agent's principal for
    ``operation`` (``READ``, ``WRITE``, ``CREATE``)."""
    fix = ("grant CREATE on it (or on the cluster) to the agent's principal, or create it "
           "yourself with cleanup.policy=compact") if operation == "CREATE" else \
        f"grant {operation} on it to the agent's principal"
    doing = "create" if operation == "CREATE" else f"let the agent {operation.lower()}"
    return BrokerRefused(f"the brokers refuse to {doing} state topic {topic} "
                         f"(checkpoint.topic): {type(error).__name__}: {fix} "
                         f"(the list: {ACL_DOCS})")


_GROUP_REFUSALS: dict[type[BaseException], str] = {
    kafka_errors.InvalidSessionTimeoutError: (
        "kafka.session_timeout_ms is outside what the brokers accept (their "
        "group.min.session.timeout.ms and group.max.session.timeout.ms: 6000 and 1800000 by "
        "default)"),
    kafka_errors.InconsistentGroupProtocolError: (
        "its members use another protocol: agents whose kafka.assignment_strategy is of "
        "the other kind (eager range or roundrobin, or cooperative-sticky; agents of 0.2 "
        "and earlier use range), which must all have left before this one can join "
        "(docs/running.md, changing the assignment strategy), or another application "
        "with this group id, and then give the agent a kafka.group_id of its own"),
    kafka_errors.InvalidGroupIdError: "the brokers refuse kafka.group_id",
    kafka_errors.FencedInstanceIdError: (
        "a newer member joined with this kafka.group_instance_id and took its place: two "
        "replicas share the id (give each its own, such as its Pod's name), or this one "
        "was replaced while it could not reach the brokers"),
    kafka_errors.GroupMaxSizeReachedError: (
        "the group has as many members as the brokers' group.max.size allows: fewer "
        "replicas, or a larger group.max.size"),
}
"""Group join errors kafka-python reports as fatal: settings the brokers refuse."""


def _topics_of(error: BaseException) -> set[str]:
    """The topics a TopicAuthorizationFailedError names (kafka-python passes them as its
    argument, a set)."""
    named: set[str] = set()
    for argument in getattr(error, "args", ()):
        if isinstance(argument, set | frozenset | list | tuple):
            named |= {str(topic) for topic in argument}
        elif isinstance(argument, str):
            named.add(argument)
    return named


class FirstContact:
    """Talks to every bootstrap address at once, on worker threads, until the brokers answer.

    :meth:`step`, called by the source's every poll until it returns True, gives the
    current round at most ``wait_s`` (a silent address never holds up the loop, nor a
    Ctrl+C). A round that reached the brokers ends first contact (its warnings logged once);
    one whose brokers refuse the settings raises :class:`BrokerRefused`; one that found no
    broker sets :attr:`problem`, logs it (once; again when the reason changes, or after
    :data:`REPEAT_LOG_S`) and is tried again after a backoff of ``backoff_initial_s``,
    doubling up to ``backoff_max_s``: one connection per address and attempt. After a
    ``reached`` verdict, ``then`` runs on the worker thread with the handshake that reached
    a broker (the agent creates its state topic there); an exception it raises (a
    :class:`BrokerRefused`, a setting the cluster cannot honour) makes the round ``refused``
    and is raised by :meth:`step` as it was.

    Parameters:
        addresses: ``kafka.bootstrap_servers``.
        client_config: the kafka-python options (security included).
        uses: the topics the agent uses (:class:`TopicUse`).
        group: the consumer group, or None (whole-stream agents have none).
        timeout_s: bound on each blocking step of a handshake.
        then: run once a round reached the brokers.
        backoff_initial_s, backoff_max_s: the wait before the next round after one that
            found no broker, and its bound.
        clock: monotonic seconds; injectable for tests.
    """

    def __init__(self, addresses: Sequence[str], client_config: Mapping[str, Any], *,
                 uses: Sequence[TopicUse] = (), group: str | None = None,
                 timeout_s: float = 5.0,
                 then: Callable[[Handshake], None] | None = None,
                 backoff_initial_s: float = 0.5, backoff_max_s: float = 30.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.addresses = tuple(addresses)
        self.client_config = dict(client_config)
        self.uses = tuple(uses)
        self.group = group
        self.timeout_s = timeout_s
        self.then = then
        self.backoff_initial_s = backoff_initial_s
        self.backoff_max_s = backoff_max_s
        self.clock = clock
        self.rounds = 0
        """Rounds started (each talks to every address once)."""
        self.reached = False
        """Whether a round reached the brokers (first contact is over)."""
        self.problem: str | None = None
        """Why the last round did not reach the brokers (None before the first ends)."""
        self._retry_at = -math.inf
        self._logged: tuple[str, float] | None = None
        self._error: Exception | None = None  # what ``then`` raised
        self._done = threading.Event()
        self._verdict: Verdict | None = None
        self._running = False

    @property
    def talking(self) -> bool:
        """Whether a round is under way."""
        return self._running

    def step(self, wait_s: float) -> bool:
        """Advance first contact by at most about ``wait_s`` (see the class docstring):
        True once the brokers were reached. Raises :class:`BrokerRefused`."""
        if self.reached:
            return True
        now = self.clock()
        if now < self._retry_at:
            time.sleep(min(self._retry_at - now, wait_s))
            return False
        verdict = self.run(wait_s)
        if verdict is None:
            return False
        if verdict.outcome == "refused":
            self.problem = verdict.message
            raise self._error or BrokerRefused(verdict.message)
        if verdict.outcome == "unreachable":
            failed = self.rounds  # every round so far: one reaching the brokers ends it
            delay = min(self.backoff_initial_s * 2.0 ** min(failed - 1, 62),
                        self.backoff_max_s)
            self._retry_at = self.clock() + delay
            self.problem = verdict.message
            self._log(verdict.message, delay)
            return False
        for warning in verdict.warnings:
            log.warning("%s", warning)
        if self._logged is not None:
            log.info("the brokers of kafka.bootstrap_servers answer now")
        self.reached, self.problem = True, None
        return True

    def _log(self, message: str, delay: float) -> None:
        now = self.clock()
        last = self._logged
        if last is not None and last[0] == message and now - last[1] < REPEAT_LOG_S:
            return
        self._logged = (message, now)
        log.error("%s; nothing consumed yet; trying again in %.1f s, then less often (up to "
                  "every %.0f s)", message, delay, self.backoff_max_s)

    def run(self, wait_s: float) -> Verdict | None:
        """Start a round unless one is under way; its verdict if it ends within ``wait_s``."""
        if not self._running:
            self._running = True
            self._done.clear()
            self.rounds += 1
            threading.Thread(target=self._round, name="driftwatch-first-contact",
                             daemon=True).start()
        if not self._done.wait(wait_s):
            return None
        self._running = False
        verdict, self._verdict = self._verdict, None
        assert verdict is not None
        return verdict

    def _round(self) -> None:
        results: dict[int, Handshake] = {}
        topics = [use.topic for use in self.uses]

        def talk(index: int, address: str) -> None:
            try:
                results[index] = handshake(address, self.client_config, topics=topics,
                                           group=self.group, timeout_s=self.timeout_s)
            except Exception as error:  # a bug here must not hang the round
                log.exception("first contact with %s failed", address)
                results[index] = Handshake(address, "connect", "unreachable", repr(error))

        threads = [threading.Thread(target=talk, args=(index, address), daemon=True)
                   for index, address in enumerate(self.addresses)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        verdict = Verdict("unreachable", "first contact failed")
        handshakes = [results[index] for index in range(len(threads))]
        try:
            verdict = explain(handshakes, self.client_config, self.uses, self.group)
            if verdict.outcome == "reached" and self.then is not None:
                self.then(next(shake for shake in handshakes if shake.done))
        except Exception as error:  # raised by step(), on the loop's thread
            self._error = error
            verdict = Verdict("refused", str(error))
        finally:
            self._verdict = verdict
            self._done.set()
