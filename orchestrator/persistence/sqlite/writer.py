"""Writing a session's journal: each change in memory and its entry land as one step.

A change is written in one SQLite transaction around it: the entry (and any state) is
inserted first, then the caller changes memory, then the transaction commits. So an
entry that cannot be written leaves memory as it was and the store usable, and a change
in memory that fails rolls its entry back. Only a failed COMMIT, after memory moved on,
leaves a gap; from then on the writer is *failed*: every later write is refused, naming
the first failure, so nothing is ever written past a gap.

Inside `atomic()` (one compaction run), entries are checked and queued instead, in the
order things happened, and written together in one transaction when the scope ends: a
process killed during a run leaves the file as it was before the run, never halfway.
"""

from __future__ import annotations

import contextlib
import sqlite3
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

from context_graph.errors import StoreError
from orchestrator.persistence.codec import EntryKind, checksum
from orchestrator.persistence.schema import INSERT_ENTRY, UPSERT_STATE

__all__ = ["Entry", "JournalWriter"]

Entry = tuple[EntryKind, str]
"""A journal entry to write: its kind and its body."""


@dataclass(slots=True)
class _Queue:
    """What an atomic scope wrote so far, in order."""

    entries: list[Entry] = field(default_factory=list)
    state: dict[str, str] = field(default_factory=dict)


class JournalWriter:
    """The write side of one session file (held by `SQLiteStore`, under its lock).

    Args:
        path: The session file, for messages.
    """

    def __init__(self, path: str) -> None:
        self._path = path
        self._queue: _Queue | None = None
        self._scopes = 0
        self.failed: str | None = None
        """Why the journal stopped (the first write that left a gap), or `None`."""

    @property
    def queued(self) -> bool:
        """Whether an atomic scope is open (writes wait for its end)."""
        return self._queue is not None

    @contextlib.contextmanager
    def writing(
        self,
        connection: sqlite3.Connection,
        entry: Entry | None,
        state: list[tuple[str, str]],
        *,
        applied: bool,
    ) -> Iterator[None]:
        """Write `entry` and `state` around the change the caller makes inside.

        Args:
            connection: The store's connection.
            entry: The journal entry, if any.
            state: `(key, JSON text)` state rows.
            applied: The caller's memory already holds what `entry` records (then any
                failure to write it leaves a gap).

        Raises:
            StoreError: SQLite cannot write; see the module for what is left behind.
        """
        if self._queue is not None:
            yield
            if entry is not None:
                self._queue.entries.append(entry)
            self._queue.state.update(state)
            return
        if entry is None and not state:
            yield
            return
        entries = [] if entry is None else [entry]
        try:
            connection.execute("BEGIN IMMEDIATE")
            _insert(connection, entries, state)
        except BaseException as exc:
            self._abort(connection, exc, gap=applied and entry is not None)
        try:
            yield
        except BaseException:
            _rollback(connection)
            raise
        try:
            connection.execute("COMMIT")
        except BaseException as exc:
            self._abort(connection, exc, gap=entry is not None)

    def open_scope(self) -> None:
        """Begin (or nest in) an atomic scope: writes are queued until it ends."""
        self._scopes += 1
        if self._queue is None:
            self._queue = _Queue()

    def close_scope(self, connection: sqlite3.Connection | None, *, quiet: bool) -> None:
        """End one atomic scope; the outermost writes what was queued.

        Args:
            connection: The store's connection (`None`: closed, already flushed).
            quiet: Mark the writer failed on an error but do not raise (the scope is
                ending on an exception of its own, which must not be replaced).

        Raises:
            StoreError: the queued entries cannot be written (the writer is failed).
        """
        self._scopes = max(0, self._scopes - 1)
        if self._scopes == 0 and connection is not None:
            try:
                self.flush(connection)
            except StoreError:
                if not quiet:
                    raise

    def flush(self, connection: sqlite3.Connection) -> None:
        """Write what the open scope queued, in one transaction (before a close, say).

        Raises:
            StoreError: SQLite cannot write it; memory is ahead, so the writer is failed.
        """
        queue, self._queue = self._queue, None
        if queue is None or (not queue.entries and not queue.state):
            return
        if self._scopes:
            self._queue = _Queue()  # the scope stays open after an early flush
        try:
            connection.execute("BEGIN IMMEDIATE")
            _insert(connection, queue.entries, list(queue.state.items()))
            connection.execute("COMMIT")
        except BaseException as exc:
            self._abort(connection, exc, gap=bool(queue.entries))

    def _abort(self, connection: sqlite3.Connection, exc: BaseException, *, gap: bool) -> None:
        _rollback(connection)
        if gap:
            # Memory holds what the entry records: a later entry would replay on top of
            # a gap, so nothing more is written.
            self.failed = f"a journal entry could not be written ({exc!r})"
        if not isinstance(exc, sqlite3.Error):
            raise exc
        raise StoreError(self._path, f"cannot write to it: {exc}") from exc


def _insert(
    connection: sqlite3.Connection, entries: list[Entry], state: list[tuple[str, str]]
) -> None:
    now = time.time()
    for kind, body in entries:
        connection.execute(INSERT_ENTRY, (kind, body, checksum(body), now))
    connection.executemany(UPSERT_STATE, state)


def _rollback(connection: sqlite3.Connection) -> None:
    with contextlib.suppress(sqlite3.Error):
        if connection.in_transaction:
            connection.execute("ROLLBACK")
