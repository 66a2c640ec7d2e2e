"""First contact, timed: ``driftwatch run`` pointed where no broker answers, as a user runs it.

The issue this answers: with ``kafka.bootstrap_servers`` where no broker answers, the agent
used to log a failed checkpoint save every 5 s, take 18 s to stop on Ctrl+C and exit 4. Here
the real command runs with nothing but the bootstrap address and a metrics port set (every
other setting at its default: the state-topic checkpoint, 5 s request timeout, 1 s poll),
against three addresses:

- **refused**: a closed port (connection refused);
- **silent**: a port whose listen queue is full, so the kernel drops the connection attempt
  and it times out (a firewall that drops packets, without needing one);
- **hangs up**: a listener that accepts and closes at once (a proxy without its backend).

For each, measured from the outside over several runs: the seconds from the process' start
to the error line naming the address and ``kafka.bootstrap_servers``, the seconds from
SIGINT to the exit, the exit status, and whether any line mentions a checkpoint save. The
reference, measured in the same run: the start of ``python -m driftwatch --version`` (the
interpreter and the imports, which any command pays).

``python -m benchmarks first_contact`` (about a minute; ``--quick``: two runs each).
"""

from __future__ import annotations

import contextlib
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import yaml  # type: ignore[import-untyped, unused-ignore]

from driftwatch.demo.broker import free_port

WATCH_S = 3.0
"""How long the agent runs after its error line before SIGINT: a few retries."""


@contextlib.contextmanager
def address(kind: str) -> Iterator[str]:
    """A loopback address where no broker answers, in the way ``kind`` says."""
    if kind == "refused":
        yield f"127.0.0.1:{free_port()}"
        return
    server = socket.create_server(("127.0.0.1", 0), backlog=0)
    port = server.getsockname()[1]
    held: list[socket.socket] = []
    stop = threading.Event()
    if kind == "silent":  # fill the queue (never accepted): further SYNs are dropped
        for _ in range(2):
            held.append(socket.socket())
            held[-1].setblocking(False)
            with contextlib.suppress(BlockingIOError):
                held[-1].connect(("127.0.0.1", port))
    else:  # hangs up
        server.settimeout(0.1)

        def serve() -> None:
            while not stop.is_set():
                with contextlib.suppress(TimeoutError):
                    connection, _ = server.accept()
                    connection.close()

        threading.Thread(target=serve, daemon=True).start()
    try:
        yield f"127.0.0.1:{port}"
    finally:
        stop.set()
        for sock in held:
            sock.close()
        server.close()


def run_once(bootstrap: str, directory: Path) -> tuple[float, float, int, bool]:
    """``(seconds to the error line, seconds from SIGINT to exit, exit status, whether a
    save was mentioned)`` of one ``driftwatch run``."""
    config = directory / "driftwatch.yaml"
    config.write_text(yaml.safe_dump({
        "kafka": {"bootstrap_servers": [bootstrap]},
        "metrics": {"host": "127.0.0.1", "port": free_port()}}))
    started = time.monotonic()
    process = subprocess.Popen([sys.executable, "-m", "driftwatch", "run", "--config",
                                str(config)], stdin=subprocess.DEVNULL,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               cwd=directory)
    assert process.stdout is not None
    lines: list[str] = []
    line_at: list[float] = []

    def read() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            lines.append(line)
            if "cannot reach any broker of kafka.bootstrap_servers" in line and not line_at:
                line_at.append(time.monotonic())

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    deadline = time.monotonic() + 60
    while not line_at and time.monotonic() < deadline and process.poll() is None:
        time.sleep(0.01)
    if not line_at:
        process.kill()
        raise RuntimeError("no error line within 60 s:\n" + "".join(lines))
    time.sleep(WATCH_S)
    interrupted = time.monotonic()
    process.send_signal(signal.SIGINT)
    code = process.wait(timeout=60)
    stopped = time.monotonic()
    reader.join(5)
    saved = any("save failed" in line or "checkpoint saved" in line for line in lines)
    return line_at[0] - started, stopped - interrupted, code, saved


def interpreter_start() -> float:
    started = time.monotonic()
    subprocess.run([sys.executable, "-m", "driftwatch", "--version"], check=True,
                   capture_output=True)
    return time.monotonic() - started


def main(quick: bool = False) -> None:
    runs = 2 if quick else 5
    reference = statistics.median(interpreter_start() for _ in range(runs))
    print(f"`driftwatch run` with only `kafka.bootstrap_servers` and a metrics port set; "
          f"{runs} runs each, medians (max). Reference: `python -m driftwatch --version` "
          f"takes {reference:.2f} s here (interpreter and imports).\n")
    print("| address | start → error line (s) | SIGINT → exit (s) | exit status | "
          "a save attempted |")
    print("|---|---:|---:|---:|---|")
    for kind in ("refused", "silent", "hangs up"):
        results = []
        for _ in range(runs):
            with tempfile.TemporaryDirectory() as directory, address(kind) as bootstrap:
                results.append(run_once(bootstrap, Path(directory)))
        first = [r[0] for r in results]
        stop = [r[1] for r in results]
        codes = sorted({r[2] for r in results})
        saves = "yes" if any(r[3] for r in results) else "no"
        print(f"| {kind} | {statistics.median(first):.2f} ({max(first):.2f}) | "
              f"{statistics.median(stop):.2f} ({max(stop):.2f}) | "
              f"{', '.join(map(str, codes))} | {saves} |")


if __name__ == "__main__":
    main(quick="--quick" in sys.argv)
