"""One conversation with one bootstrap broker, step by step: where it stops says what to fix.

kafka-python reports every failure to reach a cluster the same way: after its bootstrap
timeout, ``KafkaTimeoutError: Unable to bootstrap from [...]``, whether the host name did not
resolve, the port was closed, the broker's certificate was not trusted, the listener spoke
another protocol, or the credentials were refused (Apache Kafka 4 closes the connection after
refusing a SaslAuthenticate v2, before kafka-python reads the answer). An agent that cannot
tell these apart can only retry, and retries a wrong password forever. :func:`handshake`
takes the steps a client takes, one at a time on one blocking socket, and records the step it
stopped at and why:

1. ``resolve``: the host name (``getaddrinfo``);
2. ``connect``: the TCP connection;
3. ``tls`` (SSL and SASL_SSL): the TLS handshake, with the ``ssl.SSLContext`` kafka-python
   builds from the same options, so that what fails here fails there;
4. ``api_versions``: the first Kafka request; a TLS listener answers a plaintext one with a
   TLS alert record, which is recognized;
5. ``sasl`` (SASL_PLAINTEXT and SASL_SSL): SaslHandshake, then, for PLAIN and SCRAM,
   SaslAuthenticate v0, whose refusal the broker does answer ("Invalid username or
   password") before it closes;
6. ``metadata``: Metadata for the topics the agent uses, without creating any, with the
   operations the principal may perform on each (KIP-430, brokers 2.3+), and FindCoordinator
   for its group, which needs DESCRIBE on the group. A listener that wants SASL from a
   plaintext client closes the connection here.

Requests are encoded and decoded by kafka-python (``kafka.protocol``); nothing is produced,
consumed or created. Each blocking step waits at most ``timeout_s``.
"""

from __future__ import annotations

import socket
import ssl
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import kafka.errors as kafka_errors  # type: ignore[import-untyped]
from kafka.admin import ACLOperation  # type: ignore[import-untyped]
from kafka.cluster import collect_hosts  # type: ignore[import-untyped]
from kafka.net.sasl import get_sasl_mechanism  # type: ignore[import-untyped]
from kafka.net.transport import KafkaSSLTransport  # type: ignore[import-untyped]
from kafka.protocol.metadata import (  # type: ignore[import-untyped]
    ApiVersionsRequest,
    FindCoordinatorRequest,
    MetadataRequest,
)
from kafka.protocol.parser import KafkaProtocol  # type: ignore[import-untyped]
from kafka.protocol.sasl import (  # type: ignore[import-untyped]
    SaslAuthenticateRequest,
    SaslHandshakeRequest,
)

__all__ = ["Handshake", "Stage", "TopicAccess", "handshake"]

Stage = Literal["resolve", "connect", "tls", "api_versions", "sasl", "metadata", "done"]
"""The step a handshake stopped at (``done``: every step succeeded)."""

PROBED_SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
"""Mechanisms whose credentials the handshake sends: those of ``sasl_plain_username`` and
``sasl_plain_password``. For GSSAPI, OAUTHBEARER and AWS_MSK_IAM it checks that the broker
offers the mechanism and stops there (``authenticated`` None): their tokens come from
elsewhere, and only the client itself should ask for them."""

_TLS_RECORD_TYPES = (0x15, 0x16)  # alert, handshake: a TLS listener's answer to plaintext
_METADATA_VERSION = 12  # the newest whose request kafka-python 3.0 and Kafka 2.8+ share
_FIND_COORDINATOR_VERSION = 3  # one key per request (v4 batches them)
_SASL_AUTHENTICATE_VERSION = 0  # v1+ refusals are not always read before the close
_NO_OPERATIONS = -2147483648  # "not provided" in Metadata's authorized-operations field
_GROUP_AUTHORIZATION_FAILED = kafka_errors.GroupAuthorizationFailedError.errno
_TOPIC_AUTHORIZATION_FAILED = kafka_errors.TopicAuthorizationFailedError.errno
_UNKNOWN_TOPIC = kafka_errors.UnknownTopicOrPartitionError.errno
_UNSUPPORTED_MECHANISM = kafka_errors.UnsupportedSaslMechanismError.errno


@dataclass(frozen=True, slots=True)
class TopicAccess:
    """What the broker said about one topic: whether it exists, and what the principal may do.

    Attributes:
        exists: False when the broker says the topic is unknown; None when it would not say
            (no DESCRIBE: Kafka hides the existence of topics a principal may not describe).
        authorized: False when the broker refused to describe it (TOPIC_AUTHORIZATION_FAILED).
        operations: the ACL operations the principal may perform on it (``READ``, ``WRITE``,
            ``CREATE``, ``DESCRIBE``, ...); None when the broker does not say (older than
            2.3, or not Apache Kafka). Without an authorizer Kafka lists every operation.
    """

    exists: bool | None
    authorized: bool = True
    operations: frozenset[str] | None = None


@dataclass(frozen=True, slots=True)
class Handshake:
    """How far a conversation with one bootstrap address went.

    Attributes:
        address: the bootstrap address, as configured.
        stage: the step it stopped at (:data:`Stage`); ``done`` when none failed.
        kind: what went wrong there, one word: ``unknown_host``; ``refused``,
            ``timeout``, ``unreachable``; ``untrusted`` (certificate not verified),
            ``not_tls`` (the listener does not speak TLS), ``tls``; ``tls_listener`` (it
            speaks TLS to a plaintext client), ``closed``, ``not_kafka``; ``mechanism``
            (the SASL mechanism is not enabled), ``credentials`` (refused). Empty when done.
        detail: what the operating system, the TLS library or the broker said.
        mechanisms: the SASL mechanisms the broker offers (when it refused ours).
        authenticated: True when SASL credentials were accepted, None when not checked.
        topics: per topic asked about, what the broker said (:class:`TopicAccess`).
        group_authorized: False when FindCoordinator was refused for the group (no
            DESCRIBE or READ on it), None when not asked.
    """

    address: str
    stage: Stage
    kind: str = ""
    detail: str = ""
    mechanisms: tuple[str, ...] = ()
    authenticated: bool | None = None
    topics: Mapping[str, TopicAccess] = field(default_factory=dict)
    group_authorized: bool | None = None

    @property
    def answered(self) -> bool:
        """Whether something listened at the address (past resolve and connect)."""
        return self.stage not in ("resolve", "connect")

    @property
    def done(self) -> bool:
        return self.stage == "done"


class _Stopped(Exception):
    """The handshake stopped at a step: its stage, kind and detail."""

    def __init__(self, stage: Stage, kind: str, detail: str, **extra: Any) -> None:
        super().__init__(detail)
        self.stage, self.kind, self.detail, self.extra = stage, kind, detail, extra


def handshake(address: str, client_config: Mapping[str, Any], *, topics: Sequence[str] = (),
              group: str | None = None, timeout_s: float = 5.0) -> Handshake:
    """Talk to the broker at ``address`` as a client with ``client_config`` would (the
    kafka-python options: ``security_protocol``, ``ssl_*``, ``sasl_*``, ``client_id``),
    ask about ``topics`` and ``group``, and return how far it went. Never raises for what
    the network or the broker do; each blocking step waits at most ``timeout_s``."""
    try:
        return _converse(address, client_config, topics, group, timeout_s)
    except _Stopped as stop:
        return Handshake(address, stop.stage, stop.kind, stop.detail, **stop.extra)


def _converse(address: str, config: Mapping[str, Any], topics: Sequence[str],
              group: str | None, timeout_s: float) -> Handshake:
    protocol = str(config.get("security_protocol", "PLAINTEXT"))
    host, port, _family = collect_hosts([address], randomize=False)[0]
    try:
        socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as error:
        raise _Stopped("resolve", "unknown_host", _os_text(error)) from None
    try:
        sock = socket.create_connection((host, port), timeout=timeout_s)
    except TimeoutError:
        raise _Stopped("connect", "timeout", f"no answer within {timeout_s:g} s") from None
    except ConnectionRefusedError as error:
        raise _Stopped("connect", "refused", _os_text(error)) from None
    except OSError as error:
        raise _Stopped("connect", "unreachable", _os_text(error)) from None
    with sock:
        if protocol.endswith("SSL"):
            sock = _tls(sock, host, config)
        conversation = _Conversation(sock, str(config.get("client_id", "driftwatch")))
        versions = conversation.api_versions()
        authenticated = None
        if protocol.startswith("SASL_"):
            authenticated = conversation.authenticate(host, config)
            if authenticated is None:  # a mechanism whose tokens come from elsewhere
                return Handshake(address, "done")
        access, group_authorized = conversation.metadata(versions, topics, group)
        return Handshake(address, "done", authenticated=authenticated, topics=access,
                         group_authorized=group_authorized)


def _tls(sock: socket.socket, host: str, config: Mapping[str, Any]) -> socket.socket:
    """The TLS handshake, with the context kafka-python's transport builds from ``config``."""
    options = {key: config.get(key, default)
               for key, default in KafkaSSLTransport.DEFAULT_CONFIG.items()}
    try:
        context = KafkaSSLTransport._build_ssl_context(options)
        tls: socket.socket = context.wrap_socket(sock, server_hostname=host.rstrip("."))
    except ssl.SSLCertVerificationError as error:
        raise _Stopped("tls", "untrusted", error.verify_message or str(error)) from None
    except (ssl.SSLEOFError, ssl.SSLZeroReturnError, ConnectionResetError) as error:
        raise _Stopped("tls", "not_tls", _tls_text(error)) from None
    except ssl.SSLError as error:
        kind = "not_tls" if error.reason in ("WRONG_VERSION_NUMBER", "RECORD_LAYER_FAILURE",
                                             "PACKET_LENGTH_TOO_LONG") else "tls"
        raise _Stopped("tls", kind, _tls_text(error)) from None
    except TimeoutError:
        raise _Stopped("tls", "timeout", "no TLS answer in time") from None
    except OSError as error:
        raise _Stopped("tls", "tls", _os_text(error)) from None
    return tls


class _Conversation:
    """Requests and answers on one connection, with kafka-python's codec."""

    def __init__(self, sock: socket.socket, client_id: str) -> None:
        self.sock = sock
        self.codec = KafkaProtocol(client_id=client_id)
        self.stage: Stage = "api_versions"

    def call(self, request: Any) -> Any:
        """Send ``request`` and return its response; :class:`_Stopped` at the current stage
        when the broker closes the connection, times out or answers something else."""
        self.codec.send_request(request)
        try:
            self.sock.sendall(self.codec.send_bytes())
            received = b""
            while True:
                data = self.sock.recv(65536)
                if not data:
                    raise _Stopped(self.stage, "closed", "the broker closed the connection")
                if not received and self.stage == "api_versions" \
                        and data[0] in _TLS_RECORD_TYPES and data[1:2] == b"\x03":
                    raise _Stopped(self.stage, "tls_listener",
                                   "the listener answered with a TLS record")
                received = received or data
                try:
                    responses = self.codec.receive_bytes(data)
                except kafka_errors.KafkaError:
                    raise _Stopped(self.stage, "not_kafka",
                                   f"it answered {_printable(received[:24])}") from None
                if responses:
                    return responses[0][1]
        except TimeoutError:
            raise _Stopped(self.stage, "timeout", "no answer in time") from None
        except ssl.SSLError as error:
            if isinstance(error, ssl.SSLEOFError | ssl.SSLZeroReturnError):
                raise _Stopped(self.stage, "closed", _tls_text(error)) from None
            # TLS 1.3: the broker checks the client's certificate after the handshake and
            # says so in an alert the first read meets (e.g. "certificate required").
            raise _Stopped("tls", "tls", _tls_text(error)) from None
        except OSError as error:
            raise _Stopped(self.stage, "closed", _os_text(error)) from None

    def api_versions(self) -> dict[int, int]:
        """The broker's highest version of each API (ApiVersions v0, which every broker
        answers)."""
        response = self.call(ApiVersionsRequest(version=0))
        if response.error_code:
            raise _Stopped("api_versions", "not_kafka", _error_text(response.error_code))
        return {api.api_key: api.max_version for api in response.api_keys}

    def authenticate(self, host: str, config: Mapping[str, Any]) -> bool | None:
        """SaslHandshake, then SaslAuthenticate for PLAIN and SCRAM: True when the
        credentials were accepted, None for a mechanism not probed (see
        :data:`PROBED_SASL_MECHANISMS`)."""
        self.stage = "sasl"
        mechanism_name = str(config.get("sasl_mechanism"))
        response = self.call(SaslHandshakeRequest(version=1, mechanism=mechanism_name))
        if response.error_code == _UNSUPPORTED_MECHANISM:
            raise _Stopped("sasl", "mechanism", f"the broker offers {list(response.mechanisms)}",
                           mechanisms=tuple(response.mechanisms))
        if response.error_code:
            raise _Stopped("sasl", "closed", _error_text(response.error_code))
        if mechanism_name not in PROBED_SASL_MECHANISMS:
            return None
        mechanism = get_sasl_mechanism(mechanism_name)(
            host=host, **{key: value for key, value in config.items()
                          if key.startswith("sasl_") or key == "security_protocol"})
        while not mechanism.is_done():
            answer = self.call(SaslAuthenticateRequest(version=_SASL_AUTHENTICATE_VERSION,
                                                       auth_bytes=mechanism.auth_bytes()))
            if answer.error_code:
                raise _Stopped("sasl", "credentials",
                               answer.error_message or _error_text(answer.error_code))
            mechanism.receive(answer.auth_bytes)
        if not mechanism.is_authenticated():
            raise _Stopped("sasl", "credentials", "the broker's answer did not authenticate us")
        return True

    def metadata(self, versions: Mapping[int, int], topics: Sequence[str],
                 group: str | None) -> tuple[dict[str, TopicAccess], bool | None]:
        """What the broker says about ``topics`` (creating none) and ``group``."""
        self.stage = "metadata"
        version = min(versions.get(MetadataRequest.API_KEY, 0), _METADATA_VERSION)
        arguments: dict[str, Any] = {
            "topics": [MetadataRequest.MetadataRequestTopic(name=topic) for topic in topics]}
        if version >= 4:
            arguments["allow_auto_topic_creation"] = False
        if version >= 8:
            arguments["include_topic_authorized_operations"] = True
        response = self.call(MetadataRequest(version=version, **arguments))
        access = {topic.name: _topic_access(topic) for topic in response.topics}
        group_authorized = None
        highest = versions.get(FindCoordinatorRequest.API_KEY)
        if group is not None and highest is not None and highest >= 1:
            found = self.call(FindCoordinatorRequest(
                version=min(highest, _FIND_COORDINATOR_VERSION), key=group, key_type=0))
            group_authorized = found.error_code != _GROUP_AUTHORIZATION_FAILED
        return access, group_authorized


def _topic_access(topic: Any) -> TopicAccess:
    if topic.error_code == _TOPIC_AUTHORIZATION_FAILED:
        return TopicAccess(exists=None, authorized=False)
    raw = getattr(topic, "authorized_operations", None)
    operations = None
    if raw is not None and raw != _NO_OPERATIONS:
        codes = raw if isinstance(raw, set | frozenset) else {
            bit for bit in range(32) if int(raw) >> bit & 1}
        operations = frozenset(ACLOperation(code).name for code in codes
                               if code in ACLOperation._value2member_map_)
    return TopicAccess(exists=topic.error_code != _UNKNOWN_TOPIC, operations=operations)


def _printable(data: bytes) -> str:
    """``data`` quoted as printable ASCII (what a non-Kafka listener answered)."""
    return '"' + "".join(chr(b) if 32 <= b < 127 else "." for b in data) + '"'


def _error_text(code: int) -> str:
    error = kafka_errors.for_code(code)
    return f"{error.__name__} ({code})"


def _os_text(error: BaseException) -> str:
    """An OS error as a person reads it: ``connection refused``, ``name or service not
    known`` (its strerror, lower-cased), else its text."""
    text = getattr(error, "strerror", None) or str(error) or type(error).__name__
    return str(text)[:1].lower() + str(text)[1:]


def _tls_text(error: BaseException) -> str:
    if isinstance(error, ssl.SSLError) and error.reason:
        return str(error.reason).replace("_", " ").lower()
    return _os_text(error) if str(error) else "the connection closed during the TLS handshake"
