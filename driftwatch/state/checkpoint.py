"""Checkpoints: the agent's state on disk, replaced atomically, refused when not understood.

A restarted agent must not be blind for a whole window (d events to refill it), so it saves
its monitors' state with the Kafka offsets they correspond to, and restores both on start.

The file is ``<directory>/checkpoint.json``, a JSON envelope::

    {"format": "driftwatch-checkpoint", "version": 1,
     "driftwatch_version": "0.1.0", "saved_at": 1700000000.123,
     "payload": {...}}

The payload the agent writes is::

    {"offsets":  {"topic:partition": next_offset, ...},
     "monitors": {model: Monitor.export_state(), ...},
     "rejected": {reason: count, ...}}

``next_offset`` is the offset of the first record *not* reflected in the monitors (the value
Kafka commits). Offsets and monitors are saved in one file, so they always agree: on restore
the agent seeks each partition to the checkpoint's offset and the records after it are
replayed into monitors that have not seen them; the agent commits only offsets a saved
checkpoint covers. A crash between two checkpoints costs a replay, never a gap or a double
count. ``rejected`` keeps the rejection counters across restarts (a checkpoint without it
restores them at 0).
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
    "CheckpointDirectoryError",
    "CheckpointError",
    "CheckpointSaveError",
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


class CheckpointDirectoryError(Exception):
    """The checkpoint directory cannot be created or written: found when the store is opened,
    so the agent refuses to start (a settings problem) rather than fail at its first save."""


class CheckpointSettingError(Exception):
    """A checkpoint setting the cluster cannot honour, found when the store is opened: the
    agent refuses to start (exit 2) naming the key and the reason, rather than fail at every
    save. ``key`` is the setting's path, e.g. ``("checkpoint", "topic_replication_factor")``."""

    def __init__(self, key: tuple[str, ...], reason: str) -> None:
        super().__init__(reason)
        self.key = key


class CheckpointSaveError(Exception):
    """The agent could not save its checkpoint when it stopped; it committed nothing, so the
    records since the last saved checkpoint are read again at the next start."""


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

    Raises:
        CheckpointDirectoryError: the directory cannot be created, or a file cannot be
            created in it (tried with a temporary file, as :meth:`save` will); the message
            names the directory and the system's reason.
    """

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = Path(directory)
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            fd, probe = tempfile.mkstemp(dir=self.directory, prefix=_TEMP_PREFIX,
                                         suffix=_TEMP_SUFFIX)
            os.close(fd)
            os.unlink(probe)
        except OSError as error:
            raise CheckpointDirectoryError(
                f"cannot write checkpoints to {self.directory}: "
                f"{error.strerror or error}"
            ) from None
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
        except OSError as error:  # a directory in its place, no permission, an I/O error
            raise CheckpointError(f"cannot read checkpoint {path}: "
                                  f"{error.strerror or error}") from None
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


_SCALARS = frozenset({str, bool, int, float, type(None)})
"""Exact types written as they are; their subclasses take the general path."""


class _NotPlain(TypeError):
    """Raised inside :func:`_plain`; the location is prepended on the way up (so building it
    costs nothing unless something is refused)."""

    def __init__(self, what: str) -> None:
        super().__init__(what)
        self.what = what
        self.location: list[str] = []


def _plain(value: Any, where: str) -> Any:
    """``value`` as dicts, lists and scalars, refusing what ``json`` would not give back unchanged.

    ``where`` names ``value`` in the ``TypeError`` message, which then locates the offending
    part, e.g. ``payload['x'][0] is a object``. O(size of ``value``); a list of plain scalars
    (most of a monitor's state: its window's events) is copied in one step.
    """
    try:
        return _plain_part(value, frozenset())
    except _NotPlain as error:
        raise TypeError(f"checkpoint {where}{''.join(reversed(error.location))} "
                        f"{error.what}") from None


def _plain_part(value: Any, open_: frozenset[int]) -> Any:
    if type(value) in _SCALARS or isinstance(value, str | bool | int | float):
        return value  # NaN and ±inf included: written as NaN / Infinity / -Infinity
    if not isinstance(value, Mapping | list | tuple):
        raise _NotPlain(f"is a {type(value).__name__}, which JSON cannot hold")
    if id(value) in open_:
        raise _NotPlain("contains itself")
    if not isinstance(value, Mapping):
        # json writes lists and tuples alike, so plain ones are kept, not copied: a window's
        # thousands of [label, score, prediction] lists cost one pass and no allocation.
        if all(type(item) in _SCALARS for item in value):
            return value
        if all(type(item) is list for item in value) and all(
                type(scalar) in _SCALARS for item in value for scalar in item):
            return value
        inside = open_ | {id(value)}
        items = []
        for index, item in enumerate(value):
            try:
                items.append(_plain_part(item, inside))
            except _NotPlain as error:
                error.location.append(f"[{index}]")
                raise
        return items
    inside = open_ | {id(value)}
    plain: dict[str, Any] = {}
    for key, item in value.items():
        if not isinstance(key, str):
            raise _NotPlain(
                f"has key {key!r} of type {type(key).__name__}; JSON keys are strings, so it "
                "would come back changed"
            )
        try:
            plain[key] = _plain_part(item, inside)
        except _NotPlain as error:
            error.location.append(f"[{key!r}]")
            raise
    return plain
