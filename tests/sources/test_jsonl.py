"""The JSON Lines source on real files and pipes: lines as records numbered as replay numbers
them, a file followed as it grows, a half-written line never taken, the checkpoint's line
resumed at, a missing file waited for and named."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from driftwatch.sources import Record, TopicPartition
from driftwatch.sources.jsonl import JsonLinesFile, jsonl_source
from driftwatch.sources.memory import MemorySource
from driftwatch.sources.protocol import SourceContext


def drain(source: JsonLinesFile) -> list[Record]:
    """Poll until a poll brings nothing."""
    records: list[Record] = []
    while polled := source.poll():
        records += polled
    return records


def test_lines_are_records_numbered_from_one_blank_lines_counted_not_taken(
    tmp_path: Path,
) -> None:
    path = tmp_path / "in.jsonl"
    path.write_bytes(b'{"a": 1}\n\n  \n{"a": 2}\r\n{"a": 3}\n')
    with JsonLinesFile(str(path), wait_s=0.01) as source:
        records = drain(source)
    assert records == [Record(str(path), 0, 1, None, b'{"a": 1}', 0),
                       Record(str(path), 0, 4, None, b'{"a": 2}', 0),
                       Record(str(path), 0, 5, None, b'{"a": 3}', 0)]


def test_a_growing_file_is_followed_and_a_half_written_line_waits_for_its_newline(
    tmp_path: Path,
) -> None:
    path = tmp_path / "in.jsonl"
    path.write_bytes(b'{"a": 1}\n{"a": ')
    with JsonLinesFile(str(path), wait_s=0.01) as source, path.open("ab") as writer:
        assert [r.value for r in drain(source)] == [b'{"a": 1}']
        writer.write(b'2}')
        writer.flush()
        assert drain(source) == []  # no newline yet: maybe more of the line is coming
        writer.write(b'\n{"a": 3}\n')
        writer.flush()
        assert [(r.offset, r.value) for r in drain(source)] == [(2, b'{"a": 2}'),
                                                                (3, b'{"a": 3}')]


def test_the_partition_resumes_at_the_offset_the_assignment_hook_gives(tmp_path: Path) -> None:
    path = tmp_path / "in.jsonl"
    path.write_bytes(b"".join(b'{"n": %d}\n' % n for n in range(1, 11)))
    asked: list[set[object]] = []

    def hook(partitions: set[object]) -> dict[object, int]:
        asked.append(partitions)
        return {TopicPartition(str(path), 0): 8}  # lines 1..7 are in the checkpoint

    context = SourceContext(hook, kafka=lambda: MemorySource([]))
    with jsonl_source(context, path=str(path), poll_interval_seconds=0.01) as source:
        assert [r.offset for r in drain(source)] == [8, 9, 10]
    assert asked == [{(str(path), 0)}]


def test_a_missing_file_is_waited_for_and_named_by_its_setting(tmp_path: Path) -> None:
    path = tmp_path / "later.jsonl"
    with JsonLinesFile(str(path), wait_s=0.01) as source:
        assert source.poll() == []
        assert not source.ready
        assert source.problem is not None
        assert source.problem.startswith(f"source.options.path: cannot open {str(path)!r}")
        path.write_bytes(b'{"a": 1}\n')
        assert [r.value for r in source.poll()] == [b'{"a": 1}']
        assert source.ready and source.problem is None


def test_a_pipe_is_read_as_it_is_written_and_its_end_is_no_error() -> None:
    read_end, write_end = os.pipe()
    saved_stdin = os.dup(0)
    os.dup2(read_end, 0)  # the source reads "-" as file descriptor 0
    try:
        with JsonLinesFile("-", wait_s=0.01) as source:
            assert source.poll() == [] and source.ready  # nothing written yet
            os.write(write_end, b'{"a": 1}\n{"a": 2}\n')
            assert [(r.topic, r.offset) for r in drain(source)] == [("stdin", 1), ("stdin", 2)]
            os.close(write_end)
            assert source.poll() == []
    finally:
        os.dup2(saved_stdin, 0)
        os.close(saved_stdin)
        os.close(read_end)


def test_commits_are_counted_and_a_closed_source_refuses_to_poll(tmp_path: Path) -> None:
    path = tmp_path / "in.jsonl"
    path.write_bytes(b'{"a": 1}\n')
    source = JsonLinesFile(str(path), wait_s=0.01)
    drain(source)
    assert source.commit({TopicPartition(str(path), 0): 2}) is True
    assert (source.commits, source.commit_failures, source.reconnects) == (1, 0, 0)
    assert source.reachable and source.lag() == {}
    source.close()
    assert not source.ready and not source.reachable
    with pytest.raises(RuntimeError, match="closed"):
        source.poll()


@pytest.mark.parametrize(("options", "message"), [
    ({"path": ""}, "path must name a file"),
    ({"path": "x", "poll_interval_seconds": 0.0}, r"poll_interval_seconds must be in \(0, 10\]"),
    ({"path": "x", "poll_interval_seconds": 11.0}, r"poll_interval_seconds must be in \(0, 10\]"),
])
def test_the_factory_refuses_options_no_source_could_use(options: dict[str, object],
                                                         message: str) -> None:
    context = SourceContext(lambda partitions: None, kafka=lambda: MemorySource([]))
    with pytest.raises(ValueError, match=message):
        jsonl_source(context, **options)  # type: ignore[arg-type]
