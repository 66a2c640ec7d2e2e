"""Checkpoints: the agent's state on disk, replaced atomically, refused when not understood.

A restarted agent must not be blind for a whole window (d events to refill it), so it saves
its monitors' state with the Kafka offsets they correspond to, and restores both on start.

The file is ``<directory>/checkpoint.json``, a JSON envelope::

    {"format": "driftwatch-checkpoint", "version": 1,
     "driftwatch_version": "0.1.0", "saved_at": 1700000000.123,
     "payload": {...}}

The payload the agent writes is::

    {"offsets":  {"topic:partition": next_offset, ...},
     "monitors": {model: Monitor.export_state(), ...}}

``next_offset`` is the offset of the first record *not* reflected in the monitors (the value
Kafka commits). Offsets and monitors are saved in one file, so they always agree: on restore
the agent seeks each partition to the checkpoint's offset (not to the group's committed one,
which may be ahead of it) and the records after it are replayed into monitors that have not
seen them. A crash between two checkpoints costs a replay, never a gap or a double count.
:func:`encode_offsets` / :func:`decode_offsets` convert the offset keys; Kafka topic names
cannot contain ``:``, so the key is unambiguous.

Floats round-trip exactly: :mod:`json` writes the shortest repr that reads back to the same
double, and ``NaN``, ``Infinity`` and ``-Infinity`` (which monitor state holds: an undefined
measure, a detector's running minimum) are written and read as the JavaScript-style literals
Python's :mod:`json` accepts. What JSON cannot hold is refused on save instead of being
changed silently: dict keys must be strings (``json`` would turn ``{1: x}`` into ``{"1": x}``)
and values must be dicts, lists, strings, numbers, booleans or None. Tuples are written as
lists and come back as lists.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from driftwatch import __version__

__all__ = [
    "FILENAME",
    "FORMAT",
    "VERSION",
    "Checkpoint",
    "CheckpointError",
    "CheckpointStore",
    "decode_offsets",
    "encode_offsets",
]

logger = logging.getLogger(__name__)

FORMAT = "driftwatch-checkpoint"
"""The envelope's ``format`` marker: refuses to read some other JSON file as a checkpoint."""

VERSION = 1
"""The envelope's ``version``; a checkpoint with any other version is refused."""

FILENAME = "checkpoint.json"

_TEMP_PREFIX = f".{FILENAME}."
_TEMP_SUFFIX = ".tmp"

_TopicPartition = TypeVar("_TopicPartition", bound=tuple[str, int])
"""A ``(topic, partition)`` key: a plain tuple or a NamedTuple such as the agent's."""


class CheckpointError(Exception):
    """A checkpoint exists but cannot be used: corrupt, truncated, or another format/version.

    The message names the file and what is wrong. The agent should stop rather than start
    from scratch silently; an operator who wants a fresh start moves the file away.
    """


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """A checkpoint as read back: the payload and where and when it was written."""

    path: Path
    payload: dict[str, Any]
    saved_at: float
    """Wall-clock time of the save, Unix seconds."""
    driftwatch_version: str
    """The driftwatch version that wrote it."""


class CheckpointStore:
    """Saves and loads ``checkpoint.json`` in one directory, crash-safely.

    :meth:`save` writes a temporary file in the same directory, flushes and fsyncs it, renames
    it over ``checkpoint.json`` with :func:`os.replace` (atomic on POSIX and Windows) and
    fsyncs the directory so the rename itself survives a power loss. A crash at any point
    leaves either the previous checkpoint or the new one, never a mixture; a temporary file
    left by a crash is removed when the next store is opened on the directory.

    Cost: O(size of the payload) per save, dominated by the fsyncs on most disks.

    One process writes a directory at a time (each replica has its own); the store does not
    lock it.

    Parameters:
        directory: where the checkpoint lives; created (with parents) if missing.
    """

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self._remove_stale_temporaries()

    @property
    def path(self) -> Path:
        """The checkpoint file: ``<directory>/checkpoint.json``."""
        return self.directory / FILENAME

    def save(self, payload: Mapping[str, Any]) -> Path:
        """Write ``payload`` as the new checkpoint, atomically; return the checkpoint's path.

        Raises:
            TypeError: the payload holds something JSON would not give back unchanged; the
                message gives its location. Nothing is written.
            OSError: the disk refused; the previous checkpoint is untouched.
        """
        plain = _plain(payload, "payload")
        envelope = {
            "format": FORMAT,
            "version": VERSION,
            "driftwatch_version": __version__,
            "saved_at": time.time(),
            "payload": plain,
        }
        data = json.dumps(envelope, allow_nan=True, separators=(",", ":")).encode("utf-8")
        fd, temporary = tempfile.mkstemp(dir=self.directory, prefix=_TEMP_PREFIX,
                                         suffix=_TEMP_SUFFIX)
        try:
            with os.fdopen(fd, "wb") as file:
                file.write(data)
                file.flush()
                os.fsync(file.fileno())
            os.replace(temporary, self.path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            raise
        _fsync_directory(self.directory)
        return self.path

    def load(self) -> dict[str, Any] | None:
        """The saved payload, or None when there is no checkpoint yet.

        Raises:
            CheckpointError: the file is corrupt or truncated, not a driftwatch checkpoint, or
                of another version. Nothing of it is returned.
        """
        checkpoint = self.read()
        return None if checkpoint is None else checkpoint.payload

    def read(self) -> Checkpoint | None:
        """Like :meth:`load`, with the envelope's metadata (for the agent's start-up log)."""
        path = self.path
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            return None
        try:
            envelope = json.loads(data.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as error:
            raise CheckpointError(
                f"checkpoint {path} is corrupt or truncated ({error}); refusing to load it. "
                "Move it away to start from an empty state."
            ) from None
        if not isinstance(envelope, dict) or envelope.get("format") != FORMAT:
            raise CheckpointError(f"{path} is not a driftwatch checkpoint (no format marker "
                                  f"{FORMAT!r}); refusing to load it")
        version = envelope.get("version")
        writer = envelope.get("driftwatch_version")
        if version != VERSION:
            raise CheckpointError(
                f"checkpoint {path} has format version {version!r} (written by driftwatch "
                f"{writer}); this driftwatch ({__version__}) reads version {VERSION} only"
            )
        payload = envelope.get("payload")
        saved_at = envelope.get("saved_at")
        if (not isinstance(payload, dict) or not isinstance(writer, str)
                or isinstance(saved_at, bool) or not isinstance(saved_at, int | float)):
            raise CheckpointError(f"checkpoint {path} is malformed: the envelope needs a "
                                  "payload object, a driftwatch_version and a saved_at time")
        return Checkpoint(path, payload, float(saved_at), writer)

    def _remove_stale_temporaries(self) -> None:
        for stale in self.directory.glob(f"{_TEMP_PREFIX}*{_TEMP_SUFFIX}"):
            try:
                stale.unlink()
            except OSError as error:
                logger.warning("cannot remove stale checkpoint temporary %s: %s", stale, error)
            else:
                logger.info("removed %s, left by an interrupted checkpoint save", stale)


def encode_offsets(offsets: Mapping[_TopicPartition, int]) -> dict[str, int]:
    """``{(topic, partition): next_offset}`` → the payload's ``{"topic:partition": offset}``."""
    return {f"{topic}:{partition}": int(offset)
            for (topic, partition), offset in sorted(offsets.items())}


def decode_offsets(encoded: Mapping[str, Any]) -> dict[tuple[str, int], int]:
    """The inverse of :func:`encode_offsets`; a malformed entry raises :class:`CheckpointError`."""
    offsets: dict[tuple[str, int], int] = {}
    for key, offset in encoded.items():
        topic, colon, partition = str(key).rpartition(":")
        if (not colon or not topic or not partition.isdigit()
                or isinstance(offset, bool) or not isinstance(offset, int) or offset < 0):
            raise CheckpointError(
                f"checkpoint offsets: {key!r}: {offset!r} is not \"topic:partition\": offset"
            )
        offsets[(topic, int(partition))] = offset
    return offsets


def _fsync_directory(directory: Path) -> None:
    # Makes the rename durable. Not every platform can open or fsync a directory (Windows
    # cannot; some network filesystems refuse): there the rename is as durable as they allow.
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _plain(value: Any, where: str, _open: frozenset[int] = frozenset()) -> Any:
    """``value`` as dicts, lists and scalars, refusing what ``json`` would not give back unchanged.

    ``where`` locates the offending part in the ``TypeError`` message.
    """
    if value is None or isinstance(value, str | bool | int | float):
        return value  # NaN and ±inf included: written as NaN / Infinity / -Infinity
    if isinstance(value, Mapping | list | tuple):
        if id(value) in _open:
            raise TypeError(f"checkpoint {where} contains itself")
        inside = _open | {id(value)}
        if not isinstance(value, Mapping):
            return [_plain(item, f"{where}[{index}]", inside) for index, item in enumerate(value)]
        plain: dict[str, Any] = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise TypeError(
                    f"checkpoint {where} has key {key!r} of type {type(key).__name__}; JSON "
                    "keys are strings, so it would come back changed"
                )
            plain[key] = _plain(item, f"{where}[{key!r}]", inside)
        return plain
    raise TypeError(f"checkpoint {where} is a {type(value).__name__}, which JSON cannot hold")
