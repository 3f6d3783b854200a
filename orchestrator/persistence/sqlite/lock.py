"""The writer lock of a session file: the database file itself, however it is named.

A session file has one writer at a time. The lock belongs to the file, not to the name
it was opened by: a symlink, a hard link, a `..` path or a bind mount reach the same
file and meet the same lock, and there is no sidecar to delete. It has two parts:

- in this process, a table of the session files its stores have open, keyed by the
  file's identity (`st_dev`, `st_ino`), says which one has a writer and where that
  writer was opened, so a second writer is refused before anything is opened;
- for other processes, an exclusive OS lock taken without waiting on one descriptor of
  the database file (`flock` on Linux, a lock on one byte SQLite never locks elsewhere),
  so a second writer is refused at once, with the holder's pid where the system tells it.

The lock dies with its process: a crashed writer leaves nothing behind.

SQLite's own locks are POSIX locks, which a process loses on a file as soon as it closes
*any* descriptor of that file. So this module opens one descriptor per file and keeps it
while any store of this process has the file open, and reads the file's header through
it; it is closed only once the last of them is closed.
"""

from __future__ import annotations

import collections
import contextlib
import os
import sys
import sysconfig
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType

from context_graph.errors import StoreError, StoreLockedError

__all__ = ["FileClaim", "claim_file", "held_files"]

# SQLite locks bytes PENDING_BYTE (0x40000000) to PENDING_BYTE + 511; this one is never
# locked or read by it (it lies in the lock page of any page size of 1 KiB or more).
_LOCK_BYTE = 0x40000000 + 768

if sys.platform == "win32":
    import msvcrt

    def _try_lock(fd: int) -> bool:
        os.lseek(fd, _LOCK_BYTE, os.SEEK_SET)
        try:
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
        except OSError:
            return False
        return True

    def _unlock(fd: int) -> None:
        os.lseek(fd, _LOCK_BYTE, os.SEEK_SET)
        msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)

else:
    import fcntl

    if sys.platform == "linux":
        # flock and SQLite's POSIX locks are independent on Linux, and a flock belongs
        # to the descriptor, so no other close in this process can drop it.
        def _try_lock(fd: int) -> bool:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return False
            return True

        def _unlock(fd: int) -> None:
            fcntl.flock(fd, fcntl.LOCK_UN)

    else:  # BSD and macOS: flock would collide with SQLite's locks; lock one byte
        # (the descriptor is kept open while the writer is, so SQLite, which defers
        # closing while it holds locks, does not drop it).
        def _try_lock(fd: int) -> bool:
            try:
                fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, _LOCK_BYTE)
            except OSError:
                return False
            return True

        def _unlock(fd: int) -> None:
            fcntl.lockf(fd, fcntl.LOCK_UN, 1, _LOCK_BYTE)


@dataclass(slots=True)
class _File:
    """One session file this process has open: its descriptor, users and writer."""

    fd: int
    users: int = 0
    writer: str | None = None
    """Where the writer of this process opened it (`None`: no writer here)."""
    spare: list[int] = field(default_factory=list)
    """Descriptors opened in a race, closed with `fd` (closing early drops locks)."""


_Key = tuple[int, int]
_FILES: dict[_Key, _File] = {}
_GUARD = threading.Lock()
# Claims of stores collected unclosed: a finalizer may run while this thread holds
# `_GUARD` (the collector runs at any allocation), so it only queues; the next claim
# or count gives them back.
_LATER: collections.deque[FileClaim] = collections.deque()


def _after_fork() -> None:
    # A child does not hold its parent's writers: it starts with no files. The inherited
    # descriptors are closed (the parent's flocks live on through its own).
    global _GUARD
    _GUARD = threading.Lock()
    for entry in _FILES.values():
        for fd in (entry.fd, *entry.spare):
            with contextlib.suppress(OSError):
                os.close(fd)
    _FILES.clear()
    _LATER.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork)


def held_files() -> int:
    """How many session files this process has open (for tests and leak checks)."""
    _drain()
    with _GUARD:
        return len(_FILES)


class FileClaim:
    """A store's hold on a session file: its shared descriptor, and the writer lock.

    Use `claim_file`; `release()` gives everything back (idempotent).
    """

    __slots__ = ("_key", "_path", "_writer")

    def __init__(self, key: _Key, path: str, *, writer: bool) -> None:
        self._key: _Key | None = key
        self._path = path
        self._writer = writer

    @property
    def writer(self) -> bool:
        """Whether this claim holds the writer lock."""
        return self._writer

    @property
    def held(self) -> bool:
        """Whether the claim is still held."""
        return self._key is not None

    def read_head(self, size: int) -> bytes:
        """The file's first `size` bytes, read through the shared descriptor.

        Raises:
            StoreError: the claim was released, or the file cannot be read.
        """
        with _GUARD:
            entry = _FILES.get(self._key) if self._key is not None else None
            if entry is None:
                raise StoreError(self._path, "the store is closed")
            try:
                os.lseek(entry.fd, 0, os.SEEK_SET)
                return os.read(entry.fd, size)
            except OSError as exc:
                msg = f"cannot read it: {exc.strerror or exc}"
                raise StoreError(self._path, msg) from exc

    def release_later(self) -> None:
        """Queue the release for the next claim in this process (safe in a finalizer)."""
        _LATER.append(self)

    def release(self) -> None:
        """Give the writer lock (if held) and the descriptor back; idempotent.

        Call it after closing the store's connection: the last release closes the
        descriptor, which drops this process's SQLite locks on the file.
        """
        key, self._key = self._key, None
        if key is None:
            return
        with _GUARD:
            entry = _FILES.get(key)
            if entry is None:  # forked since: the child holds nothing
                return
            try:
                if self._writer:
                    entry.writer = None
                    with contextlib.suppress(OSError):
                        _unlock(entry.fd)
            finally:
                entry.users -= 1
                if entry.users <= 0:
                    del _FILES[key]
                    for fd in (entry.fd, *entry.spare):
                        with contextlib.suppress(OSError):
                            os.close(fd)


def claim_file(
    session: Path, *, writer: bool, check: Callable[[bytes], None] | None = None
) -> FileClaim:
    """Claim `session` for a store: for writing (the writer lock), or for reading.

    A writer's file is created when missing. `check` is given the file's first bytes
    before the writer lock is taken (a file it refuses is never locked).

    Raises:
        StoreLockedError: another writer holds the file, in this process or another.
        StoreError: the file cannot be opened, read or locked.
    """
    name = str(session)
    _drain()
    with _GUARD:
        key, entry = _entry(session, name, create=writer)
        entry.users += 1
        claim = FileClaim(key, name, writer=False)
    try:
        if check is not None:
            check(claim.read_head(16))
        if writer:
            _lock(key, name, _opener())
            claim._writer = True
    except BaseException:
        claim.release()
        raise
    return claim


def _drain() -> None:
    while _LATER:
        try:
            claim = _LATER.popleft()
        except IndexError:  # another thread took the last one
            return
        claim.release()


def _entry(session: Path, name: str, *, create: bool) -> tuple[_Key, _File]:
    """The file's entry, opening one descriptor if this process has none yet."""
    try:
        status = os.stat(session)
    except FileNotFoundError:
        status = None
    except OSError as exc:
        raise StoreError(name, f"cannot open it: {exc.strerror or exc}") from exc
    if status is not None:
        key = (status.st_dev, status.st_ino)
        if key in _FILES:  # no new descriptor: closing it would drop SQLite's locks
            return key, _FILES[key]
    fd = _open(session, name, create=create)
    opened = os.fstat(fd)
    key = (opened.st_dev, opened.st_ino)
    entry = _FILES.get(key)
    if entry is not None:  # replaced between the stat and the open: keep, do not close
        entry.spare.append(fd)
        return key, entry
    entry = _FILES[key] = _File(fd)
    return key, entry


def _open(session: Path, name: str, *, create: bool) -> int:
    """A descriptor on the file, writable where it may be (a writer may lock it later)."""
    cloexec = getattr(os, "O_CLOEXEC", 0)
    try:
        return os.open(session, os.O_RDWR | cloexec | (os.O_CREAT if create else 0), 0o644)
    except OSError as exc:
        if not create:  # a reader of a file it may not write
            with contextlib.suppress(OSError):
                return os.open(session, os.O_RDONLY | cloexec)
        raise StoreError(name, f"cannot open it: {exc.strerror or exc}") from exc


def _lock(key: _Key, name: str, opener: str) -> None:
    with _GUARD:
        entry = _FILES[key]
        if entry.writer is not None:
            raise StoreLockedError(name, os.getpid(), holder=entry.writer)
        try:
            locked = _try_lock(entry.fd)
        except OSError as exc:
            raise StoreError(name, f"cannot lock it: {exc.strerror or exc}") from exc
        if not locked:
            raise StoreLockedError(name, _holder_pid(key))
        entry.writer = opener


def _holder_pid(key: _Key) -> int | None:
    """The pid of the process holding the file's flock, from `/proc/locks` (Linux)."""
    if sys.platform != "linux":
        return None
    device, inode = key
    where = f"{os.major(device):02x}:{os.minor(device):02x}:{inode}"
    try:
        with open("/proc/locks", encoding="ascii", errors="replace") as locks:
            for line in locks:
                fields = line.split()
                if len(fields) > 5 and fields[1] == "FLOCK" and fields[5] == where:
                    pid = fields[4]
                    return int(pid) if pid.isdigit() and int(pid) > 0 else None
    except OSError:
        return None
    return None


# Frames of these folders are the library's or Python's; the first other frame is the
# caller who opened the store, named in a refusal.
_LIBRARY = str(Path(__file__).resolve().parents[3])
_SKIPPED = tuple(
    {
        *(
            str(Path(p).resolve())
            for key, p in sysconfig.get_paths().items()
            if key in {"stdlib", "platstdlib", "purelib", "platlib"}
        ),
        *(str(Path(_LIBRARY) / package) for package in ("context_graph", "orchestrator")),
        str(Path(_LIBRARY) / "processors"),
    }
)


def _opener() -> str:
    """Where the store being opened was opened from: the first frame outside libraries."""
    frame: FrameType | None = sys._getframe(1)
    while frame is not None:
        filename = frame.f_code.co_filename
        if not filename.startswith("<") and not os.path.abspath(filename).startswith(_SKIPPED):
            return f"{filename}:{frame.f_lineno}"
        frame = frame.f_back
    return "an unknown place"
