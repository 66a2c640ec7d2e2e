"""The metrics HTTP server: ``/metrics``, ``/healthz``, ``/readyz`` and a landing page.

:class:`MetricsServer` serves ``/metrics`` (content negotiation between the Prometheus text
format and OpenMetrics, gzip when asked, ``name[]`` filtering), ``/healthz``, ``/readyz`` and a
landing page at ``/``, for GET and HEAD, optionally behind basic auth and TLS. It answers on
its own threads and reads only its ``registry`` (the agent registers a
:class:`~driftwatch.sinks.prometheus.collector.SnapshotCollector` there, which renders the immutable
snapshot the loop publishes), so a scrape never touches the loop's state. It holds at most
``max_connections`` connections and each for at most ``request_timeout`` seconds, so no
client, however slow or numerous, can exhaust the agent's threads or file descriptors (see
:class:`MetricsServer`, and :mod:`driftwatch.sinks.prometheus.connections` for how);
:class:`HttpCollector` exports those connection counts.
"""

from __future__ import annotations

import base64
import binascii
import gzip
import hashlib
import hmac
import logging
import os
import socket
import ssl
import threading
from collections.abc import Callable, Iterable, Iterator
from http.server import BaseHTTPRequestHandler
from typing import Any, cast
from urllib.parse import parse_qs, urlsplit

from prometheus_client import CollectorRegistry
from prometheus_client.exposition import choose_encoder, gzip_accepted
from prometheus_client.metrics_core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from driftwatch import __version__
from driftwatch.sinks.prometheus.connections import (
    _CLOSE_REASONS,
    MAX_CONNECTIONS,
    POLL_INTERVAL,
    REQUEST_TIMEOUT,
    _App,
    _Server,
    _Stats,
)
from driftwatch.sinks.prometheus.exposition import encode

__all__ = [
    "GZIP_LEVEL",
    "MAX_CONNECTIONS",
    "POLL_INTERVAL",
    "REQUEST_TIMEOUT",
    "HttpCollector",
    "MetricsServer",
]

logger = logging.getLogger(__name__)



_TEXT = (("Content-Type", "text/plain; charset=utf-8"),)

GZIP_LEVEL = 1
"""zlib's fastest level for ``/metrics`` (Prometheus asks for gzip on every scrape): at
10 000 models the 40 MB body compresses to 4.3 MB in 0.16 s of CPU, against 3.3 MB in
1.5 s at Python's default level 9 (``python -m benchmarks fleet --scrape``)."""

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
        """``not ready``, with the reasons when the owner gives them (``not ready: kafka:
        why; checkpoint: why``), so ``kubectl describe pod`` shows why without a metrics
        query."""
        reasons_of = self.server.app.not_ready_reasons
        try:
            reasons = sorted(reasons_of()) if reasons_of is not None else []
        except Exception:
            logger.warning("not-ready reasons raised; answering without them", exc_info=True)
            reasons = []
        text = "not ready" + (": " + "; ".join(reasons) if reasons else "")
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
            body = encode(target, encoder)
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
            body = gzip.compress(body, compresslevel=GZIP_LEVEL)
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
            server = _Server((str(sockaddr[0]), self.requested_port), family, app, _Handler)
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
