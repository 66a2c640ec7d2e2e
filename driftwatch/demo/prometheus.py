"""``driftwatch demo --prometheus``: a real Prometheus with the chart's alert rules, scraping
the demo's agent, so the alerts can be seen going pending and firing without a cluster.

The rules are the Helm chart's (``helm/driftwatch/files/alerts.yaml`` of the checkout the
demo runs from, or ``--prometheus-rules FILE``), with time compressed as the demo compresses
a model's story (500 events a second, a drift 10 s in): every duration of the rules — each
``for:``, range ``[5m]`` and ``offset`` — is divided by :data:`TIME_SCALE`, so minutes become
seconds. Prometheus scrapes the agent and evaluates the rules every :data:`INTERVAL`; its
storage lives in a temporary directory removed at the end. The demo polls ``/api/v1/alerts``
and prints each change of state (:class:`AlertStates`).

Prometheus is not a Python package: the Debian package (``apt-get install prometheus``, which
CI installs) or the release archive from https://prometheus.io/download/ puts it on ``PATH``.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

import yaml  # type: ignore[import-untyped, unused-ignore]

from driftwatch.demo.broker import _die_with_parent

TIME_SCALE = 60
"""The rules' durations are divided by this: 5 minutes of a deployed model's life become 5
seconds of the demo's."""
INTERVAL = "1s"
"""Scrape and rule-evaluation interval of the demo's Prometheus."""
POLL_INTERVAL_S = 0.5
READY_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 10.0
CHART_RULES = Path(__file__).resolve().parents[2] / "helm" / "driftwatch" / "files" / "alerts.yaml"
"""The chart's rules in a checkout (an editable install, or ``python -m driftwatch`` in a clone);
an installed wheel has no chart next to it."""
HOW_TO_GET = ("Prometheus is not installed (no 'prometheus' on PATH): on Debian or Ubuntu, "
              "apt-get install prometheus (then systemctl stop prometheus: the demo starts its "
              "own); elsewhere the archive from https://prometheus.io/download/, with its "
              "'prometheus' on PATH")

_DURATION = re.compile(r"(\d+)(ms|s|m|h|d|w|y)")
_UNIT_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000,
            "w": 604_800_000, "y": 31_536_000_000}
_DURATIONS = r"((?:\d+(?:ms|s|m|h|d|w|y))+)"
_IN_EXPRESSION = re.compile(rf"(\[){_DURATIONS}(\]|:)|(offset\s+){_DURATIONS}")


class PrometheusError(Exception):
    """Prometheus could not be started or answered; the message says what to do."""


def find_prometheus() -> str | None:
    """The ``prometheus`` executable on ``PATH``, or None."""
    return shutil.which("prometheus")


def scale_duration(duration: str, scale: int = TIME_SCALE) -> str:
    """A Prometheus duration divided by ``scale``, in whole milliseconds, written in the
    largest unit that is exact.

    >>> scale_duration("5m"), scale_duration("6h"), scale_duration("30s"), scale_duration("0m")
    ('5s', '6m', '500ms', '0s')
    """
    parts = _DURATION.findall(duration)
    if not parts or "".join(n + u for n, u in parts) != duration:
        raise ValueError(f"not a Prometheus duration: {duration!r}")
    total = sum(int(n) * _UNIT_MS[u] for n, u in parts) // scale
    for unit in ("h", "m", "s"):
        if total and total % _UNIT_MS[unit] == 0:
            return f"{total // _UNIT_MS[unit]}{unit}"
    return f"{total}ms" if total else "0s"


def compress_expression(expression: str, scale: int = TIME_SCALE) -> str:
    """Every range (``[10m]``, a subquery's ``[1h:5m]``) and ``offset`` of ``expression``
    divided by ``scale``.

    >>> compress_expression('increase(x[10m]) > 0 and avg_over_time(y[6h] offset 10m) > 1')
    'increase(x[10s]) > 0 and avg_over_time(y[6m] offset 10s) > 1'
    """
    def scaled(match: re.Match[str]) -> str:
        if match.group(1):
            return f"{match.group(1)}{scale_duration(match.group(2), scale)}{match.group(3)}"
        return f"{match.group(4)}{scale_duration(match.group(5), scale)}"

    expression = re.sub(rf":{_DURATIONS}\]",
                        lambda m: f":{scale_duration(m.group(1), scale)}]", expression)
    return _IN_EXPRESSION.sub(scaled, expression)


def compress_rules(rules: Mapping[str, Any], scale: int = TIME_SCALE) -> dict[str, Any]:
    """A rules file's content with every duration divided by ``scale`` (module docstring)."""
    groups = []
    for group in rules["groups"]:
        compressed = []
        for rule in group["rules"]:
            rule = dict(rule, expr=compress_expression(str(rule["expr"]), scale))
            for key in ("for", "keep_firing_for"):
                if key in rule:
                    rule[key] = scale_duration(str(rule[key]), scale)
            compressed.append(rule)
        groups.append({**group, "rules": compressed})
    return {**rules, "groups": groups}


@dataclass(frozen=True, slots=True)
class AlertChange:
    """An alert that went ``pending``, ``firing`` or ``resolved`` (no longer active)."""

    state: str
    name: str
    labels: tuple[tuple[str, str], ...]
    """The alert's labels but its name, the scrape's (job, instance) and severity."""

    def describe(self) -> str:
        labels = " ".join(f"{key}={value}" for key, value in self.labels)
        return f"{self.state:<8} {self.name}" + (f"  {labels}" if labels else "")


_NOT_SHOWN = {"alertname", "job", "instance", "severity"}


class AlertStates:
    """The alerts' states from one poll of ``/api/v1/alerts`` to the next."""

    def __init__(self) -> None:
        self._states: dict[tuple[str, tuple[tuple[str, str], ...]], str] = {}

    def update(self, alerts: Sequence[Mapping[str, Any]]) -> list[AlertChange]:
        """The changes since the last update, given the active alerts now.

        >>> states = AlertStates()
        >>> active = [{"labels": {"alertname": "A", "model": "m"}, "state": "pending"}]
        >>> [c.describe() for c in states.update(active)]
        ['pending  A  model=m']
        >>> [c.describe() for c in states.update([{**active[0], "state": "firing"}])]
        ['firing   A  model=m']
        >>> [c.describe() for c in states.update([])]
        ['resolved A  model=m']
        """
        now: dict[tuple[str, tuple[tuple[str, str], ...]], str] = {}
        for alert in alerts:
            labels = alert["labels"]
            key = (str(labels["alertname"]), tuple(sorted(
                (str(k), str(v)) for k, v in labels.items() if k not in _NOT_SHOWN)))
            now[key] = str(alert["state"])
        changes = [AlertChange(state, *key) for key, state in now.items()
                   if self._states.get(key) != state]
        changes += [AlertChange("resolved", *key) for key in self._states if key not in now]
        self._states = now
        return changes


class DemoPrometheus:
    """A Prometheus process scraping ``target`` (host:port of the agent's ``/metrics``) with
    the compressed rules of ``rules_path``, listening on 127.0.0.1:``port``; a context
    manager that starts it (waiting until it is ready) and stops it."""

    def __init__(self, binary: str, rules_path: Path, target: str, port: int) -> None:
        self.binary = binary
        self.rules_path = rules_path
        self.target = target
        self.port = port
        self.url = f"http://127.0.0.1:{port}"
        self._directory: tempfile.TemporaryDirectory[str] | None = None
        self._process: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> DemoPrometheus:
        try:
            rules = yaml.safe_load(self.rules_path.read_text(encoding="utf-8"))
            compressed = compress_rules(rules)
        except (OSError, yaml.YAMLError, KeyError, TypeError, ValueError) as exc:
            raise PrometheusError(f"cannot read the alert rules {self.rules_path}: {exc}") \
                from exc
        self._directory = tempfile.TemporaryDirectory(prefix="driftwatch-demo-prometheus-")
        directory = Path(self._directory.name)
        (directory / "rules.yaml").write_text(yaml.safe_dump(compressed, sort_keys=False),
                                              encoding="utf-8")
        config = {
            "global": {"scrape_interval": INTERVAL, "evaluation_interval": INTERVAL},
            "rule_files": [str(directory / "rules.yaml")],
            "scrape_configs": [{"job_name": "driftwatch-demo",
                                "static_configs": [{"targets": [self.target]}]}],
        }
        (directory / "prometheus.yml").write_text(yaml.safe_dump(config), encoding="utf-8")
        log = (directory / "prometheus.log").open("wb")
        try:
            self._process = subprocess.Popen(
                [self.binary, f"--config.file={directory / 'prometheus.yml'}",
                 f"--storage.tsdb.path={directory / 'data'}",
                 f"--web.listen-address=127.0.0.1:{self.port}", "--log.level=warn"],
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                # A killed demo leaves no Prometheus behind, as it leaves no broker.
                preexec_fn=_die_with_parent())
        except OSError as exc:
            self._cleanup()
            raise PrometheusError(f"cannot start {self.binary}: {exc}") from exc
        finally:
            log.close()
        try:
            self._wait_ready()
        except PrometheusError:
            self.__exit__(None, None, None)
            raise
        return self

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + READY_TIMEOUT_S
        assert self._process is not None and self._directory is not None
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                log = Path(self._directory.name, "prometheus.log").read_text(errors="replace")
                raise PrometheusError(f"Prometheus exited with {self._process.returncode}: "
                                      f"{log.strip()[-500:]}")
            try:
                with urllib.request.urlopen(f"{self.url}/-/ready", timeout=1.0) as answer:
                    if answer.status == 200:
                        return
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(0.1)
        raise PrometheusError(f"Prometheus was not ready on {self.url} within "
                              f"{READY_TIMEOUT_S:.0f} s")

    def alerts(self) -> list[dict[str, Any]]:
        """The active alerts (``/api/v1/alerts``)."""
        with urllib.request.urlopen(f"{self.url}/api/v1/alerts", timeout=2.0) as answer:
            body = json.loads(answer.read())
        return list(body["data"]["alerts"])

    def watch(self, report: Callable[[AlertChange], None]) -> Callable[[threading.Event], None]:
        """A loop for a worker thread: poll the alerts until stopped, ``report`` each change.
        A failed poll is skipped (the next one tells)."""
        def loop(stop: threading.Event) -> None:
            states = AlertStates()
            while not stop.wait(POLL_INTERVAL_S):
                try:
                    alerts = self.alerts()
                except (urllib.error.URLError, OSError, ValueError, KeyError):
                    continue
                for change in states.update(alerts):
                    report(change)
        return loop

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 traceback: TracebackType | None) -> None:
        process = self._process
        if process is not None and process.poll() is None:
            process.terminate()
            try:
                process.wait(STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(STOP_TIMEOUT_S)
        self._cleanup()

    def _cleanup(self) -> None:
        if self._directory is not None:
            self._directory.cleanup()
            self._directory = None
