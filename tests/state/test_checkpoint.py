"""Crash-safe, versioned checkpoints (driftwatch.state.checkpoint)."""

from __future__ import annotations

import json
import math
import os
import random
import subprocess
import sys
import textwrap
from pathlib import Path
from types import MappingProxyType
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from driftwatch import __version__
from driftwatch.core.events import Event
from driftwatch.core.monitor import DetectorSpec, Monitor, MonitorConfig, Watch
from driftwatch.sinks.alarms import alarm_record
from driftwatch.state.checkpoint import (
    FILENAME,
    CheckpointDirectoryError,
    CheckpointError,
    CheckpointStore,
    decode_offsets,
    encode_offsets,
)

ROOT = Path(__file__).resolve().parents[2]


def same(a: Any, b: Any) -> bool:
    """Equality that also tells NaN from NaN-less and 0.0 from -0.0."""
    if isinstance(a, float) and isinstance(b, float):
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        return a == b and math.copysign(1.0, a) == math.copysign(1.0, b)
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


PAYLOAD: dict[str, Any] = {
    "offsets": {"events:0": 1234, "events:1": 0},
    "monitors": {
        "fraud": {
            "version": 1,
            "window": {"events": [[1, 0.9, None], [0, 0.1, 1]], "label_before_window": None},
            "watches": [{"threshold": math.nan, "detectors": [{"min": math.inf}]}],
            "last_event_time": 1_700_000_000.123456,
            "values": [0.1, 1 / 3, 2.0**-1074, 1.7976931348623157e308, -0.0, -math.inf],
            "big": 2**80,
            "flag": True,
            "name": "modèle ✓",
        }
    },
}


def test_round_trip_is_exact(tmp_path: Path) -> None:
    store = CheckpointStore(tmp_path)
    assert store.load() is None
    path = store.save(PAYLOAD)
    assert path == tmp_path / FILENAME
    loaded = store.load()
    assert same(loaded, PAYLOAD)


def test_envelope(tmp_path: Path) -> None:
    store = CheckpointStore(tmp_path)
    store.save({"offsets": {}, "monitors": {}})
    raw = json.loads((tmp_path / FILENAME).read_text())
    assert raw["format"] == "driftwatch-checkpoint"
    assert raw["version"] == 1
    assert raw["driftwatch_version"] == __version__
    assert isinstance(raw["saved_at"], float)
    assert raw["payload"] == {"offsets": {}, "monitors": {}}
    read = store.read()
    assert read is not None
    assert read.saved_at == raw["saved_at"]
    assert read.driftwatch_version == __version__
    assert read.path == tmp_path / FILENAME


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4)
    ),
    max_leaves=20,
)


@settings(max_examples=60, deadline=None)
@given(payload=st.dictionaries(st.text(max_size=5), json_values, max_size=4))
def test_any_json_tree_round_trips_exactly(
    tmp_path_factory: pytest.TempPathFactory, payload: dict[str, Any]
) -> None:
    store = CheckpointStore(tmp_path_factory.mktemp("ckpt"))
    store.save(payload)
    assert same(store.load(), payload)


def test_tuples_and_read_only_mappings_are_accepted(tmp_path: Path) -> None:
    store = CheckpointStore(tmp_path)
    store.save(MappingProxyType({"pair": (1, 2.5), "inner": MappingProxyType({"a": ()})}))
    assert store.load() == {"pair": [1, 2.5], "inner": {"a": []}}


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        ({"monitors": {1: "x"}}, r"payload\['monitors'\] has key 1 of type int"),
        ({"x": {1.5, 2.5}}, r"payload\['x'\] is a set"),
        ({"x": [object()]}, r"payload\['x'\]\[0\] is a object"),
    ],
)
def test_what_json_would_change_is_refused_and_nothing_written(
    tmp_path: Path, payload: dict[str, Any], message: str
) -> None:
    store = CheckpointStore(tmp_path)
    store.save({"generation": 1})
    with pytest.raises(TypeError, match=message):
        store.save(payload)
    assert store.load() == {"generation": 1}
    assert sorted(p.name for p in tmp_path.iterdir()) == [FILENAME]


def test_a_payload_containing_itself_is_refused(tmp_path: Path) -> None:
    loop: dict[str, Any] = {}
    loop["self"] = loop
    with pytest.raises(TypeError, match="contains itself"):
        CheckpointStore(tmp_path).save(loop)


def test_save_replaces_the_previous_checkpoint(tmp_path: Path) -> None:
    store = CheckpointStore(tmp_path)
    store.save({"generation": 1})
    store.save({"generation": 2})
    assert store.load() == {"generation": 2}
    assert CheckpointStore(tmp_path).load() == {"generation": 2}
    assert sorted(p.name for p in tmp_path.iterdir()) == [FILENAME]


def test_directory_is_created(tmp_path: Path) -> None:
    store = CheckpointStore(tmp_path / "a" / "b")
    store.save({"x": 1})
    assert (tmp_path / "a" / "b" / FILENAME).exists()


# ------------------------------------------------------------------------------------------------
# Crashes


def test_failed_replace_keeps_the_previous_checkpoint_and_no_temporary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = CheckpointStore(tmp_path)
    store.save({"generation": 1})

    def crash(src: object, dst: object) -> None:
        raise OSError("disk on fire")

    monkeypatch.setattr("driftwatch.state.checkpoint.os.replace", crash)
    with pytest.raises(OSError, match="disk on fire"):
        store.save({"generation": 2})
    monkeypatch.undo()
    assert store.load() == {"generation": 1}
    assert sorted(p.name for p in tmp_path.iterdir()) == [FILENAME]


def test_failed_write_keeps_the_previous_checkpoint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = CheckpointStore(tmp_path)
    store.save({"generation": 1})

    def crash(fd: int) -> None:
        raise OSError("fsync failed")

    monkeypatch.setattr("driftwatch.state.checkpoint.os.fsync", crash)
    with pytest.raises(OSError, match="fsync failed"):
        store.save({"generation": 2})
    monkeypatch.undo()
    assert store.load() == {"generation": 1}
    assert sorted(p.name for p in tmp_path.iterdir()) == [FILENAME]


def test_process_killed_mid_save_leaves_the_previous_checkpoint(tmp_path: Path) -> None:
    # A real process, SIGKILLed while its new checkpoint is half on disk: no Python cleanup
    # runs, exactly like a crash or an OOM kill.
    CheckpointStore(tmp_path).save({"generation": 1})
    script = textwrap.dedent(
        """
        import os, sys, time
        from driftwatch.state import checkpoint
        from driftwatch.state.checkpoint import CheckpointStore

        def stall(fd):
            os.write(1, b"writing\\n")
            time.sleep(60)

        checkpoint.os.fsync = stall  # the data is written to the temporary, not yet synced
        CheckpointStore(sys.argv[1]).save({"generation": 2, "bulk": list(range(100_000))})
        """
    )
    child = subprocess.Popen(
        [sys.executable, "-c", script, str(tmp_path)],
        stdout=subprocess.PIPE,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    try:
        assert child.stdout is not None
        assert child.stdout.readline() == b"writing\n"
        child.kill()
    finally:
        child.wait(10)
    leftovers = [p.name for p in tmp_path.iterdir() if p.name != FILENAME]
    assert len(leftovers) == 1 and leftovers[0].endswith(".tmp")
    store = CheckpointStore(tmp_path)  # opening the store removes the leftover
    assert store.load() == {"generation": 1}
    assert sorted(p.name for p in tmp_path.iterdir()) == [FILENAME]


# ------------------------------------------------------------------------------------------------
# Refusals


def test_truncated_checkpoint_is_refused(tmp_path: Path) -> None:
    store = CheckpointStore(tmp_path)
    path = store.save(PAYLOAD)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(CheckpointError, match="corrupt or truncated"):
        store.load()


@pytest.mark.parametrize("content", [b"", b"\xff\xfe garbage", b'{"format": '])
def test_corrupt_checkpoint_is_refused(tmp_path: Path, content: bytes) -> None:
    (tmp_path / FILENAME).write_bytes(content)
    with pytest.raises(CheckpointError, match=FILENAME):
        CheckpointStore(tmp_path).load()


def write_envelope(tmp_path: Path, **fields: Any) -> None:
    envelope = {
        "format": "driftwatch-checkpoint",
        "version": 1,
        "driftwatch_version": "0.1.0",
        "saved_at": 1.0,
        "payload": {},
    }
    envelope.update(fields)
    (tmp_path / FILENAME).write_text(json.dumps(envelope))


def test_other_version_is_refused_naming_both_versions(tmp_path: Path) -> None:
    write_envelope(tmp_path, version=2, driftwatch_version="9.0.0")
    with pytest.raises(CheckpointError) as caught:
        CheckpointStore(tmp_path).load()
    message = str(caught.value)
    assert "version 2" in message and "version 1 only" in message and "9.0.0" in message


@pytest.mark.parametrize(
    "fields",
    [
        {"format": "something-else"},
        {"payload": [1, 2]},
        {"saved_at": "yesterday"},
        {"driftwatch_version": None},
    ],
)
def test_malformed_envelope_is_refused(tmp_path: Path, fields: dict[str, Any]) -> None:
    write_envelope(tmp_path, **fields)
    with pytest.raises(CheckpointError):
        CheckpointStore(tmp_path).load()


def test_not_an_object_is_refused(tmp_path: Path) -> None:
    (tmp_path / FILENAME).write_text("[1, 2, 3]")
    with pytest.raises(CheckpointError, match="not a driftwatch checkpoint"):
        CheckpointStore(tmp_path).load()


# ------------------------------------------------------------------------------------------------
# Offsets


def test_offsets_round_trip() -> None:
    offsets = {("events", 0): 10, ("events", 12): 0, ("other.topic-v2", 3): 2**40}
    encoded = encode_offsets(offsets)
    assert encoded == {"events:0": 10, "events:12": 0, "other.topic-v2:3": 2**40}
    assert decode_offsets(encoded) == offsets


@pytest.mark.parametrize(
    "encoded",
    [
        {"events": 1},
        {":0": 1},
        {"events:x": 1},
        {"events:-1": 1},
        {"events:0": -1},
        {"events:0": "1"},
        {"events:0": True},
    ],
)
def test_malformed_offsets_are_refused(encoded: dict[str, Any]) -> None:
    with pytest.raises(CheckpointError, match="offsets"):
        decode_offsets(encoded)


# ------------------------------------------------------------------------------------------------
# With a real monitor


def test_monitor_state_survives_a_checkpoint(tmp_path: Path) -> None:
    config = MonitorConfig(
        window_size=150,
        sample_every=10,
        watches=(
            Watch("auc", (DetectorSpec("page_hinkley"), DetectorSpec("adwin"))),
            Watch("gmean", (DetectorSpec("page_hinkley"),), normalized=True, floor=0.8),
        ),
    )
    rng = random.Random(3)
    events = [
        Event(y, rng.gauss(1.0 if y and i < 700 else 0.0, 1.0), ts=1.7e9 + i)
        for i in range(1400)
        for y in [int(rng.random() < 0.25)]
    ]
    original = Monitor("fraud", config)
    for event in events[:600]:
        original.update(event)
    store = CheckpointStore(tmp_path)
    store.save(
        {
            "offsets": encode_offsets({("events", 0): 600}),
            "monitors": {"fraud": original.export_state()},
        }
    )

    payload = CheckpointStore(tmp_path).load()
    assert payload is not None
    assert decode_offsets(payload["offsets"]) == {("events", 0): 600}
    restored = Monitor.restore(payload["monitors"]["fraud"])
    fired = 0
    for event in events[600:]:
        expected = [alarm_record(a) for a in original.update(event)]
        assert [alarm_record(a) for a in restored.update(event)] == expected
        fired += len(expected)
    assert fired > 0  # the continuation exercised the restored detectors
    assert same(asdict_snapshot(original), asdict_snapshot(restored))


def asdict_snapshot(monitor: Monitor) -> dict[str, Any]:
    snap = monitor.snapshot()
    return {
        "values": dict(snap.values),
        "normalized": dict(snap.normalized),
        "thresholds": dict(snap.thresholds),
        "states": {"/".join(k): v for k, v in snap.detector_states.items()},
        "alarms": {"/".join(k): v for k, v in snap.alarms.items()},
        "counts": [snap.events, snap.positives, snap.negatives],
    }


# ------------------------------------------------------------------------------------------------
# An unusable directory is found when the store is opened, not at the first save


def test_a_directory_that_is_a_file_is_refused_at_once(tmp_path: Path) -> None:
    afile = tmp_path / "state"
    afile.write_text("")
    with pytest.raises(CheckpointDirectoryError, match=f"{afile}.*exists"):
        CheckpointStore(afile)
    with pytest.raises(CheckpointDirectoryError, match="Not a directory"):
        CheckpointStore(afile / "below")
    assert afile.read_text() == ""


def test_opening_leaves_nothing_behind(tmp_path: Path) -> None:
    CheckpointStore(tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_a_checkpoint_that_cannot_be_read_is_a_clean_refusal(tmp_path: Path) -> None:
    (tmp_path / FILENAME).mkdir()  # e.g. a volume mounted at the wrong place
    with pytest.raises(CheckpointError, match=f"cannot read checkpoint .*{FILENAME}"):
        CheckpointStore(tmp_path).read()
