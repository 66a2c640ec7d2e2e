"""Helpers of the integration tests: the agent and Prometheus as real processes, Kafka I/O.

Nothing here is mocked. :class:`AgentProcess` runs ``python -m driftwatch run --config FILE``
as a subprocess with its output in a log file; :class:`Metrics` is a parsed scrape of its
real ``/metrics``; :class:`PrometheusProcess` is the Debian ``prometheus`` binary scraping it.
Every wait is bounded (:func:`wait_for`), every server listens on 127.0.0.1 only, and the
fixtures in ``conftest.py`` kill whatever is still running at teardown.
"""

from __future__ import annotations

import contextlib
import copy
import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypeVar

import yaml  # type: ignore[import-untyped, unused-ignore]
from kafka import KafkaConsumer, KafkaProducer
from kafka import TopicPartition as KafkaTopicPartition
from kafka.admin import KafkaAdminClient, NewTopic
from prometheus_client.parser import text_string_to_metric_families

from driftwatch.core.events import Event
from driftwatch.demo.broker import _die_with_parent as die_with_parent

T = TypeVar("T")

HOST = "127.0.0.1"
TOPIC = "events"

JOIN_S = 60.0
"""Bound on an agent joining its group and getting its partition. A join takes about 3 s on
Tansu with the short group timing set in :func:`agent_settings` (plus the session timeout of
a SIGKILLed member that still holds the partition), and a first join was seen to take 9 s
with four busy processes beside the test; the rest is margin for a loaded 2-core CI runner.
A passing test never waits this long: the bound only decides when a stuck one fails."""

START_S = 20.0
"""Bound on a process (agent or Prometheus) answering HTTP after it was started."""

STOP_S = 10.0
"""Bound on a clean stop. The agent's own bound is one poll (0.2 s here) plus its bounded
shutdown steps (a commit and a leave-group of at most 5 s each with a dead broker)."""

MAX_PRODUCE_BYTES = 8 * 1024 * 1024
"""The test producer's max_request_size: room for the 5 MB record of the bad-records test
(kafka-python's default, 1 MiB, would refuse it before it reaches the broker)."""


# ------------------------------------------------------------------------------------------
# waiting


def wait_for(
    condition: Callable[[], T],
    timeout_s: float,
    what: str,
    *,
    interval_s: float = 0.1,
    diagnostics: Callable[[], str] | None = None,
) -> T:
    """Call ``condition`` until it returns something truthy, and return that; fail after
    ``timeout_s`` with ``what`` (and ``diagnostics()``, e.g. a log tail) in the message."""
    deadline = time.monotonic() + timeout_s
    while True:
        result = condition()
        if result:
            return result
        if time.monotonic() >= deadline:
            extra = f"\n{diagnostics()}" if diagnostics is not None else ""
            raise AssertionError(f"timed out after {timeout_s:.0f} s waiting for {what}{extra}")
        time.sleep(interval_s)


def http_get(url: str, timeout_s: float = 5.0) -> tuple[int, bytes]:
    """``(status, body)`` of a GET; ``(0, b"")`` when nothing answers."""
    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()
    except (urllib.error.URLError, OSError):
        return 0, b""


# ------------------------------------------------------------------------------------------
# metrics

STATE_METRICS = frozenset({
    "driftwatch_events_processed_total",
    "driftwatch_events_rejected_total",
    "driftwatch_measure",
    "driftwatch_measure_normalized",
    "driftwatch_measure_threshold",
    "driftwatch_auc_standard_error",
    "driftwatch_window_events",
    "driftwatch_detector_state",
    "driftwatch_alarms_total",
    "driftwatch_last_event_timestamp_seconds",
    "driftwatch_last_alarm_timestamp_seconds",
})
"""Samples about the monitors and the records, as opposed to the process (timing, commits,
saves, readiness, lag): a restarted agent must reproduce these exactly."""

Labels = frozenset[tuple[str, str]]


@dataclass(frozen=True)
class Metrics:
    """One scrape of ``/metrics``, parsed by prometheus_client's own text parser.

    ``samples`` maps ``(sample name, labels)`` to the value. Lookups take labels as keyword
    arguments (``class`` through ``**{"class": "positive"}``).
    """

    samples: Mapping[tuple[str, Labels], float]

    @classmethod
    def parse(cls, text: str) -> Metrics:
        samples: dict[tuple[str, Labels], float] = {}
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                key = (sample.name, frozenset(sample.labels.items()))
                assert key not in samples, f"duplicate sample {key}"
                samples[key] = sample.value
        return cls(samples)

    def get(self, name: str, **labels: str) -> float | None:
        """The value of the sample with exactly these labels, or None when it is absent."""
        return self.samples.get((name, frozenset(labels.items())))

    def series(self, name: str, **labels: str) -> dict[Labels, float]:
        """Every sample of ``name`` whose labels include ``labels``."""
        wanted = set(labels.items())
        return {
            sample_labels: value
            for (sample_name, sample_labels), value in self.samples.items()
            if sample_name == name and wanted <= sample_labels
        }

    def total(self, name: str, **labels: str) -> float:
        """The sum of :meth:`series` (0 when there is none)."""
        return sum(self.series(name, **labels).values())

    def by_label(self, name: str, label: str, **labels: str) -> dict[str, float]:
        """``{value of label: sample value}`` over :meth:`series`."""
        return {dict(key)[label]: value for key, value in self.series(name, **labels).items()}

    def state(self) -> dict[tuple[str, Labels], float]:
        """The samples that describe the monitors' state (see :data:`STATE_METRICS`): what an
        interrupted-and-resumed agent must reproduce exactly."""
        return {key: value for key, value in self.samples.items() if key[0] in STATE_METRICS}

    def excluding(self, *names: str) -> dict[tuple[str, Labels], float]:
        """Every sample except those of the given names."""
        return {key: value for key, value in self.samples.items() if key[0] not in names}


# ------------------------------------------------------------------------------------------
# Kafka


def create_topics(bootstrap: str, *names: str, partitions: int = 1,
                  configs: Mapping[str, str] | None = None) -> None:
    """Create the topics and wait until the broker's metadata shows each with a leader for
    every partition: Apache Kafka answers CreateTopics before its metadata has the topic, so
    a client asking at once can be told it does not exist."""
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.create_topics([NewTopic(name, partitions, 1, topic_configs=dict(configs or {}))
                             for name in names])

        def led() -> bool:
            described = admin.describe_topics(list(names))
            return len(described) == len(names) and all(
                topic["error_code"] == 0 and len(topic["partitions"]) == partitions
                and all(p["leader_id"] >= 0 for p in topic["partitions"]) for topic in described)

        wait_for(led, 30.0, f"topics {names} to have leaders")
    finally:
        admin.close()


def produce(
    bootstrap: str,
    topic: str,
    values: Iterable[bytes | None],
    *,
    keys: Iterable[bytes | None] | None = None,
) -> list[int]:
    """Send ``values`` (in order, to partition 0) and wait for every ack; return the offsets."""
    producer = KafkaProducer(
        bootstrap_servers=bootstrap, max_request_size=MAX_PRODUCE_BYTES, linger_ms=5,
        batch_size=256 * 1024,
    )
    try:
        value_list = list(values)
        key_list = list(keys) if keys is not None else [None] * len(value_list)
        assert len(key_list) == len(value_list)
        futures = [
            producer.send(topic, value=value, key=key, partition=0)
            for key, value in zip(key_list, value_list, strict=True)
        ]
        producer.flush(timeout=30)
        return [future.get(timeout=30).offset for future in futures]
    finally:
        producer.close(timeout=5)


def consume(bootstrap: str, topic: str, count: int, timeout_s: float = 20.0) -> list[Any]:
    """The first ``count`` records of partition 0 of ``topic``, read without a group.

    Fails if fewer arrive within ``timeout_s``; waits one more short poll so that an
    unexpected extra record is returned too (the caller compares the whole list).
    """
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest",
                             enable_auto_commit=False)
    try:
        consumer.assign([KafkaTopicPartition(topic, 0)])
        got: list[Any] = []

        def enough() -> bool:
            for batch in consumer.poll(timeout_ms=200).values():
                got.extend(batch)
            return len(got) >= count

        wait_for(enough, timeout_s, f"{count} records on {topic}", interval_s=0,
                 diagnostics=lambda: f"got {len(got)}: {[r.headers for r in got]}")
        for batch in consumer.poll(timeout_ms=300).values():
            got.extend(batch)
        return got
    finally:
        consumer.close()


def event_json(event: Event, model: str | None = None) -> bytes:
    """An event as the JSON record value producers send (``prediction`` left to the agent)."""
    value: dict[str, Any] = {"label": event.y_true, "score": event.y_score}
    if event.ts is not None:
        value["ts"] = event.ts
    if model is not None:
        value["model"] = model
    return json.dumps(value).encode()


# ------------------------------------------------------------------------------------------
# the agent


def deep_merge(base: Mapping[str, Any], overrides: Mapping[str, Any]) -> dict[str, Any]:
    """``base`` with ``overrides`` applied key by key (mappings merged, anything else replaced)."""
    merged = copy.deepcopy(dict(base))
    for key, value in overrides.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
            merged[key] = deep_merge(merged[key], value)
        else:
            merged[key] = copy.deepcopy(value)
    return merged


def agent_settings(
    bootstrap: str,
    *,
    port: int,
    group: str,
    checkpoint_dir: Path,
    topic: str = TOPIC,
    overrides: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A settings file's content for an agent of the tests.

    Group timing is short (Tansu holds a JoinGroup for up to max_poll_interval_ms), set
    explicitly so the tests do not depend on the defaults. A short poll timeout makes stops
    prompt; short reconnect backoffs make the broker-loss test fast; metrics on loopback.
    """
    base: dict[str, Any] = {
        "kafka": {
            "bootstrap_servers": [bootstrap],
            "topics": [topic],
            "group_id": group,
            "poll_timeout_ms": 200,
            "max_poll_interval_ms": 5000,
            "session_timeout_ms": 6000,
            "heartbeat_interval_ms": 1000,
            "reconnect_backoff_initial_seconds": 0.1,
            "reconnect_backoff_max_seconds": 1.0,
        },
        "metrics": {"host": HOST, "port": port},
        "checkpoint": {"backend": "file", "directory": str(checkpoint_dir),
                       "interval_seconds": 1},
        "logging": {"level": "INFO", "format": "text"},
    }
    return deep_merge(base, overrides or {})


def clean_environment() -> dict[str, str]:
    """This process's environment without DRIFTWATCH_* variables (they override settings)."""
    return {k: v for k, v in os.environ.items() if not k.upper().startswith("DRIFTWATCH_")}


LAUNCHED: list[AgentProcess] = []
"""Every agent process launched by this test process, for the teardown that kills those a
failed test left running (``tests/integration/conftest.py``)."""


class AgentProcess:
    """``python -m driftwatch run --config FILE`` as a real subprocess.

    The settings are written to ``<directory>/<name>.yaml``, the agent's log (stdout and
    stderr) is appended to ``<directory>/<name>.log``. :meth:`start` may be called again
    after the process exited (a restart with the same settings, checkpoint and group). The
    process gets SIGKILL if the thread that launched it ends (``prctl(PR_SET_PDEATHSIG)``).
    """

    def __init__(self, settings: Mapping[str, Any], directory: Path, name: str) -> None:
        self.settings = dict(settings)
        self.name = name
        self.directory = directory
        self.config_path = directory / f"{name}.yaml"
        self.log_path = directory / f"{name}.log"
        self.port = int(settings["metrics"]["port"])
        self.proc: subprocess.Popen[bytes] | None = None
        self.config_path.write_text(yaml.safe_dump(self.settings, sort_keys=False))

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}"

    # -- lifecycle ----------------------------------------------------------------------------

    def launch(self) -> AgentProcess:
        """Start the process without waiting for anything."""
        assert not self.running, "agent already running"
        with self.log_path.open("ab") as log:
            log.write(f"--- {self.name}: start\n".encode())
            log.flush()
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "driftwatch", "run", "--config", str(self.config_path)],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=clean_environment(),
                cwd=self.directory,
                start_new_session=True,  # a Ctrl+C of pytest is not delivered to it
                # Nor does it outlive the test process (killed, timed out): a leftover agent
                # retries its broker for ever, a core busy for nothing.
                preexec_fn=die_with_parent(),
            )
        if self not in LAUNCHED:
            LAUNCHED.append(self)
        return self

    def start(self) -> AgentProcess:
        """Start the process and wait until its HTTP server answers ``/healthz``."""
        self.launch()

        def healthy() -> bool:
            if not self.running:
                raise AssertionError(f"agent exited with {self.returncode}:\n{self.log()}")
            return http_get(f"{self.url}/healthz", 1.0)[0] == 200

        wait_for(healthy, START_S, f"{self.name} /healthz", diagnostics=self.log)
        return self

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    @property
    def returncode(self) -> int | None:
        return None if self.proc is None else self.proc.poll()

    def send_signal(self, signum: int) -> None:
        assert self.proc is not None
        self.proc.send_signal(signum)

    def wait_exit(self, timeout_s: float = STOP_S) -> int:
        """Wait for the process to exit; return its exit status (fail after ``timeout_s``)."""
        assert self.proc is not None
        try:
            return self.proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            raise AssertionError(
                f"{self.name} still running {timeout_s} s later:\n{self.log()}"
            ) from None

    def stop(self, signum: int = signal.SIGTERM, timeout_s: float = STOP_S) -> tuple[int, float]:
        """Signal the agent and wait for it to exit: ``(exit status, seconds it took)``."""
        started = time.monotonic()
        self.send_signal(signum)
        code = self.wait_exit(timeout_s)
        return code, time.monotonic() - started

    def kill(self) -> None:
        """SIGKILL and reap, if still running (fixture teardown)."""
        proc = self.proc
        if proc is not None and proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            proc.wait(timeout=STOP_S)

    def output(self) -> str:
        """Everything the agent wrote so far (all of its runs)."""
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""

    def log(self, limit: int = 6000) -> str:
        """The tail of :meth:`output`, for failure messages."""
        return f"--- {self.log_path} (tail):\n{self.output()[-limit:]}"

    # -- HTTP ---------------------------------------------------------------------------------

    def scrape(self) -> Metrics:
        status, body = http_get(f"{self.url}/metrics")
        assert status == 200, f"/metrics answered {status}: {body[:200]!r}\n{self.log()}"
        return Metrics.parse(body.decode())

    def readyz(self) -> int:
        return http_get(f"{self.url}/readyz", 2.0)[0]

    def wait_ready(self, timeout_s: float = JOIN_S) -> None:
        wait_for(lambda: self.readyz() == 200, timeout_s, f"{self.name} /readyz 200",
                 diagnostics=self.log)

    def wait_metrics(
        self, condition: Callable[[Metrics], bool], what: str, timeout_s: float = JOIN_S
    ) -> Metrics:
        """Scrape until ``condition(metrics)`` holds; return that scrape."""

        def check() -> Metrics | None:
            assert self.running, f"{self.name} exited with {self.returncode}:\n{self.log()}"
            metrics = self.scrape()
            return metrics if condition(metrics) else None

        return wait_for(check, timeout_s, what, interval_s=0.2, diagnostics=self.log)

    def wait_processed(self, count: int, timeout_s: float = JOIN_S, **labels: str) -> Metrics:
        """Wait until ``driftwatch_events_processed_total`` (summed over models matching
        ``labels``) reaches ``count``; fail if it goes beyond."""

        def done(metrics: Metrics) -> bool:
            processed = metrics.total("driftwatch_events_processed_total", **labels)
            assert processed <= count, f"{processed} events processed, only {count} expected"
            return processed == count

        return self.wait_metrics(done, f"{count} processed events {labels or ''}", timeout_s)


# ------------------------------------------------------------------------------------------
# Prometheus


class PrometheusProcess:
    """The real ``prometheus`` server on 127.0.0.1, queried over its HTTP API."""

    def __init__(self, binary: str, directory: Path, port: int, config: Mapping[str, Any],
                 rules: Mapping[str, Any] | None = None) -> None:
        self.port = port
        self.directory = directory
        self.log_path = directory / "prometheus.log"
        directory.mkdir(parents=True, exist_ok=True)
        config = dict(config)
        if rules is not None:
            rules_path = directory / "rules.yml"
            rules_path.write_text(yaml.safe_dump(dict(rules), sort_keys=False))
            config["rule_files"] = [str(rules_path)]
        self.config_path = directory / "prometheus.yml"
        self.config_path.write_text(yaml.safe_dump(config, sort_keys=False))
        self.command = [
            binary,
            f"--config.file={self.config_path}",
            f"--storage.tsdb.path={directory / 'data'}",
            f"--web.listen-address={HOST}:{port}",
            "--log.level=warn",
        ]
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}"

    def start(self) -> PrometheusProcess:
        with self.log_path.open("ab") as log:
            self.proc = subprocess.Popen(self.command, stdin=subprocess.DEVNULL, stdout=log,
                                         stderr=subprocess.STDOUT, cwd=self.directory,
                                         start_new_session=True)

        def ready() -> bool:
            assert self.proc is not None
            if self.proc.poll() is not None:
                raise AssertionError(f"prometheus exited with {self.proc.returncode}:\n"
                                     f"{self.log()}")
            return http_get(f"{self.url}/-/ready", 1.0)[0] == 200

        wait_for(ready, START_S, "prometheus /-/ready", diagnostics=self.log)
        return self

    def stop(self) -> None:
        proc = self.proc
        if proc is None or proc.poll() is not None:
            return
        proc.terminate()
        try:
            proc.wait(timeout=STOP_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=STOP_S)

    def log(self, limit: int = 4000) -> str:
        try:
            return f"--- prometheus log (tail):\n{self.log_path.read_text()[-limit:]}"
        except OSError:
            return "(no prometheus log)"

    def api(self, path: str, **params: str) -> Any:
        query = f"?{urllib.parse.urlencode(params)}" if params else ""
        status, body = http_get(f"{self.url}/api/v1/{path}{query}")
        assert status == 200, f"prometheus /api/v1/{path} answered {status}: {body[:300]!r}"
        answer = json.loads(body)
        assert answer["status"] == "success", answer
        return answer["data"]

    def query(self, expr: str) -> list[dict[str, Any]]:
        """The instant vector of ``expr`` (``[{"metric": {...}, "value": [t, "v"]}, ...]``)."""
        data = self.api("query", query=expr)
        assert data["resultType"] == "vector", data
        return list(data["result"])

    def alerts(self) -> list[dict[str, Any]]:
        return list(self.api("alerts")["alerts"])

    def firing(self) -> set[str]:
        return {a["labels"]["alertname"] for a in self.alerts() if a["state"] == "firing"}


def sample_values(result: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    """``{model label: value}`` of a Prometheus instant vector."""
    return {r["metric"].get("model", ""): float(r["value"][1]) for r in result}


# ------------------------------------------------------------------------------------------
# fixture signatures (the fixtures are in conftest.py)


class StartAgent(Protocol):
    def __call__(
        self,
        name: str = ...,
        overrides: Mapping[str, Any] | None = ...,
        *,
        group: str | None = ...,
        start: bool = ...,
    ) -> AgentProcess: ...


StartPrometheus = Callable[[Mapping[str, Any], Mapping[str, Any] | None], PrometheusProcess]


def sigkill_mid_stream(victim: AgentProcess, produce: Callable[[], None], *, processed: int,
                       what: str) -> None:
    """Run ``produce`` in a thread and SIGKILL ``victim`` while it runs, once the victim has
    processed more than ``processed`` events and saved once (``what`` names that in a
    timeout); return when the stream is produced."""
    producing = threading.Thread(target=produce)
    producing.start()
    try:
        victim.wait_metrics(lambda m: m.total("driftwatch_events_processed_total") > processed
                            and (m.get("driftwatch_checkpoint_saves_total") or 0) >= 1, what)
        assert producing.is_alive(), "the kill must land mid-stream"
        victim.stop(signal.SIGKILL)
    finally:
        producing.join(timeout=60)
