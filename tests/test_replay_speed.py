"""The fast replay gives the slow replay's results: the fast decoder against the agent's
decoder on generated records, chunked replay against the per-record path it replaced, several
processes against one, the figure's samples where the monitor samples, and the time axis."""

from __future__ import annotations

import json
import random
import struct
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchmarks.replay import comparable, per_record_replay, write_file
from driftwatch.commands.main import main
from driftwatch.core.monitor import DetectorSpec, Monitor, MonitorConfig, Watch
from driftwatch.decoding import fast_decoder
from driftwatch.decoding.decoder import EventFormat, decode
from driftwatch.decoding.fast_decoder import FastDecoder
from driftwatch.replay.parallel import jobs_for, run_parallel
from driftwatch.replay.plot import over_time
from driftwatch.replay.progress import format_duration
from driftwatch.replay.run import Replay, ReplayResult, run
from driftwatch.replay.sources import JsonLinesSource
from tests.conftest import tool_missing

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "examples" / "events-drift.jsonl"


@pytest.fixture
def matplotlib_available() -> None:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        tool_missing("matplotlib", "the plot extra: pip install 'driftwatch-agent[plot]'")


# ------------------------------------------------------------------------------------------
# the fast decoder ≡ the agent's decoder

LABELS = [0, 1, True, False, 1.0, 0.0, 2, -1, "1", "0", "fraud", "legit", None, [1], {"a": 1},
          2**64, 2**70, ""]
SCORES = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(min_value=-(2**80), max_value=2**80),
    st.sampled_from([True, False, None, "0.5", "", [0.5], 1e308, -0.0, 5e-324]),
)
TIMES = st.one_of(
    st.none(), st.floats(allow_nan=True, allow_infinity=True),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.sampled_from(["2024-06-01T00:00:00Z", "2024-06-01 00:00", "yesterday", True, 1e11,
                     99_999_999_999.0, [1]]),
)
MODELS = st.one_of(st.none(), st.text(max_size=5), st.sampled_from(["", "x" * 201, "x" * 200,
                                                                    7, True, ["m"]]))
KEY_NAMES = st.sampled_from(["label", "score", "prediction", "ts", "model", "y", "p"])


@st.composite
def records(draw: st.DrawFn) -> bytes:
    obj: dict[str, Any] = {}
    for name, values in (("label", st.sampled_from(LABELS)), ("score", SCORES),
                         ("prediction", st.sampled_from([None, *LABELS])), ("ts", TIMES),
                         ("model", MODELS)):
        if draw(st.booleans()) or (name in ("label", "score") and draw(st.booleans())):
            obj[name] = draw(values)
    for _ in range(draw(st.integers(0, 2))):
        obj[draw(KEY_NAMES)] = draw(st.sampled_from([1, "x", None, 1e400, 2**70]))
    text = json.dumps(obj)  # allow_nan: NaN and Infinity literals, as some producers write
    mangle = draw(st.sampled_from(["", "", "", "bom", "cut", "dup", "space", "list", "utf16",
                                   "surrogate", "huge_int", "crlf"]))
    if mangle == "bom":
        return b"\xef\xbb\xbf" + text.encode()
    if mangle == "cut":
        return text.encode()[: draw(st.integers(0, max(0, len(text) - 1)))]
    if mangle == "dup" and text != "{}":
        return (text[:-1] + ', "label": ' + json.dumps(draw(st.sampled_from(LABELS))) +
                "}").encode()
    if mangle == "space":
        return b" \t" + text.encode() + b" \r\n"
    if mangle == "list":
        return b"[" + text.encode() + b"]"
    if mangle == "utf16":
        return text.encode("utf-16")
    if mangle == "surrogate" and text != "{}":
        return (text[:-1] + ', "model": "\\ud800"}').encode()
    if mangle == "huge_int" and text != "{}":
        return (text[:-1] + ', "score": 1' + "0" * 30 + "}").encode()
    if mangle == "crlf":
        return text.encode() + b"\r\n"
    return text.encode()


FORMATS = [
    EventFormat(),
    EventFormat(positive_label="fraud", negative_label="legit", label_field="y",
                score_field="p"),
    EventFormat(positive_label=True, negative_label=False, model_source="constant",
                model_constant="m"),
    EventFormat(positive_label=2, negative_label=-1, model_source="key"),
    EventFormat(max_record_bytes=40, model_field="ts", time_field="model"),
]


def decoded_equal(fast: Any, slow: Any) -> bool:
    return repr(fast) == repr(slow)  # Event and Rejected compare by value; repr shows NaN too


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(value=records(), fmt=st.sampled_from(FORMATS),
       key=st.sampled_from([None, b"churn", b"\xff"]))
def test_fast_decoder_gives_the_decoders_result(value: bytes, fmt: EventFormat,
                                                key: bytes | None) -> None:
    try:
        expected: Any = decode(value, key, fmt)
    except OverflowError:  # the decoder's own failure on scores beyond a double; not ours
        return
    assert decoded_equal(FastDecoder(fmt)(value, key), expected)
    assert decoded_equal(FastDecoder(fmt, loads=json.loads)(value, key), expected)


def plain(draw: st.DrawFn) -> bytes:
    """A record of the shapes runs of plain records have (and a few they do not)."""
    obj: dict[str, Any] = {"label": draw(st.sampled_from([0, 1, 1, True, 1.0, 2, "1"])),
                           "score": draw(st.sampled_from([0.25, -1.5, 3e-5, 7, float("nan")]))}
    ts = draw(st.sampled_from([1717200000.5, 1717200001, None, None, "2024-06-01", 1e12]))
    if ts is not None:
        obj["ts"] = ts
    model = draw(st.sampled_from([None, None, "m", "m", "n", "", 7]))
    if model is not None:
        obj["model"] = model
    if draw(st.integers(0, 9)) == 0:
        obj["prediction"] = draw(st.sampled_from([0, 1, None]))
    return (json.dumps(obj) + "\n").encode()


@st.composite
def runs(draw: st.DrawFn) -> list[bytes]:
    """Runs of lines: mostly plain records, often uniform, sometimes anything at all."""
    shape = draw(st.sampled_from(["uniform", "uniform", "plain", "messy"]))
    count = draw(st.integers(1, 12))
    if shape == "messy":
        return [draw(records()) + draw(st.sampled_from([b"\n", b"", b"\r\n"]))
                for _ in range(count)]
    if shape == "plain":
        return [plain(draw) for _ in range(count)]
    score, ts = draw(st.floats(-5, 5)), draw(st.sampled_from([1.5e9, 1717200000, None]))
    return [(json.dumps({"label": draw(st.sampled_from([0, 1])), "score": score + i,
                         **({} if ts is None else {"ts": ts + i})}) + "\n").encode()
            for i in range(count)]


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(lines=runs(), fmt=st.sampled_from(FORMATS))
def test_a_run_parsed_and_taken_at_once_is_each_line_on_its_own(lines: list[bytes],
                                                                  fmt: EventFormat) -> None:
    """parse_lines gives each line's own parse or nothing; columns gives what values gives
    each line, all of one model and without predictions, or nothing."""
    decoder = FastDecoder(fmt)
    parsed = decoder.parse_lines(lines)
    if parsed is None:
        return
    assert parsed == [decoder._loads(line) for line in lines]  # the parser of the fast path
    columns = decoder.columns(lines, parsed)
    if columns is None:
        return
    assert [decoder.values(line) for line in lines] == [
        (columns.model, y, s, None, t)
        for y, s, t in zip(columns.labels, columns.scores, columns.times, strict=True)]


def test_a_plain_run_is_taken_whole() -> None:
    decoder = FastDecoder(EventFormat())
    lines = [b'{"label": 1, "score": 0.5, "ts": 1717200000.5}\n',
             b'{"label": 0, "score": -0.5, "ts": 1717200000.75}\n']
    parsed = decoder.parse_lines(lines)
    assert parsed is not None
    assert decoder.columns(lines, parsed) == ("default", [1, 0], [0.5, -0.5],
                                              [1717200000.5, 1717200000.75])
    # one line of another shape, and the run goes record by record
    odd = [*lines, b'{"label": 1, "score": 1}\n']
    odd_parsed = decoder.parse_lines(odd)
    assert odd_parsed is not None and decoder.columns(odd, odd_parsed) is None
    assert decoder.parse_lines([*lines, b'{"label": 1, "score": [1]}\n']) is None  # a bracket
    assert decoder.parse_lines([b'{"label": 1,\n', b'"score": 1}\n']) is None


@pytest.mark.parametrize("lines", [
    # An object running over two lines, and a line of two objects: as many values as lines,
    # but not each line's own (the first line alone is not JSON).
    [b'{"label": 1\n', b'"score": 0.5}\n', b'{"label": 0, "score": 1.5},{"label": 1}\n'],
    # The same through an array, with every line {...}.
    [b'{"a": [{"label": 1}\n', b'{"score": 0.5}]}\n', b'{"label": 0},{"score": 1.5}\n'],
])
def test_values_that_straddle_lines_are_never_taken_for_theirs(lines: list[bytes]) -> None:
    decoder = FastDecoder(EventFormat())
    assert decoder.parse_lines(lines) is None


def test_fast_path_takes_plain_records_and_leaves_the_rest() -> None:
    fast = FastDecoder(EventFormat()).fast
    assert fast(b'{"label": 1, "score": 0.5, "ts": 1717200000, "model": "m"}\n') is not None
    assert fast(b'{"label": true, "score": 1, "prediction": 0}') is not None
    for unusual in [b'{"label": 1, "score": 0.5, "ts": "2024-06-01T00:00:00"}',  # valid
                    b'{"label": 1, "score": NaN}', b'{"label": 1.0, "score": 0.5}', b"",
                    b"\xef\xbb\xbf{}", b'{"label": [1], "score": 0.5}']:
        assert fast(unusual) is None, unusual


def test_without_orjson_the_standard_library_parses(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fast_decoder, "_orjson_loads", None)
    decoder = FastDecoder(EventFormat())
    assert decoder._loads is json.loads
    assert decoder.fast(b'{"label": 1, "score": 0.5}') is not None


# ------------------------------------------------------------------------------------------
# chunked replay ≡ the per-record replay it replaced


def messy_file(path: Path, models: int = 4, records: int = 12_000) -> list[str]:
    """Interleaved models, with bad, blank, unusual-but-valid and CRLF lines among them."""
    write_file(path, models, records)
    lines = path.read_text(encoding="utf-8").splitlines()
    rng = random.Random(5)
    extras = ['{not json', '', '{"label": 7, "score": 0.5}', '{"label": 1, "score": NaN}',
              '{"label": 1, "score": 0.4, "ts": "2024-06-01T00:00:00Z", "model": "model-1"}',
              '{"label": 0, "score": 0.3, "model": "late-model"}', "[1, 2]", "   ",
              '{"y": 1}']
    for extra in extras * 8:
        lines.insert(rng.randrange(len(lines)), extra)
    text = "\n".join(lines[:500]) + "\n" + "\r\n".join(lines[500:]) + "\n"
    path.write_text(text, encoding="utf-8")
    return lines


def one_process(path: Path, fmt: EventFormat, max_models: int = 1000,
                **options: Any) -> ReplayResult:
    return run(JsonLinesSource(str(path)), Replay(fmt, lambda _m: MonitorConfig(), max_models,
                                                   **options), str(path))


@pytest.mark.parametrize("max_models", [1000, 3])
def test_chunked_replay_is_the_per_record_replay(tmp_path: Path, max_models: int) -> None:
    path = tmp_path / "events.jsonl"
    messy_file(path)
    fmt = EventFormat()

    before = per_record_replay(str(path), fmt, lambda _m: MonitorConfig(), max_models)
    after = one_process(path, fmt, max_models)

    assert comparable(after) == comparable(before)
    assert after.alarms and after.bad_records  # the comparison covers both
    if max_models == 3:
        assert after.rejected["too_many_models"] > 0


def test_example_replay_is_the_per_record_replay() -> None:
    from driftwatch.settings import load_settings

    settings = load_settings(ROOT / "examples" / "sidecar.yaml")
    fmt = settings.events.event_format()
    before = per_record_replay(str(SAMPLE), fmt, settings.monitoring.monitor_config, 10)
    after = run(JsonLinesSource(str(SAMPLE)),
                Replay(fmt, settings.monitoring.monitor_config, 10), str(SAMPLE))
    assert comparable(after) == comparable(before)
    assert len(after.alarms) == 3


# ------------------------------------------------------------------------------------------
# several processes ≡ one


def series_of(result: ReplayResult) -> str:
    return json.dumps({m: [s.events, s.times, s.raw, s.normalized, s.thresholds,
                           s.positive_share] for m, s in result.series.items()}).replace(
        "NaN", "null")


@pytest.mark.parametrize(("jobs", "max_models"), [(2, 1000), (3, 1000), (2, 3)])
def test_processes_give_the_one_process_result(tmp_path: Path, jobs: int,
                                               max_models: int) -> None:
    path = tmp_path / "events.jsonl"
    messy_file(path)
    fmt = EventFormat()

    def make(share: tuple[int, int]) -> Replay:
        return Replay(fmt, lambda _m: MonitorConfig(), max_models, series_models=None,
                      share=share)

    single = one_process(path, fmt, max_models, series_models=None)
    split = run_parallel(str(path), make, jobs)

    assert comparable(split) == comparable(single)
    assert list(split.snapshots) == list(single.snapshots)
    assert series_of(split) == series_of(single)
    assert split.fields_seen == single.fields_seen


def test_processes_name_the_fields_when_everything_is_rejected(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    path.write_text("".join(f'{{"y{i % 7}": 1, "p": 0.5}}\n' for i in range(40)),
                    encoding="utf-8")
    fmt = EventFormat()
    single = one_process(path, fmt)
    split = run_parallel(str(path), lambda share: Replay(fmt, lambda _m: MonitorConfig(), 10,
                                                         share=share), 3)
    assert split.fields_seen == single.fields_seen == ("y0", "p", "y1", "y2", "y3", "y4")
    assert split.events == 0 and split.records == 40


def test_cli_output_is_the_same_with_any_number_of_processes(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "events.jsonl"
    messy_file(path, records=6_000)
    outputs = []
    for jobs in ("1", "2"):
        status = main(["replay", str(path), "--jobs", jobs, "--json"])
        captured = capsys.readouterr()
        assert status == 0
        report = json.loads(captured.out)
        report.pop("seconds")
        outputs.append((report, captured.err))
    assert outputs[0] == outputs[1]
    assert "line " in outputs[0][1]  # the rejected lines are shown either way


def test_jobs_follow_the_models_in_the_file(tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    one, four = tmp_path / "one.jsonl", tmp_path / "four.jsonl"
    write_file(one, 1, 1000)
    write_file(four, 4, 1000)
    monkeypatch.setattr("driftwatch.replay.parallel.idle_cpus", lambda: 8)
    assert jobs_for(str(one), EventFormat(), None) == 1
    assert jobs_for(str(four), EventFormat(), None) == 4
    assert jobs_for(str(four), EventFormat(model_source="constant"), None) == 1
    assert jobs_for("-", EventFormat(), None) == 1
    assert jobs_for(str(one), EventFormat(), 3) == 3
    monkeypatch.setattr("driftwatch.replay.parallel.idle_cpus", lambda: 1)
    assert jobs_for(str(four), EventFormat(), None) == 1


# ------------------------------------------------------------------------------------------
# the figure's samples and axis


def test_series_samples_where_the_monitor_feeds_its_detectors(tmp_path: Path) -> None:
    config = MonitorConfig(window_size=100, sample_every=7,
                           watches=(Watch("gmean", (DetectorSpec("adwin"),), floor=0.5),))
    path = tmp_path / "events.jsonl"
    write_file(path, 1, 1_000)
    replay = Replay(EventFormat(), lambda _m: config, 10, series_models=None)
    result = run(JsonLinesSource(str(path)), replay, str(path))

    (series,) = result.series.values()
    assert series.events == [n for n in range(1, 1_001) if n % 7 == 0 and n >= 100]
    # The monitor's own threshold of the floor is computed at its samples only: the series
    # holds, at each point, the threshold the monitor had just computed.
    monitor = Monitor("m", config)
    expected = []
    for line in path.read_bytes().splitlines():
        event = decode(line, None, EventFormat())
        monitor.update(event.event)  # type: ignore[union-attr]
        if monitor.sampled:
            expected.append(monitor.snapshot().thresholds["gmean"])
    assert series.thresholds["gmean"] == expected
    assert series.times[0] == 1_717_200_000 + 104  # the 105th event's time, one per second


def test_time_axis_when_records_carry_times(tmp_path: Path, matplotlib_available: None) -> None:
    import matplotlib.dates as mdates

    from driftwatch.replay.plot import _figure

    path = tmp_path / "events.jsonl"
    write_file(path, 1, 3_000)
    untimed = tmp_path / "untimed.jsonl"
    untimed.write_text("".join(json.dumps({k: v for k, v in json.loads(line).items()
                                           if k != "ts"}) + "\n"
                               for line in path.read_text().splitlines()), encoding="utf-8")
    timed = one_process(path, EventFormat(), series_models=None)
    plain = one_process(untimed, EventFormat(), series_models=None)

    assert over_time(timed.series["default"], "auto")
    assert not over_time(timed.series["default"], "events")
    assert not over_time(plain.series["default"], "auto")
    assert not over_time(plain.series["default"], "time")  # nothing to draw it over

    def x_axis(result: ReplayResult, axis: str) -> tuple[str, tuple[float, float]]:
        figure = _figure(result, ["default"], axis)  # type: ignore[arg-type]
        main_axes, strip = figure.axes[0], figure.axes[1]
        return strip.get_xlabel(), main_axes.get_xlim()

    label, (low, high) = x_axis(timed, "auto")
    assert label == "event time (UTC)"
    first, last = timed.series["default"].times[0], timed.series["default"].times[-1]
    assert mdates.num2date(low).timestamp() == pytest.approx(first)
    assert mdates.num2date(high).timestamp() == pytest.approx(last)
    assert x_axis(timed, "events") == ("processed events", (0.0, 3_000.0))
    assert x_axis(plain, "auto") == ("processed events", (0.0, 3_000.0))


def test_cli_time_axis_option(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                              matplotlib_available: None) -> None:
    path = tmp_path / "untimed.jsonl"
    path.write_text("".join(f'{{"label": {i % 3 == 0:d}, "score": {i % 10 / 10}}}\n'
                            for i in range(3000)), encoding="utf-8")
    figure = tmp_path / "f.png"
    status = main(["replay", str(path), "--plot", str(figure), "--x-axis", "time"])
    err = capsys.readouterr().err
    assert status == 0
    assert "--x-axis time: drawn over events for default" in err
    assert struct.unpack(">II", figure.read_bytes()[16:24])[0] > 0


def test_eta_is_written_in_minutes_and_hours() -> None:
    assert format_duration(42.4) == "0:42"
    assert format_duration(725) == "12:05"
    assert format_duration(3 * 3600 + 130) == "3:02:10"
