"""`SQLiteStore`: a session kept in SQLite, so that a restarted process resumes exactly.

Node ids are deterministic and the working graph changes only by applied proposals, so
a session is one ordered journal: `events` entries (each ingested batch) and `proposals`
entries (each applied proposal or atomic batch, with the audit entries it got). Replaying
the journal into a fresh graph gives the same pristine record and the same working view:
the same ids, versions and audit log, recorded times included. Beside the journal the
store keeps `state`, the latest JSON value per key (trigger and guard state, counters).

```python
with SQLiteStore.open("session.db") as store:
    session = store.restore()  # empty for a new file; journals from now on
    session.raw.add_user("Fix the failing test.")  # written as it is ingested
    session.working.apply(proposal)  # written as it is applied
    store.put_state("triggers", trigger_state.model_dump(mode="json"))
```

The store is composed of one idea per module: `sqlite.file` opens the file (`schema`
its layout, `lock` its one writer), `sqlite.writer` writes entries in transactions
(a compaction run, `atomic()`, in one; a failed commit stops the journal),
`sqlite.reader` reads a consistent snapshot while the writer appends, and `restore`
replays it into graphs holding the store's `GraphJournal` (`journal`), so that each
change and its entry are one step: a crash leaves the file as it was before the change
or after it, and an entry that cannot be written leaves memory as it was.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
import time
import weakref
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from pydantic import JsonValue

from context_graph.errors import StoreError
from context_graph.graph.events import AgentEvent, coerce_events
from context_graph.tokens.counting import TokenCounter, default_counter
from orchestrator.persistence.codec import JournalEntry, check_audit, encode_applied, encode_events
from orchestrator.persistence.journal import GraphJournal
from orchestrator.persistence.protocol import Lease, Rebased, Refreshed, RestoredSession
from orchestrator.persistence.restore import replay
from orchestrator.persistence.schema import SCHEMA_VERSION, encode_state
from orchestrator.persistence.sqlite.file import open_file
from orchestrator.persistence.sqlite.lock import FileClaim
from orchestrator.persistence.sqlite.reader import Snapshot, read_snapshot
from orchestrator.persistence.sqlite.writer import Entry, JournalWriter
from orchestrator.working.buffer import AuditEntry
from processors.base import Proposal

__all__ = ["SCHEMA_VERSION", "JournalEntry", "SQLiteStore"]


class SQLiteStore:
    """A `SessionStore` in one SQLite file: its journal and its state; `SQLiteStore.open`.

    Writes are refused, before anything changes, once the store is closed, when it was
    opened read-only, and after a journal write failed: from then on the session in
    memory is ahead of the file, and reopening the file resumes from what it holds.
    """

    def __init__(
        self,
        path: Path,
        connection: sqlite3.Connection,
        claim: FileClaim,
        counter: TokenCounter,
    ) -> None:
        self._path = path
        self._conn: sqlite3.Connection | None = connection
        self._claim = claim
        self._read_only = not claim.writer
        self._counter = counter
        self._order = threading.RLock()
        self._writer = JournalWriter(str(path))
        self._journal: GraphJournal | None = None
        self._lease: Lease | None = None
        self._tokens = 0
        # A store dropped without `close()` gives the file back once it is collected
        # (a later open in this process would otherwise be refused for good).
        self._finalizer = weakref.finalize(self, _collected, connection, claim)

    @classmethod
    def open(
        cls,
        path: str | os.PathLike[str],
        *,
        counter: TokenCounter | None = None,
        read_only: bool = False,
        durable: bool = True,
    ) -> SQLiteStore:
        """Open a session file, creating it (and its schema) when it does not exist.

        Args:
            path: The session file; its directory must exist.
            counter: The token counter the session is recorded with (the default
                counter when `None`); the file remembers it and must be reopened with it.
            read_only: Read without locking; every write is refused.
            durable: Sync every write to disk (`synchronous=FULL`). `False` survives a
                crash of the process but may lose the last writes on a power cut.

        Raises:
            StoreLockedError: another writable store has the file open.
            StoreFormatError: not a session file this version can read.
            StoreCorruptError: SQLite cannot read it.
            StoreError: the directory or (read-only) the file is missing, or the
                counter is not the one the session was recorded with.
        """
        session = Path(path)
        counter = counter if counter is not None else default_counter()
        connection, claim = open_file(session, counter.name, read_only=read_only, durable=durable)
        try:
            return cls(session, connection, claim, counter)
        except BaseException:
            _abandon(connection, claim)
            raise

    # -- life cycle --------------------------------------------------------------------

    @property
    def path(self) -> Path:
        """The session file."""
        return self._path

    @property
    def location(self) -> str:
        """The session file, as text (`SessionStore.location`)."""
        return str(self._path)

    @property
    def read_only(self) -> bool:
        """Whether the store was opened read-only."""
        return self._read_only

    @property
    def closed(self) -> bool:
        """Whether `close()` was called."""
        return self._conn is None

    @property
    def failed(self) -> str | None:
        """Why the journal stopped (every write is refused since), or `None`."""
        return self._writer.failed

    @property
    def connection(self) -> sqlite3.Connection:
        """The open SQLite connection, to watch or fault the statements the store runs.

        For tools and tests: `set_trace_callback` sees each statement before it runs,
        `set_authorizer` can make one fail. Writing through it bypasses the journal.

        Raises:
            StoreError: the store is closed.
        """
        if self._conn is None:
            raise StoreError(str(self._path), "the store is closed")
        return self._conn

    @property
    def order(self) -> threading.RLock:
        """The reentrant lock held around each change of the session and its entry.

        It keeps the journal in the order things happened, from any thread.
        """
        return self._order

    def close(self) -> None:
        """Close the file and give up the writer lock; idempotent.

        Whatever fails on the way (an atomic block still open that cannot be written),
        the connection is closed and the lock given up, so the file can be reopened.

        Raises:
            StoreError: the entries of an atomic block still open cannot be written.
        """
        with self._order:
            connection, self._conn = self._conn, None
            if connection is None:
                return
            self._finalizer.detach()
            try:
                if self._writer.queued:
                    self._writer.flush(connection)  # an atomic block still open
            finally:
                _abandon(connection, self._claim)

    def __enter__(self) -> SQLiteStore:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        mode = "closed" if self.closed else "read-only" if self.read_only else "writable"
        return f"SQLiteStore({str(self._path)!r}, {mode})"

    # -- writing -----------------------------------------------------------------------

    def append_events(
        self,
        events: Iterable[AgentEvent | Mapping[str, Any]],
        *,
        state: Mapping[str, JsonValue] | None = None,
    ) -> None:
        """Journal one batch already ingested (and `state`, in the same transaction).

        Raises:
            IngestError: an event does not validate, or could not be read back from the
                journal; nothing was written.
            StoreError: the store cannot be written (see the class).
        """
        with self.journaling_events(events, state=state, applied=True):
            pass

    def append_proposals(
        self,
        proposals: Sequence[Proposal],
        audit: Sequence[AuditEntry],
        *,
        state: Mapping[str, JsonValue] | None = None,
    ) -> None:
        """Journal one apply: what `WorkingGraph.apply_batch` took and returned (and `state`).

        Raises:
            ConfigurationError: the audit entries do not match the proposals.
            InvariantViolation: the proposals could not be read back from the journal.
            StoreError: the store cannot be written (see the class).
        """
        with self.journaling_proposals(proposals, audit, state=state, applied=True):
            pass

    def append_entry(self, entry: JournalEntry) -> None:
        """Append one decoded entry as it is, without replaying it (a copy of a session).

        Raises:
            StoreError: the store cannot be written (see the class).
        """
        if entry.kind == "events":
            self.append_events(entry.events)
        else:
            self.append_proposals(entry.proposals, entry.audit)

    def put_state(self, key: str, value: JsonValue) -> None:
        """Keep `value` as the latest state under `key` (JSON: dicts, lists, scalars).

        Raises:
            ConfigurationError: the key is empty or the value is not JSON.
            StoreError: the store cannot be written (see the class).
        """
        self.put_states({key: value})

    def put_states(self, values: Mapping[str, JsonValue]) -> None:
        """Keep each of `values` as the latest state under its key, in one transaction.

        A crash keeps all of them or none, never a mix of new and old values.

        Raises:
            ConfigurationError: a key is empty or a value is not JSON; nothing was written.
            StoreError: the store cannot be written (see the class).
        """
        with self._writing(None, encode_state(values), applied=True):
            pass

    def journaling_events(
        self,
        events: Iterable[AgentEvent | Mapping[str, Any]],
        *,
        state: Mapping[str, JsonValue] | None = None,
        applied: bool = False,
    ) -> AbstractContextManager[None]:
        """Journal one batch around its ingest: ingest it inside the `with` block.

        The entry is encoded (and checked to read back) and inserted first; it commits
        when the block ends and is rolled back if the block raises.

        Raises:
            IngestError: an event does not validate, or could not be read back from the
                journal; nothing was written.
            StoreError: the store cannot be written (see the class).
        """
        batch = coerce_events(events)
        entry: Entry | None = ("events", encode_events(batch)) if batch else None
        return self._writing(entry, encode_state(state), applied=applied)

    def journaling_proposals(
        self,
        proposals: Sequence[Proposal],
        audit: Sequence[AuditEntry],
        *,
        state: Mapping[str, JsonValue] | None = None,
        applied: bool = False,
    ) -> AbstractContextManager[None]:
        """Journal one apply around it: swap the working state inside the `with` block.

        Raises:
            ConfigurationError: the audit entries do not match the proposals.
            InvariantViolation: the proposals could not be read back from the journal.
            StoreError: the store cannot be written (see the class).
        """
        proposals, audit = tuple(proposals), tuple(audit)
        check_audit(proposals, audit)
        body = encode_applied(proposals, audit)
        return self._writing(("proposals", body), encode_state(state), applied=applied)

    @contextlib.contextmanager
    def atomic(self, *, rebased: Callable[[Rebased], None] | None = None) -> Iterator[None]:
        """Journal everything written inside as one transaction, when the block ends.

        Writes inside are checked at once and queued in order (from any thread), so a
        crash inside leaves the file as it was before the block: a compaction run is
        journaled whole or not at all. Reads do not see queued writes. Nested blocks
        join the outermost one. The writer lock keeps every other writer out, so the
        file never moves on under a block and `rebased` is never called.

        Raises:
            StoreError: the queued entries cannot be written; memory is then ahead of
                the file and every later write is refused.
        """
        with self._order:
            self._writer.open_scope()
        try:
            yield
        except BaseException:
            with self._order:
                self._writer.close_scope(self._conn, quiet=True)
            raise
        with self._order:
            self._writer.close_scope(self._conn, quiet=False)

    @contextlib.contextmanager
    def lease(self, *, holder: str | None = None, ttl: float = 60.0) -> Iterator[Lease]:
        """Hold the session's compaction lease: granted at once, joined if held already.

        The writer lock already keeps every other writer out of the file, so no one else
        can hold the lease or take it over; the token still grows with each lease, and
        the lease is given back when the block ends (`ttl` has nothing to expire). A
        read-only store writes nothing and is granted one with token 0.

        Raises:
            StoreError: the store is closed.
        """
        if self._conn is None:
            raise StoreError(str(self._path), "the store is closed")
        name = holder if holder is not None else f"{os.uname().nodename}:{os.getpid()}"
        if self._lease is not None or self._read_only:  # held, or read-only: token 0
            yield self._lease if self._lease is not None else Lease(name, 0)
            return
        self._tokens += 1
        self._lease = Lease(name, self._tokens)
        try:
            yield self._lease
        finally:
            self._lease = None

    def check_writable(self) -> None:
        """Raise if nothing may be written now.

        Raises:
            StoreError: the store is closed, read-only, or an earlier journal write failed.
        """
        self._writable()

    def _writable(self) -> sqlite3.Connection:
        name, connection = str(self._path), self.connection
        if self._read_only:
            raise StoreError(name, "opened read-only; open it without read_only=True to write")
        if self._writer.failed is not None:
            msg = (
                f"{self._writer.failed}, so the session in memory is ahead of the file; "
                "reopen the file to resume from what it holds"
            )
            raise StoreError(name, msg)
        return connection

    @contextlib.contextmanager
    def _writing(
        self, entry: Entry | None, state: list[tuple[str, str]], *, applied: bool
    ) -> Iterator[None]:
        with self._order:
            connection = self._writable()
            with self._writer.writing(connection, entry, state, applied=applied):
                yield

    # -- reading -----------------------------------------------------------------------

    def journal(self) -> Iterator[JournalEntry]:
        """The journal's entries in order, decoded (read as one consistent snapshot).

        Raises:
            StoreCorruptError: an entry was changed or does not decode (names it).
        """
        return self._read(with_state=False).entries()

    def audit(self) -> tuple[AuditEntry, ...]:
        """Every audit entry in the journal, oldest first, without replaying anything."""
        return tuple(entry for item in self.journal() for entry in item.audit)

    def state(self) -> dict[str, JsonValue]:
        """The latest value of every state key."""
        return self._read(with_state=True).state

    def get_state(self, key: str, default: JsonValue = None) -> JsonValue:
        """The latest value kept under `key`, or `default`."""
        return self.state().get(key, default)

    def _read(self, *, with_state: bool) -> Snapshot:
        with self._order:
            return read_snapshot(self.connection, str(self._path), with_state=with_state)

    # -- restoring ---------------------------------------------------------------------

    def restore(self, *, clock: Callable[[], float] = time.time) -> RestoredSession:
        """Replay the journal into a fresh pristine graph and working graph.

        From a writable store the two journal every later ingest and apply to this
        store (so a writable store restores once); from a read-only one they are plain
        copies. Nothing is returned unless the whole journal replays.

        Args:
            clock: The working graph's clock for proposals applied from now on
                (replayed ones keep their recorded times).

        Raises:
            StoreCorruptError: an entry does not decode, does not replay, or replays to
                another audit entry than the one recorded (names the entry).
            StoreError: this writable store already handed out its session.
        """
        if self._journal is not None:
            msg = "restore() was already called on this writable store; keep using its session"
            raise StoreError(str(self._path), msg)
        snapshot = self._read(with_state=True)
        journal = None if self.read_only else GraphJournal(self)
        session = replay(
            snapshot.path,
            snapshot.entries(),
            snapshot.state,
            counter=self._counter,
            clock=clock,
            journal=journal,
        )
        if journal is not None:
            with self._order:
                self._writable()
                journal.start()
                self._journal = journal
        return session

    def refresh(self) -> Refreshed:
        """Nothing to bring in: the writer lock keeps every other writer out of the file.

        Raises:
            StoreError: the store is closed.
        """
        if self._conn is None:
            raise StoreError(str(self._path), "the store is closed")
        return Refreshed(0, None)


def _collected(connection: sqlite3.Connection, claim: FileClaim) -> None:
    """The finalizer of a store dropped unclosed: no lock may be waited for here."""
    try:
        connection.close()
    finally:
        claim.release_later()


def _abandon(connection: sqlite3.Connection, claim: FileClaim) -> None:
    """Close the connection, then give the file back, whatever the close raises."""
    try:
        connection.close()
    finally:
        claim.release()
