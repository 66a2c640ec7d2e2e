"""The metrics HTTP server: ``/metrics``, ``/healthz``, ``/readyz`` and a landing page.

:class:`MetricsServer` serves ``/metrics`` (content negotiation between the Prometheus text
format and OpenMetrics, gzip when asked, ``name[]`` filtering), ``/healthz``, ``/readyz`` and a
landing page at ``/``, for GET and HEAD, optionally behind basic auth and TLS. It answers on
its own threads and reads only its ``registry`` (the agent registers a
:class:`~driftwatch.io.collector.SnapshotCollector` there, which renders the immutable
snapshot the loop publishes), so a scrape never touches the loop's state. It holds at most
``max_connections`` connections and each for at most ``request_timeout`` seconds, so no
client, however slow or numerous, can exhaust the agent's threads or file descriptors (see
:class:`MetricsServer`); :class:`HttpCollector` exports those connection counts.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import gzip
import hashlib
import hmac
import logging
import os
import socket
import socketserver
import ssl
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, cast
from urllib.parse import parse_qs, urlsplit

from prometheus_client import CollectorRegistry
from prometheus_client.exposition import choose_encoder, gzip_accepted
from prometheus_client.metrics_core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from driftwatch import __version__

__all__ = [
    "EVICTION_WAIT",
    "MAX_CONNECTIONS",
    "POLL_INTERVAL",
    "REQUEST_TIMEOUT",
    "HttpCollector",
    "MetricsServer",
]

logger = logging.getLogger(__name__)


REQUEST_TIMEOUT = 10.0
"""Default seconds a connection may last, from accept to the end of its response (TLS
handshake, request, answer); setting ``metrics.request_timeout_seconds``.

A scrape is a few kB over a live connection; ten seconds is far above any healthy client and
keeps a stalled or hostile client from holding a server thread indefinitely.
"""

MAX_CONNECTIONS = 32
"""Default most connections served at once; setting ``metrics.max_connections``. Prometheus
(one or two servers) and the kubelet's probes need a handful."""

EVICTION_WAIT = 1.0
"""Seconds the accept loop waits for an evicted idle connection's thread to let go of its
slot (it normally takes about a millisecond) before refusing the newcomer instead."""

POLL_INTERVAL = 0.1
"""Seconds between the accept loop's checks for :meth:`MetricsServer.stop`; bounds stop().

An idle server wakes ten times a second for one ``select`` call, unmeasurable next to the
agent's work; in exchange the agent's shutdown on SIGTERM waits at most 0.1 s for it.
"""


@dataclass(eq=False)
class _Connection:
    """One accepted connection, as the server's bookkeeping sees it."""

    sock: socket.socket  # the TLS socket once wrapped: the one whose descriptor is live
    deadline: float  # time.monotonic() by which it must be done
    busy: bool = False  # a complete request has been read and is being answered
    closing: bool = False  # shut down by the server (evicted or timed out)


_CLOSE_REASONS = ("evicted", "refused", "timeout")
"""Why the server closed a connection before its response: ``evicted``, idle (no complete
request yet) when every slot was taken and a newcomer arrived; ``refused``, a newcomer that
found every slot busy answering a request; ``timeout``, past ``request_timeout``."""


@dataclass
class _Stats:
    """Connection counts for :class:`HttpCollector`; written under the server's lock."""

    open: int = 0
    closed: dict[str, int] = field(default_factory=lambda: dict.fromkeys(_CLOSE_REASONS, 0))


def _shutdown(sock: socket.socket) -> None:
    """Shut ``sock`` down for both directions, waking the thread blocked on it.

    ``socket.socket``'s shutdown, on the descriptor, also for a TLS socket: the TLS layer's
    own would tear its state down under the connection's thread. An error means the socket
    is already closed by its thread (or never fully connected): nothing left to do.
    """
    with contextlib.suppress(OSError):
        socket.socket.shutdown(sock, socket.SHUT_RDWR)


class _Server(ThreadingHTTPServer):
    """One thread per connection, TLS handshake on that thread, quiet on client errors, and
    at most ``max_connections`` connections, each for at most ``request_timeout`` seconds.

    The bound is enforced in the accept loop (:meth:`process_request`), before a thread is
    started: at the limit, the connection idle longest is shut down for the newcomer (or the
    newcomer is closed at once when every connection is answering a request). The deadline is
    enforced by :meth:`service_actions`, which ``serve_forever`` calls every
    :data:`POLL_INTERVAL`: a client trickling one byte a second gets no more time than a
    silent one. A shut-down socket wakes its thread, which closes it and frees the slot.
    """

    daemon_threads = True  # a stuck client never keeps the process alive at exit
    block_on_close = False  # stop() never waits for clients; they are shut down instead
    # The kernel's queue of connections not yet accepted (socketserver's default is 5): a
    # burst of clients waits there, costing the process nothing, instead of retrying SYNs.
    request_queue_size = 128

    def __init__(self, address: tuple[str, int], family: socket.AddressFamily,
                 app: _App) -> None:
        self.address_family = family
        self.app = app
        self.stats = _Stats()
        self._connections: dict[int, _Connection] = {}  # in accept order
        self._lock = threading.Lock()
        self._slot_freed = threading.Condition(self._lock)
        self._local = threading.local()
        super().__init__(address, _Handler)

    def server_bind(self) -> None:
        # HTTPServer.server_bind resolves the host's FQDN, a DNS lookup that can stall start-up
        # for seconds and whose result nothing here uses.
        socketserver.TCPServer.server_bind(self)
        host, port = self.server_address[:2]
        self.server_name = str(host)
        self.server_port = int(port)

    # -- the bound, in the accept loop

    def process_request(self, request: Any, client_address: Any) -> None:
        connection = self._admit(request)
        if connection is None:
            self.shutdown_request(request)
            return
        try:
            super().process_request(request, client_address)  # starts the thread
        except BaseException:
            self._release(request)
            raise

    def _admit(self, request: socket.socket) -> _Connection | None:
        limit = self.app.max_connections
        with self._lock:
            if len(self._connections) >= limit:
                idle = next((c for c in self._connections.values()
                             if not c.busy and not c.closing), None)
                if idle is not None:
                    self._close(idle, "evicted")
                    self._slot_freed.wait_for(lambda: len(self._connections) < limit,
                                              EVICTION_WAIT)
                if len(self._connections) >= limit:
                    self.stats.closed["refused"] += 1
                    return None
            connection = _Connection(request, time.monotonic() + self.app.request_timeout)
            self._connections[id(request)] = connection
            self.stats.open = len(self._connections)
            return connection

    def _close(self, connection: _Connection, reason: str) -> None:
        """Shut ``connection`` down (its thread then closes it); the lock is held."""
        connection.closing = True
        self.stats.closed[reason] += 1
        _shutdown(connection.sock)

    def _release(self, request: socket.socket) -> None:
        with self._lock:
            self._connections.pop(id(request), None)
            self.stats.open = len(self._connections)
            self._slot_freed.notify_all()

    def service_actions(self) -> None:
        """Called by ``serve_forever`` every :data:`POLL_INTERVAL`: enforce the deadlines."""
        now = time.monotonic()
        with self._lock:
            for connection in self._connections.values():
                if not connection.closing and now > connection.deadline:
                    self._close(connection, "timeout")

    def close_connections(self) -> None:
        """Shut every open connection down (on stop); not counted as closed early."""
        with self._lock:
            for connection in self._connections.values():
                connection.closing = True
                _shutdown(connection.sock)

    # -- on the connection's thread

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._release(request)

    def finish_request(self, request: Any, client_address: Any) -> None:
        with self._lock:
            connection = self._connections.get(id(request))
        self._local.connection = connection
        request.settimeout(self.app.request_timeout)
        context = self.app.ssl_context
        if context is None:
            super().finish_request(request, client_address)
            return
        # The handshake runs here, on the connection's own thread, not in the accept loop,
        # where one slow client would block every other scrape and probe. Wrapping moves the
        # descriptor to the TLS socket: that is the one to shut down from now on, so it is
        # recorded before the handshake, which may stall.
        tls = context.wrap_socket(request, server_side=True, do_handshake_on_connect=False)
        if connection is not None:
            with self._lock:
                connection.sock = tls
                if connection.closing:  # shut down while the descriptor was moving
                    _shutdown(tls)
        try:
            tls.do_handshake()
            super().finish_request(tls, client_address)
        finally:
            self.shutdown_request(tls)

    def mark_busy(self) -> None:
        """The current thread's connection has a complete request: no longer evictable."""
        connection: _Connection | None = getattr(self._local, "connection", None)
        if connection is not None:
            connection.busy = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        # Clients that hang up, time out, or speak plain HTTP to the TLS port are their own
        # problem: one debug line, not a traceback on stderr.
        logger.debug("metrics server: request from %s failed", client_address, exc_info=True)


@dataclass(frozen=True, slots=True)
class _App:
    """What the request handler needs, shared by all connections."""

    registry: CollectorRegistry
    ready: Callable[[], bool]
    credentials: tuple[bytes, bytes] | None  # SHA-256 of the user and of the password
    ssl_context: ssl.SSLContext | None
    collect_failing: threading.Event
    max_connections: int = MAX_CONNECTIONS
    request_timeout: float = REQUEST_TIMEOUT
    not_ready_reasons: Callable[[], Iterable[str]] | None = None


_TEXT = (("Content-Type", "text/plain; charset=utf-8"),)

_LANDING_PAGE = b"""<!DOCTYPE html>
<html lang="en">
<head><meta charset="utf-8"><title>driftwatch</title></head>
<body>
<h1>driftwatch</h1>
<p>Watches deployed binary classifiers: windowed AUC, class-ratio-normalized measures and
drift alarms.</p>
<ul>
<li><a href="metrics">metrics</a>: Prometheus metrics</li>
<li><a href="healthz">healthz</a>: liveness</li>
<li><a href="readyz">readyz</a>: readiness</li>
</ul>
</body>
</html>
"""
"""``/``: links to the endpoints, as exporters usually serve (relative links, so they also
work behind a reverse proxy's path prefix). Nothing on it needs protecting."""


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    server_version = f"driftwatch/{__version__}"

    def version_string(self) -> str:
        return self.server_version  # not the Python version: nothing for a scanner to match

    def parse_request(self) -> bool:
        parsed = super().parse_request()
        if parsed:
            self.server.mark_busy()
        return parsed

    def do_GET(self) -> None:
        url = urlsplit(self.path)
        if url.path == "/metrics":
            self._metrics(url.query)
        elif url.path == "/healthz":
            self._reply(200, b"ok")
        elif url.path == "/readyz":
            if self._ready():
                self._reply(200, b"ready")
            else:
                self._reply(503, self._not_ready_text())
        elif url.path == "/":
            self._reply(200, _LANDING_PAGE, (("Content-Type", "text/html; charset=utf-8"),))
        else:
            self._reply(404, b"not found")

    def do_HEAD(self) -> None:
        """As GET, status and headers (Content-Length included), without the body: uptime
        probes use HEAD. :meth:`_reply` leaves the body out."""
        self.do_GET()

    def _ready(self) -> bool:
        try:
            return bool(self.server.app.ready())
        except Exception:
            logger.warning("readiness check raised; reporting not ready", exc_info=True)
            return False

    def _not_ready_text(self) -> bytes:
        """``not ready``, with the reasons when the owner gives them (``not ready: kafka,
        checkpoint``), so ``kubectl describe pod`` shows why without a metrics query."""
        reasons_of = self.server.app.not_ready_reasons
        try:
            reasons = sorted(reasons_of()) if reasons_of is not None else []
        except Exception:
            logger.warning("not-ready reasons raised; answering without them", exc_info=True)
            reasons = []
        text = "not ready" + (": " + ", ".join(reasons) if reasons else "")
        return text.encode("ascii", "replace")

    def _metrics(self, query: str) -> None:
        app = self.server.app
        if app.credentials is not None and not self._authorized(app.credentials):
            self._reply(401, b"unauthorized",
                        [*_TEXT, ("WWW-Authenticate", 'Basic realm="driftwatch", charset="UTF-8"')])
            return
        encoder, content_type = choose_encoder(self.headers.get("Accept", ""))
        target: Collector = app.registry
        names = parse_qs(query).get("name[]")
        if names:
            target = cast(Collector, app.registry.restricted_registry(names))
        try:
            body = encoder(target)
        except Exception:
            # Log the first failure of a run of failures with its traceback, then stay quiet
            # until a scrape succeeds again: Prometheus retries every scrape interval.
            if not app.collect_failing.is_set():
                app.collect_failing.set()
                logger.exception("collecting metrics failed; answering 500 until it recovers")
            self._reply(500, b"collecting metrics failed")
            return
        if app.collect_failing.is_set():
            app.collect_failing.clear()
            logger.info("collecting metrics works again")
        headers = [("Content-Type", content_type)]
        if gzip_accepted(self.headers.get("Accept-Encoding", "")):
            body = gzip.compress(body)
            headers.append(("Content-Encoding", "gzip"))
        self._reply(200, body, headers)

    def _authorized(self, credentials: tuple[bytes, bytes]) -> bool:
        scheme, _, value = self.headers.get("Authorization", "").partition(" ")
        if scheme.lower() != "basic":
            return False
        try:
            decoded = base64.b64decode(value.strip(), validate=True)
        except (binascii.Error, ValueError):
            return False
        user, colon, password = decoded.partition(b":")
        # Compare digests, in constant time, and both of them: neither the lengths nor which
        # part was wrong leak through timing.
        user_ok = hmac.compare_digest(_digest(user), credentials[0])
        password_ok = hmac.compare_digest(_digest(password), credentials[1])
        return bool(colon) and user_ok and password_ok

    def _reply(self, status: int, body: bytes,
               headers: Iterable[tuple[str, str]] = _TEXT) -> None:
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        logger.debug("metrics server: %s - " + format, self.address_string(), *args)


class HttpCollector(Collector):
    """The metrics server's own series: open connections and those it closed early.

    ``driftwatch_http_connections_closed_total{reason}`` counts connections the server shut
    before their response: ``evicted`` (idle when the limit was reached and a newcomer
    arrived), ``refused`` (a newcomer finding every slot busy with a request) and ``timeout``
    (past the request timeout). A rising ``evicted`` or ``refused`` means clients are
    crowding the endpoint; a rising ``timeout`` means slow or stalled clients.
    """

    def __init__(self, stats: _Stats | None = None) -> None:
        self.stats = _Stats() if stats is None else stats

    def _families(self) -> tuple[GaugeMetricFamily, CounterMetricFamily]:
        return (
            GaugeMetricFamily(
                "driftwatch_http_connections",
                "Connections the metrics server holds open now (at most "
                "metrics.max_connections).",
            ),
            CounterMetricFamily(
                "driftwatch_http_connections_closed",
                "Connections the metrics server closed before answering: evicted (idle, "
                "at the connection limit), refused (every slot busy), timeout.",
                labels=("reason",),
            ),
        )

    def collect(self) -> Iterator[Metric]:
        connections, closed = self._families()
        connections.add_metric([], self.stats.open)
        for reason in _CLOSE_REASONS:
            closed.add_metric([reason], self.stats.closed[reason])
        return iter((connections, closed))

    def describe(self) -> Iterator[Metric]:
        return iter(self._families())


def _digest(value: bytes) -> bytes:
    return hashlib.sha256(value).digest()


def _display(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


class MetricsServer:
    """Serves ``/metrics``, ``/healthz`` and ``/readyz`` on a daemon thread.

    Endpoints:
        ``/metrics``: ``registry`` in the format the client asks for (Prometheus text or
        OpenMetrics), gzip-compressed when accepted, restricted by ``name[]`` query parameters.
        Behind basic auth when ``basic_auth`` is given: 401 with ``WWW-Authenticate`` otherwise.
        ``/healthz``: 200 ``ok`` while the process serves at all (liveness).
        ``/readyz``: 200 when ``ready()`` is true, else 503 (readiness; a ``ready`` that raises
        counts as not ready). ``/``: a small HTML page linking the three. The probes and the
        page stay open under basic auth: Kubernetes probes cannot carry secrets without
        writing them into the pod spec, and they reveal nothing but up/ready. Any other path:
        404. HEAD is answered on every path as GET is, without the body.

    Bounds: at most ``max_connections`` connections at once (each holds a thread and a
    descriptor) and each for at most ``request_timeout`` seconds from accept to the end of
    its response. At the limit the connection idle longest (connected, no complete request
    yet) is shut down for the newcomer, so a crowd of idle or trickling clients cannot lock
    Prometheus out; when every slot is answering a request the newcomer is closed unanswered.
    Descriptors and threads held by the server therefore never exceed ``max_connections``
    (plus the listening socket and its thread), whatever the clients do. Open connections and
    early closes are exported by an :class:`HttpCollector` the server registers in
    ``registry`` while it runs.

    Lifecycle: :meth:`start` binds and starts serving (or raises ``OSError`` naming host:port,
    with no chained traceback, when the address is taken or the TLS files cannot be loaded);
    :meth:`stop` stops accepting, closes the socket and returns within about
    :data:`POLL_INTERVAL`; connections in flight are daemon threads and do not delay exit.
    Also a context manager (start on enter, stop on exit). Not restartable.

    Parameters:
        registry: what ``/metrics`` exposes (a fresh ``CollectorRegistry`` holding a
            :class:`SnapshotCollector`, plus whatever else the agent registers).
        host: address to bind, e.g. ``"0.0.0.0"``, ``"::"`` or ``"127.0.0.1"``.
        port: TCP port; 0 picks a free one, see :attr:`port`.
        ready: readiness predicate, called on each ``/readyz`` from a server thread.
        not_ready_reasons: optional, what keeps the agent not ready (e.g. ``kafka``,
            ``checkpoint``), named in the 503 body of ``/readyz``.
        basic_auth: ``(user, password)`` required for ``/metrics``, or None; neither may be
            empty (configured auth is enforced auth).
        tls: ``(certfile, keyfile)`` PEM files to serve HTTPS (TLS 1.2 or newer), or None.
        max_connections: connections served at once (≥ 1).
        request_timeout: seconds a connection may last (> 0).
    """

    def __init__(
        self,
        registry: CollectorRegistry,
        host: str,
        port: int,
        ready: Callable[[], bool],
        basic_auth: tuple[str, str] | None = None,
        tls: tuple[str | os.PathLike[str], str | os.PathLike[str]] | None = None,
        max_connections: int = MAX_CONNECTIONS,
        request_timeout: float = REQUEST_TIMEOUT,
        not_ready_reasons: Callable[[], Iterable[str]] | None = None,
    ) -> None:
        if not isinstance(port, int) or not 0 <= port <= 65535:
            raise ValueError(f"port must be an integer in 0..65535, got {port!r}")
        if basic_auth is not None and not basic_auth[0]:
            raise ValueError("basic_auth: the user name must not be empty")
        if basic_auth is not None and not basic_auth[1]:
            raise ValueError("basic_auth: the password must not be empty")
        if not isinstance(max_connections, int) or max_connections < 1:
            raise ValueError(f"max_connections must be a positive integer, got "
                             f"{max_connections!r}")
        if not request_timeout > 0:
            raise ValueError(f"request_timeout must be positive, got {request_timeout!r}")
        self.max_connections = max_connections
        self.request_timeout = request_timeout
        self.registry = registry
        self.host = host
        self.requested_port = port
        self.ready = ready
        self.not_ready_reasons = not_ready_reasons
        self.basic_auth = basic_auth
        self.tls = tls
        self._server: _Server | None = None
        self._collector: HttpCollector | None = None
        self._thread: threading.Thread | None = None
        self._stopped = False

    def start(self) -> None:
        """Bind and serve on a daemon thread. Raises ``OSError`` naming the address on failure."""
        if self._server is not None or self._stopped:
            raise RuntimeError("MetricsServer.start: already started (servers do not restart)")
        where = _display(self.host, self.requested_port)
        context = self._ssl_context() if self.tls is not None else None
        credentials = None
        if self.basic_auth is not None:
            user, password = self.basic_auth
            credentials = (_digest(user.encode()), _digest(password.encode()))
        app = _App(self.registry, self.ready, credentials, context, threading.Event(),
                   self.max_connections, self.request_timeout, self.not_ready_reasons)
        try:
            infos = socket.getaddrinfo(self.host, self.requested_port, type=socket.SOCK_STREAM,
                                       flags=socket.AI_PASSIVE)
            family, *_, sockaddr = infos[0]
            server = _Server((str(sockaddr[0]), self.requested_port), family, app)
        except OSError as error:
            reason = error.strerror or str(error)
            raise OSError(error.errno, f"metrics server cannot listen on {where}: {reason}") \
                from None
        self._server = server
        self._collector = HttpCollector(server.stats)
        self.registry.register(self._collector)
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": POLL_INTERVAL},
            name=f"driftwatch-metrics-{self.port}", daemon=True,
        )
        self._thread.start()
        logger.info("serving metrics at %s", self.url)

    def _ssl_context(self) -> ssl.SSLContext:
        assert self.tls is not None
        certfile, keyfile = self.tls
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        try:
            context.load_cert_chain(certfile, keyfile)
        except OSError as error:  # ssl.SSLError is an OSError
            raise OSError(
                error.errno,
                f"metrics server cannot load TLS certificate {os.fspath(certfile)!s} "
                f"with key {os.fspath(keyfile)!s}: {error.strerror or error}",
            ) from None
        return context

    def stop(self, timeout: float = 5.0) -> None:
        """Stop serving and close the socket; idempotent; returns within ~POLL_INTERVAL."""
        self._stopped = True
        server, thread = self._server, self._thread
        if server is None or thread is None:
            return
        self._server = self._thread = None
        if thread.is_alive():
            server.shutdown()  # returns once serve_forever notices, within POLL_INTERVAL
        server.server_close()
        server.close_connections()
        thread.join(timeout)
        if self._collector is not None:
            self.registry.unregister(self._collector)
            self._collector = None

    @property
    def port(self) -> int:
        """The bound port (the one the OS chose when 0 was asked). Only while serving."""
        if self._server is None:
            raise RuntimeError("MetricsServer.port: the server is not running")
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        """The metrics URL, e.g. ``http://127.0.0.1:9464/metrics``. Only while serving."""
        scheme = "https" if self.tls is not None else "http"
        return f"{scheme}://{_display(self.host, self.port)}/metrics"

    def __enter__(self) -> MetricsServer:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()
