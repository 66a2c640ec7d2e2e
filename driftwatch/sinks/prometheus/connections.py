"""The metrics server's connections: at most ``max_connections``, each for a bounded time.

:class:`_Server` is the ``ThreadingHTTPServer`` under
:class:`~driftwatch.sinks.prometheus.server.MetricsServer`: one thread per connection, the TLS
handshake on that thread, and a bound enforced in the accept loop before any thread starts, so that
no client, however slow or numerous, can
exhaust the agent's threads or file descriptors. What it serves is the request handler's
business (:mod:`driftwatch.sinks.prometheus.server`); :class:`_App` carries what both need.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import socketserver
import ssl
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from prometheus_client import CollectorRegistry

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
                 app: _App, handler: type[BaseHTTPRequestHandler]) -> None:
        self.address_family = family
        self.app = app
        self.stats = _Stats()
        self._connections: dict[int, _Connection] = {}  # in accept order
        self._lock = threading.Lock()
        self._slot_freed = threading.Condition(self._lock)
        self._local = threading.local()
        super().__init__(address, handler)

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
