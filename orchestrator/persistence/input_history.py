"""`InputHistory`: what the user typed, one JSON line per input, safe for many processes.

The session record keeps everything that happened; an input history keeps only the
user's own inputs, across sessions, for the things a shell's history is for (recall,
search, re-running a prompt). One file holds every session's inputs, one JSON object a
line: `{"session_id": "...", "ts": 1764750000.0, "text": "..."}`.

- **Appends are whole lines.** Each line goes out in one `write(2)` on a descriptor
  opened with `O_APPEND`, under an advisory `flock` shared by every writer, so lines of
  two processes never interleave.
- **The file stays under `max_bytes`.** When an append takes it over, the oldest lines
  are dropped until it is at most `0.8 * max_bytes` (so that the next appends do not trim
  again at once), under the exclusive lock, written to a temporary file and renamed over
  the old one: a crash mid-trim leaves the old file whole.
- **A damaged file is rebuilt.** Reading skips lines that are not whole entries (a power
  loss can leave half a line); `check()` counts them and `repair()` rewrites the file with
  only the whole entries, the same way a trim does.

```python
history = InputHistory(Path("~/.context-graph/inputs.jsonl").expanduser())
history.append("Fix the failing test", session_id="s1")
[entry.text for entry in history.entries(session_id="s1")]
history.follow(manager, session_id="s1")  # every user turn the manager records, from now on
```
"""

from __future__ import annotations

import fcntl
import json
import math
import os
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from context_graph.errors import ConfigurationError
from context_graph.graph.nodes import UserNode

if TYPE_CHECKING:
    from orchestrator.bus import EventBus

__all__ = ["HistoryCheck", "InputEntry", "InputHistory"]

#: The share of `max_bytes` a trim brings the file down to.
TRIM_TO = 0.8
DEFAULT_MAX_BYTES = 4 * 1024 * 1024


@dataclass(frozen=True)
class InputEntry:
    """One input of the user's."""

    session_id: str
    ts: float
    """When it was recorded, seconds since the epoch."""
    text: str


@dataclass(frozen=True)
class HistoryCheck:
    """What `check()` found: whole entries, and lines that are not."""

    entries: int
    damaged: int
    """Lines that are not one whole entry (cut short, not JSON, missing a field)."""

    @property
    def ok(self) -> bool:
        """Whether every line is a whole entry."""
        return self.damaged == 0


def _entry(line: bytes) -> InputEntry | None:
    """The entry a line holds, or `None` when it is not a whole one."""
    try:
        value = json.loads(line)
    except (ValueError, UnicodeDecodeError):
        return None
    if not isinstance(value, dict):
        return None
    session, ts, text = value.get("session_id"), value.get("ts"), value.get("text")
    if not isinstance(session, str) or not isinstance(text, str):
        return None
    if isinstance(ts, bool) or not isinstance(ts, int | float) or not math.isfinite(ts):
        return None
    return InputEntry(session, float(ts), text)


def _line(entry: InputEntry) -> bytes:
    payload = {"session_id": entry.session_id, "ts": entry.ts, "text": entry.text}
    return json.dumps(payload, ensure_ascii=False).encode("utf-8") + b"\n"


class InputHistory:
    """The user's inputs in one JSONL file (see the module docstring).

    Args:
        path: The file; created (with its folder) on the first append.
        max_bytes: The most the file may hold; an append over it trims the oldest lines
            down to `0.8 * max_bytes`.
        clock: Seconds since the epoch, for the entries' `ts`.

    Raises:
        ConfigurationError: `max_bytes` is not a positive int.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        max_bytes: int = DEFAULT_MAX_BYTES,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes < 1:
            msg = f"InputHistory: `max_bytes` must be an int >= 1, got {max_bytes!r}"
            raise ConfigurationError(msg)
        self.path = Path(path)
        self.max_bytes = max_bytes
        self._clock = clock

    def append(self, text: str, *, session_id: str, ts: float | None = None) -> InputEntry:
        """Add one input as one line; trim the oldest lines if the file grew over the cap.

        Raises:
            ConfigurationError: `text` or `session_id` is not a string.
        """
        if not isinstance(text, str) or not isinstance(session_id, str):
            msg = "InputHistory.append: `text` and `session_id` must be strings"
            raise ConfigurationError(msg)
        entry = InputEntry(session_id, self._clock() if ts is None else float(ts), text)
        line = _line(entry)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = self._open_locked(os.O_WRONLY | os.O_APPEND | os.O_CREAT, fcntl.LOCK_EX)
        try:
            written = os.write(fd, line)  # one write(2): a whole line or an error
            if written != len(line):
                msg = f"{self.path}: wrote {written} of {len(line)} bytes of an entry"
                raise OSError(msg)
            if os.fstat(fd).st_size > self.max_bytes:
                self._rewrite(lambda entries: _newest(entries, int(self.max_bytes * TRIM_TO)))
        finally:
            os.close(fd)  # closing releases the lock
        return entry

    def entries(self, *, session_id: str | None = None) -> list[InputEntry]:
        """The whole entries, oldest first (of one session, when given); damaged lines skipped."""
        with self._locked(fcntl.LOCK_SH) as lines:
            found = [e for e in map(_entry, lines) if e is not None]
        if session_id is None:
            return found
        return [e for e in found if e.session_id == session_id]

    def check(self) -> HistoryCheck:
        """Count the whole entries and the damaged lines."""
        with self._locked(fcntl.LOCK_SH) as lines:
            read = [_entry(line) for line in lines]
        whole = sum(1 for e in read if e is not None)
        return HistoryCheck(entries=whole, damaged=len(read) - whole)

    def repair(self) -> HistoryCheck:
        """Rewrite the file with its whole entries only; what the check found before."""
        found = self.check()
        if not found.ok:
            lock = self._open_locked(os.O_RDONLY, fcntl.LOCK_EX)
            try:
                self._rewrite(lambda entries: entries)
            finally:
                os.close(lock)
        return found

    def follow(self, manager: Any, *, session_id: str) -> Callable[..., None]:
        """Append every user turn `manager` records from now on; the receiver, to disconnect.

        Notices (text the agent harness wrote as a user turn) are not the user's input.
        A failed append is logged by the bus and never breaks the manager.
        """
        bus: EventBus = manager.bus

        def record(_sender: object, *, node: object, **_: object) -> None:
            if isinstance(node, UserNode) and not node.notice and node.text:
                self.append(node.text, session_id=session_id)

        return bus.connect("node_added", record)

    @contextmanager
    def _locked(self, mode: int) -> Iterator[list[bytes]]:
        """The file's lines under a lock of `mode`; no lines when there is no file yet."""
        try:
            fd = self._open_locked(os.O_RDONLY, mode)
        except FileNotFoundError:
            yield []
            return
        try:
            with os.fdopen(os.dup(fd), "rb") as file:
                lines = [line for line in file.read().split(b"\n") if line.strip()]
            yield lines
        finally:
            os.close(fd)

    def _open_locked(self, flags: int, mode: int) -> int:
        """The file opened and locked; opened again if a trim replaced it meanwhile.

        A trim renames a new file over the path while others may wait on the old one's
        lock: a lock won on a file that is no longer at the path guards nothing, and an
        append there would be lost, so the file is opened anew until the two agree.
        """
        while True:
            fd = os.open(self.path, flags, 0o600)
            try:
                fcntl.flock(fd, mode)
                held, current = os.fstat(fd), os.stat(self.path)
            except FileNotFoundError:
                os.close(fd)
                continue
            except BaseException:
                os.close(fd)
                raise
            if (held.st_dev, held.st_ino) == (current.st_dev, current.st_ino):
                return fd
            os.close(fd)

    def _rewrite(self, keep: Callable[[list[InputEntry]], list[InputEntry]]) -> None:
        """Replace the file with `keep(entries)`; the caller holds the exclusive lock.

        Written beside the file and renamed over it: a crash leaves the old file whole;
        whoever waits on the old file's lock opens the new one (`_open_locked`).
        """
        with open(self.path, "rb") as file:
            entries = [e for e in map(_entry, file.read().split(b"\n")) if e is not None]
        data = b"".join(_line(e) for e in keep(entries))
        handle, temporary = tempfile.mkstemp(dir=self.path.parent, prefix=f".{self.path.name}.")
        try:
            with os.fdopen(handle, "wb") as out:
                out.write(data)
                out.flush()
                os.fsync(out.fileno())
            os.chmod(temporary, 0o600)
            os.replace(temporary, self.path)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise


def _newest(entries: list[InputEntry], limit: int) -> list[InputEntry]:
    """The newest entries whose lines add up to at most `limit` bytes."""
    kept: list[InputEntry] = []
    size = 0
    for entry in reversed(entries):
        size += len(_line(entry))
        if size > limit:
            break
        kept.append(entry)
    return kept[::-1]
