"""A real Kafka-compatible broker for tests: the product's embedded Tansu broker, plus faults.

(Apache Kafka, the other broker every Kafka test runs on, is in tests/apache_kafka.py;
:data:`Broker` is either.)

:class:`TansuBroker` is :class:`driftwatch.demo.broker.EmbeddedBroker` (a ``tansu broker`` on a
free loopback port, reaped on stop, never outliving its parent) with what failure tests need:
:meth:`~TansuBroker.pause`/:meth:`~TansuBroker.resume` (a hung broker), :meth:`restart` on
the *same* port (clients keep their bootstrap address and reconnect), and a :meth:`stop` that
returns only once the port refuses connections, so a test that stopped the broker really sees
it gone.

Storage is Tansu's in-memory engine. Data lives exactly as long as the process: after a
restart every topic, record, consumer group and committed offset is gone. A restarted broker
is therefore an *empty* broker, so a restart test cannot show that nothing stored before the
restart was lost; it can only show that clients survive the outage and that everything
produced after the restart arrives. Tests recreate their topics after :meth:`start`.

Example::

    with TansuBroker() as broker:
        consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap, ...)
        broker.restart()  # same port, empty storage
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Callable

from driftwatch.demo.broker import STOP_TIMEOUT_S, BrokerUnavailable, EmbeddedBroker, free_port
from driftwatch.demo.broker import _accepts_connections as accepts_connections
from tests.apache_kafka import ApacheKafkaBroker

__all__ = ["Broker", "BrokerFactory", "BrokerUnavailable", "TansuBroker", "free_port"]


class TansuBroker(EmbeddedBroker):
    """An :class:`EmbeddedBroker` that tests can freeze, restart and stop for sure."""

    kind = "tansu"
    persistent = False
    """A restart loses every topic, record, group and offset (memory storage)."""

    def stop(self, *, kill: bool = False) -> None:
        self.resume()  # a frozen broker would not act on SIGINT
        super().stop(kill=kill)
        deadline = time.monotonic() + STOP_TIMEOUT_S
        while accepts_connections(self.port) and time.monotonic() < deadline:
            time.sleep(0.02)

    def pause(self) -> None:
        """Freeze the broker (SIGSTOP): connections stay open, requests go unanswered, as with
        a hung broker or a network black hole. :meth:`resume` (or :meth:`stop`) ends it."""
        if not self.running or self.pid is None:
            raise RuntimeError("broker not running")
        os.kill(self.pid, signal.SIGSTOP)

    def resume(self) -> None:
        """Undo :meth:`pause` (SIGCONT); harmless when the broker is not paused."""
        if self.running and self.pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGCONT)

    def restart(self, *, kill: bool = False) -> None:
        """Stop, then start on the same port. The new broker is empty (memory storage)."""
        self.stop(kill=kill)
        self.start()


Broker = TansuBroker | ApacheKafkaBroker
"""What the ``broker`` fixtures give: either kind has ``bootstrap``, ``port``, ``start``,
``stop(kill=)``, ``restart(kill=)``, ``pause``, ``resume``, ``close``, ``running``, ``kind``
and ``persistent`` (whether a restarted broker still has what was stored before)."""

BrokerFactory = Callable[..., Broker]
"""The ``broker_factory`` fixture: ``(port=None, *, start=True, **options) -> Broker``."""
