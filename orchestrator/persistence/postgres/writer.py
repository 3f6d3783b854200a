"""Writing a shared session's log: one transaction per change, from where this writer saw it.

Many workers write one session, so an append is a compare-and-set: its transaction
locks the session's row and goes on only if the log's head is still the sequence number
this writer last saw (and, while it holds the compaction lease, the fencing token is
still its own). Otherwise `StoreConflictError`, before anything is written and before
memory changes: the caller refreshes and retries. The transaction stays open around
the change in memory (entry inserted, memory moved on, commit), as in the SQLite
writer, so an entry that cannot be written leaves memory as it was. Only a failed
COMMIT leaves memory ahead of the log (the server may or may not have kept it); from
then on the writer is *failed* and refuses every write.

Inside `atomic()` entries are queued and written in one transaction when the scope
ends: a compaction run lands whole, or (its lease lost) not at all. A scope the store can
take back from memory (`LiveSession`) is written with an `undo`: when it is refused
before its COMMIT, memory goes back and the writer stays usable. With a `rebase` as
well, a scope that finds the log moved on is rebased over the newer entries and
written after them (a few times at most, if the log keeps moving).
"""

from __future__ import annotations

import contextlib
import hashlib
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, NoReturn

from context_graph.errors import StoreConflictError, StoreError
from orchestrator.persistence.codec import checksum
from orchestrator.persistence.postgres.connect import begin, rollback, translate
from orchestrator.persistence.sqlite.writer import Entry

__all__ = ["CHANNEL", "LogWriter", "digest"]

#: How many times one scope is rebased before its conflict is raised instead.
REBASES = 5

#: The LISTEN/NOTIFY channel an append announces itself on (payload `session_id:head`).
CHANNEL = "cg_log"

_LOCK_SESSION = "SELECT head, lease_token FROM cg_sessions WHERE id = %s FOR UPDATE"
_INSERT_CONTENT = (
    "INSERT INTO cg_content (digest, body) VALUES (%s, %s) ON CONFLICT (digest) DO NOTHING"
)
_INSERT_ENTRY = (
    "INSERT INTO cg_log (session_id, seq, kind, digest, checksum, written)"
    " VALUES (%s, %s, %s, %s, %s, %s)"
)
# The notification is sent when the transaction commits, and only then.
_MOVE_HEAD = "UPDATE cg_sessions SET head = %s WHERE id = %s RETURNING pg_notify(%s, %s)"
_UPSERT_STATE = (
    "INSERT INTO cg_state (session_id, key, value, version) VALUES (%s, %s, %s, 1)"
    " ON CONFLICT (session_id, key) DO UPDATE SET value = EXCLUDED.value,"
    " version = cg_state.version + 1"
)


def digest(body: str) -> str:
    """The address a body is stored under (SHA-256 of its UTF-8 bytes, in hex)."""
    return hashlib.sha256(body.encode("utf-8")).hexdigest()


class _LogMoved(StoreConflictError):
    """The log's head moved since this writer saw it (not a lost lease)."""


@dataclass(slots=True)
class _Queue:
    entries: list[Entry] = field(default_factory=list)
    state: dict[str, str] = field(default_factory=dict)


class LogWriter:
    """The write side of one shared session (held by `PostgresStore`, under its lock).

    Args:
        location: The store, for messages.
        session_id: The session's row.
        pool: Where connections come from.
        durable: Wait for the server to flush each commit to disk.
    """

    def __init__(self, location: str, session_id: int, pool: Any, *, durable: bool) -> None:
        self._location = location
        self._session = session_id
        self._pool = pool
        self._durable = durable
        self._queue: _Queue | None = None
        self._scopes = 0
        self.head = 0
        """The log's last sequence number as this writer last saw it."""
        self.fence: int | None = None
        """The fencing token of the compaction lease this writer holds, if any."""
        self.failed: str | None = None
        """Why the log stopped for this writer (memory is ahead of it), or `None`."""

    @property
    def queued(self) -> bool:
        """Whether an atomic scope is open (writes wait for its end)."""
        return self._queue is not None

    @property
    def scopes(self) -> int:
        """How many atomic scopes are open (nested ones count)."""
        return self._scopes

    @property
    def pending(self) -> tuple[Entry, ...]:
        """The entries the open scope queued so far, in order."""
        return () if self._queue is None else tuple(self._queue.entries)

    @contextlib.contextmanager
    def writing(
        self, entry: Entry | None, state: list[tuple[str, str]], *, applied: bool
    ) -> Iterator[None]:
        """Write `entry` and `state` around the change the caller makes inside.

        Raises:
            StoreConflictError: the log moved on since this writer saw it, or the lease
                was taken over; nothing was written and memory is unchanged.
            StoreUnavailableError: the server cannot be reached.
            StoreError: the server refused the write.
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
        with self._transaction(entries, state, gap=applied and entry is not None) as commit:
            yield
            commit()

    def open_scope(self) -> None:
        """Begin (or nest in) an atomic scope: writes are queued until it ends."""
        self._scopes += 1
        if self._queue is None:
            self._queue = _Queue()

    def close_scope(
        self,
        *,
        closed: bool,
        quiet: bool,
        undo: Callable[[], None] | None = None,
        rebase: Callable[[list[Entry]], list[Entry]] | None = None,
    ) -> bool:
        """End one atomic scope; the outermost writes what was queued.

        Args:
            closed: The store is closed (what was queued was flushed by `close`).
            quiet: Do not raise an error (the writer is failed, or memory undone).
            undo: Takes the scope back from memory; see `flush`.
            rebase: Rebases the scope over newer entries; see `flush`.

        Returns:
            Whether this ended the outermost scope.

        Raises:
            StoreError: the queued entries cannot be written (see `flush`).
        """
        self._scopes = max(0, self._scopes - 1)
        if self._scopes or closed:
            return not self._scopes
        try:
            self.flush(undo=undo, rebase=rebase)
        except StoreError:
            if not quiet:
                raise
        return True

    def flush(
        self,
        *,
        undo: Callable[[], None] | None = None,
        rebase: Callable[[list[Entry]], list[Entry]] | None = None,
    ) -> None:
        """Write what the open scope queued, in one transaction.

        Args:
            undo: Takes the scope back from memory: called when the write is refused
                before its COMMIT, and the writer stays usable. Without it such a
                refusal fails the writer (memory is ahead).
            rebase: Given the queued entries when the log moved on, brings the newer
                entries into memory (moving `head`) and returns the entries to write
                after them; with it the write is tried again, up to `REBASES` times.

        Raises:
            StoreConflictError: the log moved on (without `rebase`, or too often) or
                the lease was lost: nothing of the scope was written.
            StoreError: the server cannot write it; nothing was written.
        """
        queue, self._queue = self._queue, None
        if queue is None or (not queue.entries and not queue.state):
            return
        if self._scopes:
            self._queue = _Queue()
        entries, state = queue.entries, list(queue.state.items())
        for attempt in range(REBASES + 1):
            movable = rebase is not None and attempt < REBASES
            try:
                with self._transaction(entries, state, gap=undo is None, movable=movable) as done:
                    done()
                return
            except _LogMoved:
                if rebase is None or not movable:
                    self._undo(undo)
                    raise
                try:
                    entries = rebase(entries)
                except StoreError:
                    self._undo(undo)
                    raise
            except StoreError:
                self._undo(undo)
                raise

    def _undo(self, undo: Callable[[], None] | None) -> None:
        """Take the scope back from memory, unless memory may be in the log (failed)."""
        if undo is not None and self.failed is None:
            undo()

    @contextlib.contextmanager
    def _transaction(
        self,
        entries: list[Entry],
        state: list[tuple[str, str]],
        *,
        gap: bool,
        movable: bool = False,
    ) -> Iterator[Callable[[], None]]:
        """A transaction holding the entries; the caller calls the commit it is given.

        With `movable`, a log that moved on raises `_LogMoved` and fails nothing.
        """
        gap = gap and bool(entries)
        try:
            connection = begin(self._pool)
        except Exception as exc:
            self._abort(None, exc, gap=gap, doing="taking a connection")
        try:
            try:
                head = self._insert(connection, entries, state)
            except _LogMoved:
                rollback(connection)
                if movable:
                    raise
                if gap:
                    self.failed = "a log entry could not be written (the log moved on)"
                raise
            except BaseException as exc:
                self._abort(connection, exc, gap=gap, doing="appending to the log")

            def commit() -> None:
                try:
                    connection.execute("COMMIT")
                except BaseException as exc:
                    # Memory moved on; whether the server kept the entry is unknown.
                    self._abort(connection, exc, gap=bool(entries), doing="committing")
                self.head = head

            try:
                yield commit
            except BaseException:
                rollback(connection)
                raise
        finally:
            self._pool.putconn(connection)

    def _insert(self, connection: Any, entries: list[Entry], state: list[tuple[str, str]]) -> int:
        if not self._durable:
            connection.execute("SET LOCAL synchronous_commit = off")
        row = connection.execute(_LOCK_SESSION, (self._session,)).fetchone()
        if row is None:
            raise StoreError(self._location, "the session was deleted from the database")
        head, token = int(row[0]), int(row[1])
        if self.fence is not None and token != self.fence:
            msg = (
                f"the compaction lease was taken over (fencing token {token}, this "
                f"worker's is {self.fence}), so its result is refused; nothing was written"
            )
            raise StoreConflictError(self._location, msg, expected=self.fence, found=token)
        if entries and head != self.head:
            msg = (
                f"another writer appended to the session first (the log is at entry "
                f"{head}, this writer saw {self.head}); nothing was written: call "
                "refresh() (ContextManager.refresh) to bring the new entries in, then retry"
            )
            raise _LogMoved(self._location, msg, expected=self.head, found=head)
        now = time.time()
        bodies = {digest(body): body for _, body in entries}
        with connection.cursor() as cursor:
            if entries:
                # Sorted: two transactions insert shared content in one order, no deadlock.
                cursor.executemany(_INSERT_CONTENT, sorted(bodies.items()))
                rows = [
                    (self._session, head + n, kind, digest(body), checksum(body), now)
                    for n, (kind, body) in enumerate(entries, start=1)
                ]
                cursor.executemany(_INSERT_ENTRY, rows)
            if state:
                cursor.executemany(_UPSERT_STATE, [(self._session, k, v) for k, v in state])
        if entries:
            head += len(entries)
            note = f"{self._session}:{head}"
            connection.execute(_MOVE_HEAD, (head, self._session, CHANNEL, note))
        return head if entries else self.head

    def _abort(self, connection: Any, exc: BaseException, *, gap: bool, doing: str) -> NoReturn:
        if connection is not None:
            rollback(connection)
        if gap:
            # Memory holds what the entries record: a later entry would replay on top
            # of a gap, so this writer writes nothing more.
            self.failed = f"a log entry could not be written ({exc!r})"
        translated = translate(exc, self._location, doing)
        if translated is exc:
            raise exc
        raise translated from exc
