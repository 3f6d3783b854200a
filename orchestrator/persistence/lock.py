"""The writer lock of a session file: one exclusive OS lock on `<session>.lock`.

A session file has one writer at a time. The lock is an advisory OS lock (`flock` on
POSIX, `msvcrt.locking` on Windows) on a sidecar file, taken without waiting, so a
second writer is refused at once with the holder's process id instead of blocking or
interleaving its entries with the first one's.

`flock` locks belong to an open file description, so a second open of the same session
in the same process is refused too. The lock dies with its process: a crashed writer
leaves no stale lock behind, only the sidecar file, which is reused.

The sidecar is never deleted: a process that opened the old file could lock it while a
third one creates and locks a new one, and both would think they are the writer.
"""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path

from context_graph.errors import StoreError, StoreLockedError

__all__ = ["WriterLock", "lock_path"]

# The holder's pid is written at the start of the sidecar; Windows locks are mandatory,
# so the locked byte lies past it, where a reader of the pid does not need to go.
_PID_BYTES = 32
_LOCKED_OFFSET = 1024

if sys.platform == "win32":
    import msvcrt

    def _try_lock(fd: int) -> bool:
        os.lseek(fd, _LOCKED_OFFSET, os.SEEK_SET)
        try:
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
        except OSError:
            return False
        return True

else:
    import fcntl

    def _try_lock(fd: int) -> bool:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        return True


def lock_path(session: Path) -> Path:
    """The sidecar lock file of a session file: `<session>.lock` beside it."""
    return session.with_name(f"{session.name}.lock")


def _read_pid(fd: int) -> int | None:
    os.lseek(fd, 0, os.SEEK_SET)
    text = os.read(fd, _PID_BYTES).decode("ascii", "replace").strip()
    return int(text) if text.isdigit() else None


class WriterLock:
    """An exclusive lock on a session file, held until `release()`.

    Use `WriterLock.acquire(session)`; the constructor only wraps a locked descriptor.
    """

    __slots__ = ("_fd",)

    def __init__(self, fd: int) -> None:
        self._fd: int | None = fd

    @classmethod
    def acquire(cls, session: Path) -> WriterLock:
        """Lock `session` for writing, without waiting.

        Raises:
            StoreLockedError: another open store holds it (names the process if known).
            StoreError: the lock file cannot be created or locked.
        """
        path = lock_path(session)
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            msg = f"cannot create the lock file {path}: {exc.strerror or exc}"
            raise StoreError(str(session), msg) from exc
        try:
            locked = _try_lock(fd)
            if not locked:
                raise StoreLockedError(str(session), _read_pid(fd))
            os.ftruncate(fd, 0)
            os.lseek(fd, 0, os.SEEK_SET)
            os.write(fd, f"{os.getpid()}\n".encode("ascii"))
        except StoreLockedError:
            os.close(fd)
            raise
        except OSError as exc:
            os.close(fd)
            msg = f"cannot lock {path}: {exc.strerror or exc}"
            raise StoreError(str(session), msg) from exc
        return cls(fd)

    @property
    def held(self) -> bool:
        """Whether the lock is still held."""
        return self._fd is not None

    def release(self) -> None:
        """Give the lock up (closing the descriptor releases it); idempotent."""
        fd, self._fd = self._fd, None
        if fd is None:
            return
        # Best effort: leave no pid naming a process that no longer holds the lock. The
        # close releases the lock whether or not the truncate worked.
        with contextlib.suppress(OSError):
            os.ftruncate(fd, 0)
        os.close(fd)
