"""Apache Kafka for tests and benchmarks: the broker users run, from Maven Central's jars.

Tansu (:mod:`tests.broker`) starts in milliseconds but is not the broker users run. This
module assembles Apache Kafka 4.x (KRaft mode, no ZooKeeper) from its published jars and runs
a single node that is broker and controller at once, on loopback:

1. **Fetch, once.** ``tests/pom.xml`` pins the version; ``mvn dependency:copy-dependencies``
   copies the jars into ``~/.cache/driftwatch/apache-kafka-<version>/libs`` (``$XDG_CACHE_HOME``
   is honoured), guarded by a lock so that concurrent test processes fetch once. A stamp holds
   the pom's hash: editing the pom fetches again. The jars are cached, never committed.
2. **Format.** A fresh directory is formatted with a generated cluster id
   (``kafka.tools.StorageTool format``, what ``kafka-storage.sh`` runs).
3. **Start.** ``java -cp 'libs/*' kafka.Kafka server.properties`` with a PLAINTEXT listener
   (clients' :attr:`ApacheKafkaBroker.bootstrap`), a CONTROLLER listener, any extra
   :class:`Listener`, and replication factors 1. :meth:`ApacheKafkaBroker.start` returns once
   the broker answers a metadata request listing itself (it is registered and unfenced:
   topics can be created).
4. **Stop** by its own pid: SIGTERM (a controlled shutdown that flushes the logs), SIGKILL
   after :data:`STOP_TIMEOUT_S`; or SIGKILL at once (``kill=True``), after which the next
   start recovers the logs as a crashed broker would.

Storage is on disk, in the broker's directory: unlike Tansu, a restarted broker keeps every
topic, record, group and committed offset. :meth:`~ApacheKafkaBroker.restart` restarts on the
same ports and the same data. Start-up time and memory are measured in ``docs/brokers.md``.

The hook for security tests: ``listeners=[Listener("SASL", "SASL_PLAINTEXT")]`` adds a listener
on a free port (its address: :meth:`~ApacheKafkaBroker.address`), ``server_properties`` adds
or overrides any line of ``server.properties`` (``sasl.enabled.mechanisms``,
``listener.name.sasl.plain.sasl.jaas.config``, ``ssl.keystore.location``,
``authorizer.class.name``, ``super.users``, ...) and ``jvm_options`` adds JVM flags. The
PLAINTEXT listener stays: it is the inter-broker listener and the one readiness is checked on.

A test broker must not outlive its test process: as for Tansu, the JVM gets SIGKILL when the
thread that started it ends (``prctl(PR_SET_PDEATHSIG)``), unless it was started detached from
the command line, which is what the command line is for::

    python -m tests.apache_kafka fetch                     # the jars, once (CI does this)
    python -m tests.apache_kafka start --dir DIR [--port P] [--property KEY=VALUE ...]
    python -m tests.apache_kafka stop --dir DIR            # by the pid written in DIR

``start`` prints the bootstrap address and leaves the broker running; ``stop`` stops the
broker whose pid ``start`` wrote in ``DIR`` (and only if that pid is still that broker).

Example::

    with ApacheKafkaBroker(tmp_path / "kafka") as broker:
        consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap, ...)
        broker.restart(kill=True)  # same port, same data, recovered like after a crash
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import fcntl
import hashlib
import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
import xml.etree.ElementTree as ET
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import NamedTuple

from kafka.admin import KafkaAdminClient, MemberToRemove  # type: ignore[import-untyped]
from kafka.errors import KafkaConfigurationError, KafkaError  # type: ignore[import-untyped]

from driftwatch.demo.broker import HOST, PortInUse, free_port, port_in_use
from driftwatch.demo.broker import _accepts_connections as accepts_connections
from driftwatch.demo.broker import _die_with_parent as die_with_parent

__all__ = [
    "ApacheKafkaBroker",
    "ApacheKafkaUnavailable",
    "Listener",
    "fetch_libs",
    "kafka_version",
]

POM = Path(__file__).with_name("pom.xml")
"""The pinned Maven project whose dependencies are Apache Kafka's broker jars."""

START_TIMEOUT_S = 120.0
"""A JVM broker answers after about 5 s on an idle 2-core machine (docs/brokers.md) and
several times that on one shared with other test runs; the bound fails a broken set-up (a
bad property, a port taken) within two minutes at worst, while a start-up error usually ends
the process at once and is reported immediately."""

STOP_TIMEOUT_S = 30.0
"""A controlled shutdown of a single node takes a second or two; a broker still alive after
this long is killed."""

FETCH_TIMEOUT_S = 900.0
"""Maven downloads about 45 MB of jars (and its own plugins) on the first fetch."""

HEAP = "512m"
"""The broker's maximum heap: ample for tests (the broker runs with ~350 MB resident)."""

_CONTROLLER = "CONTROLLER"
_PLAINTEXT = "PLAINTEXT"
_NODE_ID = 1
_LOG4J2 = """\
status = warn
appender.console.type = Console
appender.console.name = STDOUT
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.console.ref = STDOUT
"""


class ApacheKafkaUnavailable(RuntimeError):
    """Java or Maven is missing, the jars could not be fetched, or the broker would not start.
    ``str()`` says which, with the tail of the tool's or the broker's output."""


class Listener(NamedTuple):
    """An extra listener: ``name`` as in ``listeners=NAME://...`` (also its
    ``listener.name.<name lower-cased>.*`` prefix), ``protocol`` one of PLAINTEXT, SSL,
    SASL_PLAINTEXT, SASL_SSL, and ``port`` (a free one when None)."""

    name: str
    protocol: str
    port: int | None = None


def kafka_version(pom: Path = POM) -> str:
    """The Apache Kafka version ``pom`` pins (its ``kafka.version`` property)."""
    namespace = {"m": "http://maven.apache.org/POM/4.0.0"}
    version = ET.parse(pom).getroot().findtext("m:properties/m:kafka.version", None, namespace)
    if not version:
        raise ApacheKafkaUnavailable(f"{pom} has no <kafka.version> property")
    return version.strip()


def cache_root() -> Path:
    """``$XDG_CACHE_HOME/driftwatch`` (``~/.cache/driftwatch`` by default)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "driftwatch"


def _require(tool: str, hint: str) -> str:
    path = shutil.which(tool)
    if path is None:
        raise ApacheKafkaUnavailable(f"{tool} not found on PATH ({hint})")
    return path


def java() -> str:
    """The ``java`` executable (Apache Kafka 4 needs Java 17 or newer)."""
    return _require("java", "Apache Kafka 4 needs Java 17+: apt-get install default-jdk-headless")


def fetch_libs(pom: Path = POM) -> Path:
    """The directory of Apache Kafka's jars, fetched from Maven Central on first use.

    Idempotent and safe to call from concurrent processes (an exclusive lock on the cache
    directory; the jars are copied to a temporary directory and renamed into place, so a
    half-finished fetch is never used). Raises :class:`ApacheKafkaUnavailable` when Maven is
    missing or the fetch fails.
    """
    pom_hash = hashlib.sha256(pom.read_bytes()).hexdigest()
    home = cache_root() / f"apache-kafka-{kafka_version(pom)}"
    libs, stamp = home / "libs", home / "pom.sha256"
    if _fetched(libs, stamp, pom_hash):
        return libs
    home.mkdir(parents=True, exist_ok=True)
    with (home / ".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if _fetched(libs, stamp, pom_hash):  # another process fetched while we waited
            return libs
        mvn = _require("mvn", "apt-get install maven")
        staging = Path(tempfile.mkdtemp(prefix="libs-", dir=home))
        command = [mvn, "-q", "-B", "-f", str(pom), "dependency:copy-dependencies",
                   "-DincludeScope=runtime", f"-DoutputDirectory={staging}"]
        try:
            done = subprocess.run(command, stdin=subprocess.DEVNULL, capture_output=True,
                                  text=True, timeout=FETCH_TIMEOUT_S, check=False)
        except subprocess.TimeoutExpired as exc:
            shutil.rmtree(staging, ignore_errors=True)
            raise ApacheKafkaUnavailable(f"mvn did not finish in {FETCH_TIMEOUT_S:.0f} s") from exc
        if done.returncode != 0 or not any(staging.glob("kafka_2.13-*.jar")):
            shutil.rmtree(staging, ignore_errors=True)
            output = (done.stdout + done.stderr).strip()[-3000:]
            raise ApacheKafkaUnavailable(
                f"fetching Apache Kafka's jars failed ({' '.join(command)} exited with "
                f"{done.returncode}): {output or '(no output)'}"
            )
        shutil.rmtree(libs, ignore_errors=True)
        staging.rename(libs)
        stamp.write_text(pom_hash + "\n")
    return libs


def _fetched(libs: Path, stamp: Path, pom_hash: str) -> bool:
    try:
        return stamp.read_text().strip() == pom_hash and libs.is_dir()
    except OSError:
        return False


def cluster_id() -> str:
    """A new KRaft cluster id: 16 random bytes in URL-safe base64 without padding, as Kafka's
    ``Uuid.randomUuid()`` prints them (never starting with ``-``, which reads as an option)."""
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()
        if not text.startswith("-"):
            return text


class ApacheKafkaBroker:
    """One Apache Kafka node (KRaft, broker and controller) on ``127.0.0.1``, data in ``directory``.

    Lifecycle: :meth:`start` (also on ``__enter__``) fetches the jars if needed
    (:func:`fetch_libs`), formats ``directory/data`` if it is not formatted yet, writes
    ``directory/server.properties`` and starts the JVM, logging to ``directory/broker.log``;
    it returns once the broker answers a metadata request that lists itself, and raises
    :class:`ApacheKafkaUnavailable` with the log's tail if the process exits or does not
    answer within :data:`START_TIMEOUT_S` (and :class:`PortInUse` if a port is taken).
    :meth:`stop` (also on ``__exit__``) sends SIGTERM, a controlled shutdown, and SIGKILL
    after :data:`STOP_TIMEOUT_S`; ``kill=True`` sends SIGKILL at once. It returns once the
    process is gone and the port refuses connections. ``start`` after ``stop`` starts the
    same broker on the same ports with the same data. :meth:`pause` / :meth:`resume` freeze
    and thaw it (SIGSTOP / SIGCONT: a hung broker).

    Parameters:
        directory: the broker's own directory (configuration, data, log, pid file); a
            temporary directory, removed by :meth:`close`, when None.
        port: the PLAINTEXT port clients bootstrap from; a free one when None.
        controller_port: the KRaft controller's port; a free one when None.
        listeners: extra listeners (:class:`Listener`), e.g. SASL or SSL ones.
        server_properties: lines added to ``server.properties``, overriding the defaults.
        jvm_options: extra JVM options (e.g. ``-Djava.security.auth.login.config=...``).
        die_with_parent: SIGKILL the broker when the thread that started it ends (tests);
            False for a broker that outlives its starter (the command line's ``start``).
    """

    kind = "apache"
    persistent = True
    """A restart keeps every topic, record, group and offset (disk storage)."""

    def __init__(
        self,
        directory: Path | None = None,
        port: int | None = None,
        *,
        controller_port: int | None = None,
        listeners: Sequence[Listener] = (),
        server_properties: Mapping[str, str] | None = None,
        jvm_options: Sequence[str] = (),
        die_with_parent: bool = True,
    ) -> None:
        self._temporary: tempfile.TemporaryDirectory[str] | None = None
        if directory is None:
            self._temporary = tempfile.TemporaryDirectory(prefix="driftwatch-kafka-")
            directory = Path(self._temporary.name)
        self.directory = directory.resolve()
        self.port = free_port() if port is None else port
        self.controller_port = free_port() if controller_port is None else controller_port
        self.listeners = [listener if listener.port is not None
                          else listener._replace(port=free_port()) for listener in listeners]
        self.server_properties = dict(server_properties or {})
        self.jvm_options = list(jvm_options)
        self.die_with_parent = die_with_parent
        self._proc: subprocess.Popen[bytes] | None = None

    # -- where it is ------------------------------------------------------------------------

    @property
    def bootstrap(self) -> str:
        """``host:port`` of the PLAINTEXT listener, for clients' ``bootstrap_servers``."""
        return f"{HOST}:{self.port}"

    def address(self, listener: str) -> str:
        """``host:port`` of the extra listener named ``listener`` (or of PLAINTEXT)."""
        if listener == _PLAINTEXT:
            return self.bootstrap
        for extra in self.listeners:
            if extra.name == listener:
                return f"{HOST}:{extra.port}"
        raise KeyError(f"no listener named {listener!r}")

    @property
    def data_dir(self) -> Path:
        return self.directory / "data"

    @property
    def log_path(self) -> Path:
        return self.directory / "broker.log"

    @property
    def properties_path(self) -> Path:
        return self.directory / "server.properties"

    @property
    def pid_path(self) -> Path:
        return self.directory / "broker.pid"

    @property
    def pid(self) -> int | None:
        return None if self._proc is None else self._proc.pid

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    @property
    def version(self) -> str:
        return kafka_version()

    def properties(self) -> dict[str, str]:
        """``server.properties`` as :meth:`start` writes it: the defaults, then the extra
        listeners, then :attr:`server_properties` (which win)."""
        listeners = [(_PLAINTEXT, _PLAINTEXT, self.port),
                     (_CONTROLLER, _PLAINTEXT, self.controller_port)]
        listeners += [(extra.name, extra.protocol, extra.port or 0) for extra in self.listeners]
        advertised = [entry for entry in listeners if entry[0] != _CONTROLLER]
        properties = {
            "process.roles": "broker,controller",
            "node.id": str(_NODE_ID),
            "controller.quorum.voters": f"{_NODE_ID}@{HOST}:{self.controller_port}",
            "controller.listener.names": _CONTROLLER,
            "inter.broker.listener.name": _PLAINTEXT,
            "listeners": ",".join(f"{name}://{HOST}:{port}" for name, _, port in listeners),
            "advertised.listeners": ",".join(f"{name}://{HOST}:{port}"
                                             for name, _, port in advertised),
            "listener.security.protocol.map": ",".join(f"{name}:{protocol}"
                                                       for name, protocol, _ in listeners),
            "log.dirs": str(self.data_dir),
            "num.partitions": "1",
            # Topics exist because someone created them, as on Tansu and on most production
            # clusters (Apache's default creates a topic on any metadata request naming it,
            # so a client left over from one test could re-create the next test's topics).
            # A test of the default passes {"auto.create.topics.enable": "true"}.
            "auto.create.topics.enable": "false",
            # One node: every internal topic with one replica.
            "offsets.topic.replication.factor": "1",
            "transaction.state.log.replication.factor": "1",
            "transaction.state.log.min.isr": "1",
            "share.coordinator.state.topic.replication.factor": "1",
            "share.coordinator.state.topic.min.isr": "1",
            # A new group's first rebalance at once, not after 3 s (the default waits for
            # more members; tests start them one by one anyway).
            "group.initial.rebalance.delay.ms": "0",
            # The kill tests and benchmarks use a 3 s session timeout so that a SIGKILLed
            # member's partitions move soon; the broker's default minimum is 6 s (a shorter
            # one is refused with INVALID_SESSION_TIMEOUT).
            "group.min.session.timeout.ms": "1000",
        }
        properties.update(self.server_properties)
        return properties

    # -- lifecycle --------------------------------------------------------------------------

    def start(self) -> None:
        """Start the broker and wait until it answers; see the class docstring."""
        if self.running:
            raise RuntimeError("ApacheKafkaBroker.start: already running")
        ports = [self.port, self.controller_port, *(extra.port or 0 for extra in self.listeners)]
        for port in ports:
            if port_in_use(port):
                raise PortInUse(f"port {port} of {HOST} is already in use")
        libs = fetch_libs()
        self.directory.mkdir(parents=True, exist_ok=True)
        self.properties_path.write_text(
            "".join(f"{key}={value}\n" for key, value in self.properties().items())
        )
        (self.directory / "log4j2.properties").write_text(_LOG4J2)
        if not (self.data_dir / "meta.properties").exists():
            self._format(libs)
        command = [java(), f"-Xmx{HEAP}", "-Djava.awt.headless=true",
                   f"-Dlog4j2.configurationFile={self.directory / 'log4j2.properties'}",
                   *self.jvm_options, "-cp", f"{libs}/*", "kafka.Kafka",
                   str(self.properties_path)]
        with self.log_path.open("ab") as log:
            self._proc = subprocess.Popen(
                command, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True,
                preexec_fn=die_with_parent() if self.die_with_parent else None,
            )
        self.pid_path.write_text(f"{self._proc.pid}\n")
        try:
            self._wait_until_ready()
        except BaseException:
            self.stop(kill=True)
            raise

    def _format(self, libs: Path) -> None:
        command = [java(), "-Xmx256m", f"-Dlog4j2.configurationFile="
                   f"{self.directory / 'log4j2.properties'}", "-cp", f"{libs}/*",
                   "kafka.tools.StorageTool", "format", "--cluster-id", cluster_id(),
                   "--config", str(self.properties_path), "--ignore-formatted"]
        done = subprocess.run(command, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                              timeout=START_TIMEOUT_S, check=False)
        if done.returncode != 0:
            output = (done.stdout + done.stderr).strip()[-3000:]
            raise ApacheKafkaUnavailable(
                f"formatting {self.data_dir} failed (exit {done.returncode}): {output}"
            )

    def _wait_until_ready(self) -> None:
        assert self._proc is not None
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            if self._proc.poll() is not None:
                raise ApacheKafkaUnavailable(
                    f"Apache Kafka exited with {self._proc.returncode}: {self.log_tail()}"
                )
            if accepts_connections(self.port) and self._lists_itself():
                return
            if time.monotonic() > deadline:
                raise ApacheKafkaUnavailable(
                    f"Apache Kafka not answering on {self.bootstrap} after "
                    f"{START_TIMEOUT_S:.0f} s: {self.log_tail()}"
                )
            time.sleep(0.1)

    def _lists_itself(self) -> bool:
        """Whether a metadata request lists this node: registered and unfenced, so topics can
        be created and groups joined."""
        try:
            admin = KafkaAdminClient(bootstrap_servers=self.bootstrap, request_timeout_ms=3000)
        except KafkaConfigurationError:
            raise  # a bug here, not a broker still starting
        except (KafkaError, OSError):
            return False
        try:
            brokers = admin.describe_cluster().get("brokers", [])
            return any(broker.get("broker_id") == _NODE_ID and not broker.get("is_fenced")
                       for broker in brokers)
        except (KafkaError, OSError):
            return False
        finally:
            admin.close()

    def stop(self, *, kill: bool = False) -> None:
        """Stop the broker (SIGTERM, or SIGKILL with ``kill=True``) and wait until it is gone
        and its port refuses connections; idempotent."""
        self.resume()  # a frozen JVM would not act on SIGTERM
        proc, self._proc = self._proc, None
        if proc is not None:
            _terminate(proc.pid, kill=kill, wait=proc.wait)
            self.pid_path.unlink(missing_ok=True)
        deadline = time.monotonic() + STOP_TIMEOUT_S
        while accepts_connections(self.port) and time.monotonic() < deadline:
            time.sleep(0.02)

    def restart(self, *, kill: bool = False) -> None:
        """Stop, then start on the same ports with the same data (a SIGKILLed broker recovers
        its logs at start, as after a crash)."""
        self.stop(kill=kill)
        self.start()

    def clear(self) -> None:
        """Make the running broker empty again, as a new one would be: remove every consumer
        group (evicting its members first, e.g. those of a SIGKILLed process) and delete
        every topic but the internal ones. Takes about half a second; it lets one broker
        serve many tests, each of which expects an empty broker.

        Raises:
            KafkaError: the broker refused; :meth:`wipe` is the sure way.
        """
        admin = KafkaAdminClient(bootstrap_servers=self.bootstrap, request_timeout_ms=10_000)
        try:
            groups = [group["group_id"] for group in admin.list_groups()]
            for group_id, group in admin.describe_groups(groups).items():
                members = [MemberToRemove(member_id=member["member_id"])
                           for member in group.get("members") or ()]
                if members:
                    admin.remove_group_members(group_id, members)
            failed = {group_id: error for group_id, error in admin.delete_groups(groups).items()
                      if error != "OK"}
            if failed:
                raise KafkaError(f"groups not deleted: {failed}")
            topics = [topic for topic in admin.list_topics() if not topic.startswith("__")]
            if topics:
                admin.delete_topics(topics, timeout_ms=10_000)
            deadline = time.monotonic() + 30.0  # gone for the controller too, not just asked
            while set(topics) & set(admin.list_topics()):
                if time.monotonic() > deadline:
                    raise KafkaError(f"topics not deleted after 30 s: {topics}")
                time.sleep(0.1)
        finally:
            admin.close()

    def wipe(self) -> None:
        """Stop the broker (SIGKILL), delete its data and start it again on the same ports:
        a new, empty broker (a new cluster id), whatever state the old one was in."""
        self.stop(kill=True)
        shutil.rmtree(self.data_dir, ignore_errors=True)
        self.start()

    def pause(self) -> None:
        """Freeze the broker (SIGSTOP): connections stay open, requests go unanswered."""
        if not self.running or self.pid is None:
            raise RuntimeError("broker not running")
        os.kill(self.pid, signal.SIGSTOP)

    def resume(self) -> None:
        """Undo :meth:`pause` (SIGCONT); harmless when the broker is not paused."""
        if self.running and self.pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGCONT)

    def close(self) -> None:
        """Stop the broker and remove its directory if it was a temporary one."""
        self.stop()
        if self._temporary is not None:
            self._temporary.cleanup()
            self._temporary = None

    def log_tail(self, limit: int = 3000) -> str:
        try:
            tail = self.log_path.read_text(errors="replace")[-limit:].strip()
        except OSError:
            tail = ""
        return tail or "(no output)"

    def __enter__(self) -> ApacheKafkaBroker:
        try:
            self.start()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"ApacheKafkaBroker({self.bootstrap}, running={self.running})"


def _terminate(pid: int, *, kill: bool, wait: Callable[..., object] | None = None) -> None:
    """SIGTERM ``pid`` (SIGKILL with ``kill``), SIGKILL it after :data:`STOP_TIMEOUT_S`, and
    return once it is gone. ``wait`` is the child's ``Popen.wait`` when this process started
    it (so it is reaped), None for a broker another process started."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL if kill else signal.SIGTERM)
    for last_signal in (None, signal.SIGKILL):
        if last_signal is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, last_signal)
        if _gone(pid, wait, STOP_TIMEOUT_S):
            return
    raise ApacheKafkaUnavailable(f"process {pid} survived SIGKILL")


def _gone(pid: int, wait: Callable[..., object] | None, timeout: float) -> bool:
    if wait is not None:
        try:
            wait(timeout=timeout)
            return True
        except subprocess.TimeoutExpired:
            return False
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not Path(f"/proc/{pid}").exists():
            return True
        time.sleep(0.05)
    return False


# -- the command line -------------------------------------------------------------------------


def _started_broker_pid(directory: Path) -> int | None:
    """The pid in ``directory/broker.pid`` if that process is still the broker of
    ``directory`` (its command line names this directory's server.properties), else None:
    a pid is never signalled after the broker exited and the number was reused."""
    try:
        pid = int((directory / "broker.pid").read_text().strip())
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except (OSError, ValueError):
        return None
    return pid if str(directory / "server.properties").encode() in cmdline else None


def _cli_start(args: argparse.Namespace) -> int:
    properties = dict(_key_value(item) for item in args.property)
    broker = ApacheKafkaBroker(args.dir, args.port, server_properties=properties,
                               die_with_parent=False)
    if _started_broker_pid(broker.directory) is not None:
        print(f"a broker of {broker.directory} is already running", file=sys.stderr)
        return 1
    started = time.monotonic()
    broker.start()
    (broker.directory / "broker.json").write_text(json.dumps(
        {"pid": broker.pid, "bootstrap": broker.bootstrap,
         "controller_port": broker.controller_port, "version": broker.version}) + "\n")
    logging.getLogger(__name__).info("started in %.1f s", time.monotonic() - started)
    print(broker.bootstrap)
    return 0


def _cli_stop(args: argparse.Namespace) -> int:
    directory = args.dir.resolve()
    pid = _started_broker_pid(directory)
    if pid is None:
        print(f"no broker of {directory} is running", file=sys.stderr)
        return 1
    _terminate(pid, kill=args.kill)
    (directory / "broker.pid").unlink(missing_ok=True)
    return 0


def _cli_fetch(args: argparse.Namespace) -> int:
    print(fetch_libs())
    return 0


def _key_value(item: str) -> tuple[str, str]:
    key, sep, value = item.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"--property wants KEY=VALUE, got {item!r}")
    return key, value


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.apache_kafka", description=(
        f"Apache Kafka {kafka_version()} (KRaft, one node) on 127.0.0.1, from Maven Central."))
    commands = parser.add_subparsers(dest="command", required=True)
    fetch = commands.add_parser("fetch", help="fetch the jars into the cache; print where")
    fetch.set_defaults(run=_cli_fetch)
    start = commands.add_parser("start", help="start a broker that keeps running; print its "
                                "bootstrap address")
    start.add_argument("--dir", type=Path, required=True, help="its configuration, data, log")
    start.add_argument("--port", type=int, help="the PLAINTEXT port (default: a free one)")
    start.add_argument("--property", action="append", default=[], metavar="KEY=VALUE",
                       help="a server.properties line, overriding the defaults (repeatable)")
    start.set_defaults(run=_cli_start)
    stop = commands.add_parser("stop", help="stop the broker started with the same --dir")
    stop.add_argument("--dir", type=Path, required=True)
    stop.add_argument("--kill", action="store_true", help="SIGKILL instead of SIGTERM")
    stop.set_defaults(run=_cli_stop)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(message)s")
    try:
        return int(args.run(args))
    except (ApacheKafkaUnavailable, PortInUse) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
