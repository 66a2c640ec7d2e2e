"""Prometheus exposition: a collector over an immutable agent snapshot, and its HTTP server.

The agent's loop thread owns the monitors; the HTTP server answers scrapes on its own threads.
They meet in one place only: a ``source`` callable that returns the latest
:class:`AgentSnapshot`, an immutable value the loop replaces wholesale (one attribute
assignment, atomic in CPython). :class:`SnapshotCollector` calls it once per scrape and builds
every metric family from that one value, so a scrape never sees half-updated state and
processing an event costs the exporter nothing.

Metrics (label sets in braces)::

    driftwatch_events_processed_total{model}                    counter
    driftwatch_events_rejected_total{reason}                    counter
    driftwatch_measure{model,measure}                           gauge   raw value
    driftwatch_measure_normalized{model,measure}                gauge   class-ratio-normalized
    driftwatch_measure_threshold{model,measure}                 gauge   adjusted raw threshold
    driftwatch_window_events{model,class}                       gauge   class = positive|negative
    driftwatch_detector_state{model,measure,detector}           gauge   0 stable, 1 warning, 2 drift
    driftwatch_alarms_total{model,measure,detector,level}       counter
    driftwatch_last_event_timestamp_seconds{model}              gauge   event time (``ts``)
    driftwatch_last_alarm_timestamp_seconds{model}              gauge   event time (``ts``)
    driftwatch_last_processed_timestamp_seconds{model}          gauge   wall clock
    driftwatch_auc_floor{model}                                 gauge   alert thresholds from
    driftwatch_auc_max_drop{model}                              gauge     the settings'
    driftwatch_no_events_seconds{model}                         gauge     ``alerts`` section
    driftwatch_batch_labels{model}                              gauge     (1 or 0)
    driftwatch_consumer_lag_records{topic,partition}            gauge
    driftwatch_ready                                            gauge   1 ready, 0 not
    driftwatch_start_time_seconds                               gauge   Unix time
    driftwatch_build_info{version}                              gauge   always 1

Two choices shape the alert rules and dashboards:

- **Undefined values are omitted, not exported as NaN.** A measure is undefined when its window
  cannot define it (AUC with no positive or no negative, precision with no predicted positive),
  and a threshold is undefined until the first sample. PromQL comparisons with NaN are false
  either way, so ``driftwatch_measure < on(model, measure) driftwatch_measure_threshold`` does
  not fire on an undefined window whichever is chosen; but one NaN poisons ``avg``, ``sum``,
  ``avg_over_time`` and every recording rule built on them (an ``avg_over_time(...[15m]) < 0.7``
  alert would stay silent for 15 minutes after a single undefined scrape), and Grafana shows
  "NaN" in stat panels. An omitted sample is a gap: Prometheus marks the series stale, range
  functions use the defined points, Grafana draws a gap and applies its "no data" handling.
  "Why is AUC missing" stays answerable: ``driftwatch_window_events{class="positive"} == 0``,
  or ``driftwatch_events_processed_total unless on(model) driftwatch_measure{measure="auc"}``.
  Likewise a timestamp of something that has not happened yet (no event carried ``ts``, no
  alarm so far) is omitted rather than exported as 0, which would read as "1970".
- **Detector state is one ordinal gauge** (0 stable, 1 warning, 2 drift) rather than a
  StateSet: the states are ordered by severity, so ``== 2``, ``>= 1`` and
  ``max by (model) (driftwatch_detector_state)`` (the worst detector of a model) are one-liners,
  a Grafana state-timeline panel maps the three values to colours, and it is one series per
  detector instead of three. Drift is a one-step state (the detector restarts on its next
  input, ``sample_every`` events later), so it can fall between two scrapes: alert on
  ``increase(driftwatch_alarms_total{level="drift"}[5m]) > 0``. For that to catch the first
  alarm the counter must exist before it, so every (measure, detector) with a detector gets its
  ``warning`` and ``drift`` series, and every floored measure its ``threshold`` series, at 0.

The alert thresholds (``alerts`` in the settings, per model with defaults) are exported as
gauges next to the measures they judge, with the same labels, so that one rule set serves
every model: ``driftwatch_measure{measure="auc"} < ignoring(measure) driftwatch_auc_floor``.
The rules then need no per-model constants, and a threshold changes with the settings file,
not with the rules.

The HTTP side, :class:`MetricsServer`, serves ``/metrics`` (content negotiation between the
Prometheus text format and OpenMetrics, gzip when asked, ``name[]`` filtering), ``/healthz`` and
``/readyz``, optionally behind basic auth and TLS.
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
import socketserver
import ssl
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, cast
from urllib.parse import parse_qs, urlsplit

from prometheus_client import CollectorRegistry
from prometheus_client.exposition import choose_encoder, gzip_accepted
from prometheus_client.metrics_core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    InfoMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector

from driftwatch import __version__

if TYPE_CHECKING:
    # Only for annotations: the collector reads attributes, so the exporter does not need the
    # core's detector modules loaded to be imported.
    from driftwatch.core.monitor import Snapshot
    from driftwatch.settings import AlertThresholds

__all__ = [
    "DETECTOR_STATE_CODES",
    "AgentSnapshot",
    "MetricsServer",
    "SnapshotCollector",
]

logger = logging.getLogger(__name__)

DETECTOR_STATE_CODES: Mapping[str, int] = MappingProxyType({"stable": 0, "warning": 1, "drift": 2})
"""The value of ``driftwatch_detector_state`` for each detector state, ordered by severity."""

_DETECTOR_LEVELS = ("warning", "drift")
"""Alarm levels a detector can raise; their counters are exported at 0 before the first one."""

_THRESHOLD = "threshold"
"""Detector name and level of a floor crossing (see :class:`driftwatch.core.monitor.Watch`)."""


@dataclass(frozen=True, slots=True)
class AgentSnapshot:
    """Everything the exporter shows, as one immutable value.

    The agent builds it on its loop thread (never on the HTTP thread, which would race the
    monitors) and publishes it by replacing a reference; the collector only reads it. The
    mappings are copied into read-only views on construction, so the agent may keep mutating
    the dicts it built them from.

    Attributes:
        monitors: one :class:`~driftwatch.core.monitor.Snapshot` per model; model ids must be
            distinct. Each one's ``events`` is the model's processed-events counter.
        rejected: rejected records by reason (including ``"too_many_models"``). Reasons the
            agent knows in advance should be present at 0, so the first rejection shows up in
            ``increase()``.
        consumer_lag: records between the committed offset and the end of each assigned
            ``(topic, partition)``.
        ready: whether the agent is ready (assigned partitions, state restored).
        started_time: when the agent started, Unix seconds.
        last_processed: per model, the wall-clock time (Unix seconds) when the agent last
            took an event of it into its monitor; for a model restored from a checkpoint
            and silent since, when the agent started. What a "no events" alert measures.
    """

    monitors: tuple[Snapshot, ...]
    rejected: Mapping[str, int]
    consumer_lag: Mapping[tuple[str, int], int]
    ready: bool
    started_time: float
    last_processed: Mapping[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        monitors = tuple(self.monitors)
        models = [m.model for m in monitors]
        if len(set(models)) != len(models):
            duplicates = sorted({m for m in models if models.count(m) > 1})
            raise ValueError(f"monitors: model ids must be distinct, repeated: {duplicates}")
        object.__setattr__(self, "monitors", monitors)
        object.__setattr__(self, "rejected", MappingProxyType(dict(self.rejected)))
        object.__setattr__(self, "consumer_lag", MappingProxyType(dict(self.consumer_lag)))
        object.__setattr__(self, "last_processed",
                           MappingProxyType(dict(self.last_processed)))

    @classmethod
    def empty(cls, started_time: float) -> AgentSnapshot:
        """The snapshot of an agent that has started but processed nothing and is not ready."""
        return cls(monitors=(), rejected={}, consumer_lag={}, ready=False,
                   started_time=started_time)


class _Families:
    """The metric families of one scrape, created empty; :meth:`fill` adds the samples."""

    def __init__(self) -> None:
        self.processed = CounterMetricFamily(
            "driftwatch_events_processed_total",
            "Events taken into the model's monitor (kept across restarts by the checkpoint).",
            labels=("model",),
        )
        self.rejected = CounterMetricFamily(
            "driftwatch_events_rejected_total",
            "Records rejected before reaching a monitor, by reason.",
            labels=("reason",),
        )
        self.measure = GaugeMetricFamily(
            "driftwatch_measure",
            "Measure over the model's window, raw; absent while undefined "
            "(e.g. AUC without both classes).",
            labels=("model", "measure"),
        )
        self.normalized = GaugeMetricFamily(
            "driftwatch_measure_normalized",
            "Measure normalized for the window's class ratio: share of all confusion matrices "
            "at this P:N scoring at most the raw value; absent while undefined.",
            labels=("model", "measure"),
        )
        self.threshold = GaugeMetricFamily(
            "driftwatch_measure_threshold",
            "Raw threshold equivalent to the measure's normalized floor at the current class "
            "ratio; compare with driftwatch_measure.",
            labels=("model", "measure"),
        )
        self.window = GaugeMetricFamily(
            "driftwatch_window_events",
            "Events in the model's window, by true class.",
            labels=("model", "class"),
        )
        self.detector_state = GaugeMetricFamily(
            "driftwatch_detector_state",
            "Detector state after its latest input: 0 stable, 1 warning, 2 drift "
            "(drift lasts one sample).",
            labels=("model", "measure", "detector"),
        )
        self.alarms = CounterMetricFamily(
            "driftwatch_alarms_total",
            "Alarms raised: detector warnings and drifts, and floor crossings "
            '(detector="threshold").',
            labels=("model", "measure", "detector", "level"),
        )
        self.last_event = GaugeMetricFamily(
            "driftwatch_last_event_timestamp_seconds",
            "Event time (ts) of the model's latest event that carried one, Unix seconds.",
            labels=("model",),
        )
        self.last_alarm = GaugeMetricFamily(
            "driftwatch_last_alarm_timestamp_seconds",
            "Event time (ts) of the event that raised the model's latest alarm, Unix seconds.",
            labels=("model",),
        )
        self.last_processed = GaugeMetricFamily(
            "driftwatch_last_processed_timestamp_seconds",
            "Wall-clock time the agent last processed an event of the model (or started, for "
            "a model restored from the checkpoint and silent since), Unix seconds.",
            labels=("model",),
        )
        self.auc_floor = GaugeMetricFamily(
            "driftwatch_auc_floor",
            "Alert threshold from the settings (alerts): AUC below this fires the AUC floor "
            "alerts.",
            labels=("model",),
        )
        self.auc_max_drop = GaugeMetricFamily(
            "driftwatch_auc_max_drop",
            "Alert threshold from the settings (alerts): largest AUC drop below the model's "
            "6-hour average that is not an alert.",
            labels=("model",),
        )
        self.no_events_seconds = GaugeMetricFamily(
            "driftwatch_no_events_seconds",
            "Alert threshold from the settings (alerts): seconds without events before the "
            "no-events alert fires.",
            labels=("model",),
        )
        self.batch_labels = GaugeMetricFamily(
            "driftwatch_batch_labels",
            "1 when the settings (alerts) mark the model's labels as arriving in batches: "
            "no paging no-events alert for it.",
            labels=("model",),
        )
        self.lag = GaugeMetricFamily(
            "driftwatch_consumer_lag_records",
            "Records between the consumer's position and the end of the partition.",
            labels=("topic", "partition"),
        )
        self.ready = GaugeMetricFamily(
            "driftwatch_ready",
            "1 when the agent is ready (partitions assigned, state restored), else 0.",
        )
        self.start_time = GaugeMetricFamily(
            "driftwatch_start_time_seconds",
            "When the agent started, Unix seconds.",
        )
        self.build = InfoMetricFamily(
            "driftwatch_build",
            "driftwatch version; the value is always 1.",
        )

    def all(self) -> list[Metric]:
        return [
            self.processed, self.rejected, self.measure, self.normalized, self.threshold,
            self.window, self.detector_state, self.alarms, self.last_event, self.last_alarm,
            self.last_processed, self.auc_floor, self.auc_max_drop, self.no_events_seconds,
            self.batch_labels, self.lag, self.ready, self.start_time, self.build,
        ]

    def fill(self, agent: AgentSnapshot,
             thresholds: Callable[[str], AlertThresholds] | None = None) -> None:
        for snap in agent.monitors:
            self._fill_monitor(snap)
            last = agent.last_processed.get(snap.model)
            if last is not None:
                self.last_processed.add_metric([snap.model], last)
            if thresholds is not None:
                self._fill_thresholds(snap.model, thresholds(snap.model))
        for reason, count in sorted(agent.rejected.items()):
            self.rejected.add_metric([reason], count)
        for (topic, partition), lag in sorted(agent.consumer_lag.items()):
            self.lag.add_metric([topic, str(partition)], lag)
        self.ready.add_metric([], 1.0 if agent.ready else 0.0)
        self.start_time.add_metric([], agent.started_time)
        self.build.add_metric([], {"version": __version__})

    def _fill_monitor(self, snap: Snapshot) -> None:
        model = snap.model
        self.processed.add_metric([model], snap.events)
        _add_defined(self.measure, model, snap.values)
        _add_defined(self.normalized, model, snap.normalized)
        _add_defined(self.threshold, model, snap.thresholds)
        self.window.add_metric([model, "positive"], snap.positives)
        self.window.add_metric([model, "negative"], snap.negatives)
        for (measure, detector), state in sorted(snap.detector_states.items()):
            code = DETECTOR_STATE_CODES.get(state)
            if code is None:  # not a state the core produces; never guess a severity
                continue
            self.detector_state.add_metric([model, measure, detector], code)
        for (measure, detector, level), count in _alarm_counts(snap):
            self.alarms.add_metric([model, measure, detector, level], count)
        if snap.last_event_time is not None:
            self.last_event.add_metric([model], snap.last_event_time)
        if snap.last_alarm_time is not None:
            self.last_alarm.add_metric([model], snap.last_alarm_time)

    def _fill_thresholds(self, model: str, alert: AlertThresholds) -> None:
        self.auc_floor.add_metric([model], alert.auc_floor)
        self.auc_max_drop.add_metric([model], alert.auc_max_drop)
        self.no_events_seconds.add_metric([model], alert.no_events_seconds)
        self.batch_labels.add_metric([model], 1.0 if alert.batch_labels else 0.0)


def _add_defined(family: GaugeMetricFamily, model: str, values: Mapping[str, float]) -> None:
    for measure, value in sorted(values.items()):
        if value == value:  # NaN is the only value unequal to itself: undefined, omitted
            family.add_metric([model, measure], value)


def _alarm_counts(snap: Snapshot) -> Iterable[tuple[tuple[str, str, str], int]]:
    """The snapshot's alarm counts, plus a 0 for every alarm its watches could still raise."""
    counts: dict[tuple[str, str, str], int] = {}
    for measure, detector in snap.detector_states:
        for level in _DETECTOR_LEVELS:
            counts[(measure, detector, level)] = 0
    for measure in snap.thresholds:
        counts[(measure, _THRESHOLD, _THRESHOLD)] = 0
    counts.update(snap.alarms)
    return sorted(counts.items())


class SnapshotCollector(Collector):
    """A Prometheus collector that renders the latest :class:`AgentSnapshot` at each scrape.

    ``source`` is called once per scrape, on the HTTP server's thread: it must be cheap and
    thread-safe, typically returning an attribute the agent's loop replaces. Every family is
    built fresh from that one value (no state is kept between scrapes), so the per-event cost
    is zero and the scrape cost is O(models × measures). If ``source`` raises, the scrape fails
    (HTTP 500, Prometheus sets ``up`` to 0) rather than showing partial data.

    ``thresholds``, when given, maps a model id to its alert thresholds (the settings'
    ``alerts.thresholds``); they are exported for every model the snapshot holds, with the
    same labels as its measures.

    :meth:`describe` lists the families without calling ``source``, so registering the
    collector does not scrape it.

    Example:
        >>> from prometheus_client import CollectorRegistry
        >>> registry = CollectorRegistry()
        >>> registry.register(SnapshotCollector(lambda: AgentSnapshot.empty(1.7e9)))
        >>> registry.get_sample_value("driftwatch_start_time_seconds")
        1700000000.0
    """

    def __init__(self, source: Callable[[], AgentSnapshot],
                 thresholds: Callable[[str], AlertThresholds] | None = None) -> None:
        self.source = source
        self.thresholds = thresholds

    def collect(self) -> Iterator[Metric]:
        families = _Families()
        families.fill(self.source(), self.thresholds)
        return iter(families.all())

    def describe(self) -> Iterator[Metric]:
        return iter(_Families().all())


# ------------------------------------------------------------------------------------------------
# HTTP


HANDSHAKE_TIMEOUT = 10.0
"""Seconds a client gets to finish the TLS handshake and then to send each request.

A scrape is a few kB over a live connection; ten seconds is far above any healthy client and
keeps a stalled or hostile client from holding a server thread indefinitely.
"""

POLL_INTERVAL = 0.1
"""Seconds between the accept loop's checks for :meth:`MetricsServer.stop`; bounds stop().

An idle server wakes ten times a second for one ``select`` call, unmeasurable next to the
agent's work; in exchange the agent's shutdown on SIGTERM waits at most 0.1 s for it.
"""


class _Server(ThreadingHTTPServer):
    """One thread per connection, TLS handshake on that thread, quiet on client errors."""

    daemon_threads = True  # a stuck client never keeps the process alive at exit

    def __init__(self, address: tuple[str, int], family: socket.AddressFamily,
                 app: _App) -> None:
        self.address_family = family
        self.app = app
        super().__init__(address, _Handler)

    def server_bind(self) -> None:
        # HTTPServer.server_bind resolves the host's FQDN, a DNS lookup that can stall start-up
        # for seconds and whose result nothing here uses.
        socketserver.TCPServer.server_bind(self)
        host, port = self.server_address[:2]
        self.server_name = str(host)
        self.server_port = int(port)

    def finish_request(self, request: Any, client_address: Any) -> None:
        context = self.app.ssl_context
        if context is None:
            super().finish_request(request, client_address)
            return
        # The handshake runs here, on the connection's own thread, not in the accept loop,
        # where one slow client would block every other scrape and probe.
        request.settimeout(HANDSHAKE_TIMEOUT)
        tls = context.wrap_socket(request, server_side=True)
        try:
            super().finish_request(tls, client_address)
        finally:
            self.shutdown_request(tls)

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


_TEXT = (("Content-Type", "text/plain; charset=utf-8"),)


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    timeout = HANDSHAKE_TIMEOUT
    server_version = f"driftwatch/{__version__}"

    def version_string(self) -> str:
        return self.server_version  # not the Python version: nothing for a scanner to match

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
                self._reply(503, b"not ready")
        else:
            self._reply(404, b"not found")

    def _ready(self) -> bool:
        try:
            return bool(self.server.app.ready())
        except Exception:
            logger.warning("readiness check raised; reporting not ready", exc_info=True)
            return False

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
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        logger.debug("metrics server: %s - " + format, self.address_string(), *args)


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
        counts as not ready). The probes stay open under basic auth: Kubernetes probes cannot
        carry secrets without writing them into the pod spec, and they reveal nothing but
        up/ready. Any other path: 404.

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
        basic_auth: ``(user, password)`` required for ``/metrics``, or None.
        tls: ``(certfile, keyfile)`` PEM files to serve HTTPS (TLS 1.2 or newer), or None.
    """

    def __init__(
        self,
        registry: CollectorRegistry,
        host: str,
        port: int,
        ready: Callable[[], bool],
        basic_auth: tuple[str, str] | None = None,
        tls: tuple[str | os.PathLike[str], str | os.PathLike[str]] | None = None,
    ) -> None:
        if not isinstance(port, int) or not 0 <= port <= 65535:
            raise ValueError(f"port must be an integer in 0..65535, got {port!r}")
        if basic_auth is not None and not basic_auth[0]:
            raise ValueError("basic_auth: the user name must not be empty")
        self.registry = registry
        self.host = host
        self.requested_port = port
        self.ready = ready
        self.basic_auth = basic_auth
        self.tls = tls
        self._server: _Server | None = None
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
        app = _App(self.registry, self.ready, credentials, context, threading.Event())
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
        thread.join(timeout)

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
