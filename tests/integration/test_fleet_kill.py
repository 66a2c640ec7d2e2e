"""The fleet benchmark's kill part, small: the union after a SIGKILL equals the reference.

``python -m benchmarks fleet --kill`` (benchmarks/fleet_kill.py) runs 10 000 models over 8
partitions on 1, 2 and 4 agents and reports times; here the same code runs a tiny fleet (50
models keyed over 2 partitions, a window of 100, 150 events each) on two real ``driftwatch
run`` processes, kills one of them at a random moment after its first save and restarts it,
and asserts only what must hold exactly: the kill landed mid-stream, every model the killed
agent exported came back, and the union of the agents' final ``/metrics`` equals the pure
monitors fed each model's events once (the benchmark's own reference). No time is asserted.
"""

from __future__ import annotations

import math
from pathlib import Path

from benchmarks.fleet_kill import Fleet, reference_state, run_configuration
from driftwatch.settings import Settings
from tests.broker import Broker
from tests.integration.helpers import JOIN_S

MONITORING = {"defaults": {"window_size": 100}}
OVERRIDES = {
    "monitoring": MONITORING,
    # The tests' short group timing and poll (tests/integration/helpers.py: agent_settings).
    "kafka": {"poll_timeout_ms": 200, "max_poll_interval_ms": 5000, "session_timeout_ms": 6000,
              "heartbeat_interval_ms": 1000},
    "checkpoint": {"interval_seconds": 1},
}


def test_a_small_fleet_killed_mid_stream_hands_over_exactly(broker: Broker,
                                                            tmp_path: Path) -> None:
    fleet = Fleet(models=50, events=150, partitions=2)
    settings = Settings.model_validate({"monitoring": MONITORING,
                                        "limits": {"max_models": fleet.models}})
    expected = reference_state(fleet, settings)
    result = run_configuration(broker.bootstrap, fleet, 2, tmp_path, expected,
                               overrides=OVERRIDES, producers=1, produce_seconds=8.0,
                               timeout_s=JOIN_S * 3)
    assert result.killed_mid_stream
    assert not math.isnan(result.gap_s), "the killed agent's models came back"
    # By the start of the round that found them: no later than its end, no earlier than
    # the kill.
    assert 0 < result.gap_asked_s <= result.gap_s
    assert result.restores, "the replacement or the survivor restored from the state topic"
    assert result.equal == "yes"
