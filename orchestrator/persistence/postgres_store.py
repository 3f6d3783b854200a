"""`PostgresStore`: a session kept in PostgreSQL, written by any number of workers.

The session is the same ordered journal as in a SQLite file (`events` and `proposals`
entries, replayed by `restore`), kept as an append-only log in a database that holds
many sessions (`postgres_schema`). What changes is that several processes write one
session: each append is a compare-and-set on the log's head (`postgres_writer`), so a
writer whose view is behind gets `StoreConflictError` with nothing written, calls
`refresh()` to replay what the others appended, and retries. A compactor takes the
session's lease (`lease()`), whose fencing token every write it makes is checked
against; a worker waiting for others' entries blocks in `wait()` (LISTEN/NOTIFY).

```python
store = PostgresStore.open("postgresql://db/agents", session="ticket-4711")
session = store.restore()
try:
    session.raw.add_user("Fix the failing test.")
except StoreConflictError:
    store.refresh()  # then retry the ingest
```
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Any

from pydantic import JsonValue

from context_graph.errors import StoreError
from context_graph.graph.events import AgentEvent, coerce_events
from context_graph.tokens.counting import TokenCounter, default_counter
from orchestrator.persistence.codec import JournalEntry, check_audit, encode_applied, encode_events
from orchestrator.persistence.journal import GraphJournal
from orchestrator.persistence.postgres_connect import PoolShare, parse_location, run_on, translate
from orchestrator.persistence.postgres_lease import Lease, acquire_lease, release_lease
from orchestrator.persistence.postgres_reader import LogSnapshot, open_session, read_log
from orchestrator.persistence.postgres_watch import wait_for_entries
from orchestrator.persistence.postgres_writer import LogWriter
from orchestrator.persistence.protocol import Refreshed, RestoredSession
from orchestrator.persistence.restore import ResumingClock, replay, replay_entry
from orchestrator.persistence.schema import encode_state
from orchestrator.persistence.sqlite_writer import Entry
from orchestrator.working.buffer import AuditEntry
from processors.base import Proposal

__all__ = ["PostgresStore"]


class PostgresStore:
    """A `SessionStore` in a PostgreSQL database, shared by workers; `PostgresStore.open`.

    Writes are refused, before anything changes, once the store is closed, when it was
    opened read-only, and after a commit failed with memory ahead of the log (reopen to
    resume from what the log holds).
    """

    def __init__(
        self, conninfo: str, location: str, session: str, session_id: int, **options: Any
    ) -> None:
        self._conninfo = conninfo
        self._session = session
        self._location = location
        self._id = session_id
        self._counter: TokenCounter = options["counter"]
        self._timeout: float = options["timeout"]
        self._read_only: bool = options["read_only"]
        self._pool: Any = options["pool"]
        self._closed = False
        self._order = threading.RLock()
        self._writer = LogWriter(location, session_id, self._pool, durable=options["durable"])
        self._journal: GraphJournal | None = None
        self._live: tuple[RestoredSession, ResumingClock] | None = None
        self._versions: dict[str, int] = {}
        self._replaying = False

    @classmethod
    def open(
        cls,
        url: str,
        *,
        session: str | None = None,
        counter: TokenCounter | None = None,
        read_only: bool = False,
        durable: bool = True,
        timeout: float = 10.0,
    ) -> PostgresStore:
        """Open a session in a database, creating the schema and the session if missing.

        Args:
            url: A libpq URL (`postgresql://user@host:port/db`); its fragment may name
                the session.
            session: The session's name, unless the URL's fragment names it.
            counter: The token counter the session is recorded with (the default
                counter when `None`).
            read_only: Every write is refused; the session must exist.
            durable: Wait for each commit to reach the server's disk; `False` survives
                a crash of the worker but may lose the last commits if the server crashes.
            timeout: Seconds to wait for a connection before `StoreUnavailableError`.

        Raises:
            ConfigurationError: no session is named, or the `[postgres]` extra is missing.
            StoreFormatError: the database's schema is newer than this version knows.
            StoreUnavailableError: the server cannot be reached.
            StoreError: a read-only open of a missing session, or another counter.
        """
        where = parse_location(url, session)
        counter = counter if counter is not None else default_counter()
        pool = PoolShare.take(where.conninfo, timeout)
        try:
            session_id = run_on(
                pool,
                where.display,
                "opening the session",
                lambda conn: open_session(
                    conn, where.display, where.session, counter.name, read_only=read_only
                ),
            )
        except BaseException:
            PoolShare.give_back(where.conninfo, timeout)
            raise
        return cls(
            where.conninfo,
            where.display,
            where.session,
            session_id,
            counter=counter,
            timeout=timeout,
            read_only=read_only,
            durable=durable,
            pool=pool,
        )

    # -- life cycle --------------------------------------------------------------------

    @property
    def location(self) -> str:
        """The database URL (password masked) with the session as fragment."""
        return self._location

    @property
    def session(self) -> str:
        """The session's name in its database."""
        return self._session

    @property
    def read_only(self) -> bool:
        """Whether the store was opened read-only."""
        return self._read_only

    @property
    def closed(self) -> bool:
        """Whether `close()` was called."""
        return self._closed

    @property
    def failed(self) -> str | None:
        """Why the log stopped for this store (every write is refused since), or `None`."""
        return self._writer.failed

    @property
    def head(self) -> int:
        """The log's last sequence number as this store last saw it."""
        return self._writer.head

    @property
    def order(self) -> threading.RLock:
        """The reentrant lock held around each change of the session and its entry."""
        return self._order

    def close(self) -> None:
        """Write what an open atomic block queued, give the connections back; idempotent."""
        with self._order:
            if self._closed:
                return
            self._closed = True
            try:
                if self._writer.queued:
                    self._writer.flush()
            finally:
                PoolShare.give_back(self._conninfo, self._timeout)

    def __enter__(self) -> PostgresStore:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        mode = "closed" if self._closed else "read-only" if self._read_only else "writable"
        return f"PostgresStore({self._location!r}, {mode})"

    # -- writing -----------------------------------------------------------------------

    def put_states(self, values: Mapping[str, JsonValue]) -> None:
        """Keep each value as the latest under its key, all in one transaction.

        Raises:
            ConfigurationError: a key is empty or a value is not JSON; nothing written.
            StoreError: the store cannot be written (see the class).
        """
        with self._writing(None, encode_state(values), applied=True):
            pass

    def append_entry(self, entry: JournalEntry) -> None:
        """Append one decoded entry as it is, without replaying it (a copy of a session).

        Raises:
            StoreConflictError: another writer appended first; nothing written.
            StoreError: the store cannot be written (see the class).
        """
        if entry.kind == "events":
            body = encode_events(entry.events)
        else:
            body = encode_applied(entry.proposals, entry.audit)
        with self._writing((entry.kind, body), [], applied=False):
            pass

    def journaling_events(
        self, events: Iterable[AgentEvent | Mapping[str, Any]]
    ) -> AbstractContextManager[None]:
        """Journal one batch around its ingest, made inside the block (`JournalingStore`).

        Raises:
            IngestError: an event could not be read back from the log; nothing written.
            StoreConflictError: another writer appended first; nothing written.
            StoreError: the store cannot be written (see the class).
        """
        if self._replaying:
            return contextlib.nullcontext()
        batch = coerce_events(events)
        entry: Entry | None = ("events", encode_events(batch)) if batch else None
        return self._writing(entry, [], applied=False)

    def journaling_proposals(
        self, proposals: Sequence[Proposal], audit: Sequence[AuditEntry]
    ) -> AbstractContextManager[None]:
        """Journal one applied batch around its swap (`JournalingStore`).

        Raises:
            InvariantViolation: the proposals could not be read back from the log.
            StoreConflictError: another writer appended first; nothing written.
            StoreError: the store cannot be written (see the class).
        """
        if self._replaying:
            return contextlib.nullcontext()
        proposals, audit = tuple(proposals), tuple(audit)
        check_audit(proposals, audit)
        body = encode_applied(proposals, audit)
        return self._writing(("proposals", body), [], applied=False)

    @contextlib.contextmanager
    def atomic(self) -> Iterator[None]:
        """Write everything inside as one transaction when the block ends.

        Raises:
            StoreConflictError: another writer appended meanwhile, or the lease was lost:
                nothing of the block was kept; memory is ahead, every later write refused.
            StoreError: the queued entries cannot be written (memory is ahead).
        """
        with self._order:
            self._writer.open_scope()
        try:
            yield
        except BaseException:
            with self._order:
                self._writer.close_scope(closed=self._closed, quiet=True)
            raise
        with self._order:
            self._writer.close_scope(closed=self._closed, quiet=False)

    @contextlib.contextmanager
    def lease(self, *, holder: str | None = None, ttl: float = 60.0) -> Iterator[Lease]:
        """Hold the session's compaction lease; every write meanwhile checks its token.

        Args:
            holder: Who holds it, for people reading the database (host and pid when
                `None`).
            ttl: Seconds until the lease expires if it is not given back.

        Raises:
            StoreConflictError: another worker holds the lease (on entry), or took it
                over after it expired (on a write inside).
            StoreError: the store cannot be written (see the class).
        """
        name = holder if holder is not None else f"{os.uname().nodename}:{os.getpid()}"
        with self._order:
            self._writable()
            taken: Lease = self._run(
                "taking the lease",
                lambda conn: acquire_lease(conn, self._location, self._id, name, ttl),
            )
            self._writer.fence = taken.token
        try:
            yield taken
        finally:
            with self._order:
                self._writer.fence = None
                if not self._closed:
                    with contextlib.suppress(StoreError):  # it expires anyway
                        self._run(
                            "giving the lease back",
                            lambda conn: release_lease(conn, self._id, taken),
                        )

    def check_writable(self) -> None:
        """Raise if nothing may be written now (`JournalingStore`).

        Raises:
            StoreError: the store is closed, read-only, or memory is ahead of the log.
        """
        if not self._replaying:
            self._writable()

    def _writable(self) -> None:
        if self._closed:
            raise StoreError(self._location, "the store is closed")
        if self._read_only:
            msg = "opened read-only; open it without read_only=True to write"
            raise StoreError(self._location, msg)
        if self._writer.failed is not None:
            msg = (
                f"{self._writer.failed}, so the session in memory is ahead of the log; "
                "reopen the store to resume from what the log holds"
            )
            raise StoreError(self._location, msg)

    @contextlib.contextmanager
    def _writing(
        self, entry: Entry | None, state: list[tuple[str, str]], *, applied: bool
    ) -> Iterator[None]:
        with self._order:
            self._writable()
            with self._writer.writing(entry, state, applied=applied):
                yield

    # -- reading -----------------------------------------------------------------------

    def journal(self) -> Iterator[JournalEntry]:
        """The log's entries in order, decoded (read as one snapshot)."""
        return self._read(after=0, with_state=False).entries()

    def state(self) -> dict[str, JsonValue]:
        """The latest value of every state key."""
        return self._read(after=0, with_state=True).state

    def wait(self, *, timeout: float, poll: float = 1.0) -> bool:
        """Block until another writer appended past this store's head, or `timeout` passed.

        Woken by the append's notification; the head is read at least every `poll`
        seconds as well. Call `refresh()` afterwards to bring the entries in.

        Returns:
            Whether the log is past this store's head.

        Raises:
            StoreUnavailableError: the server cannot be reached.
        """
        if self._closed:
            raise StoreError(self._location, "the store is closed")
        seen = self._writer.head
        try:
            head = wait_for_entries(self._conninfo, self._id, seen, timeout=timeout, poll=poll)
        except Exception as exc:
            raise translate(exc, self._location, "waiting for new entries") from exc
        return head > seen

    def _read(self, *, after: int, with_state: bool) -> LogSnapshot:
        with self._order:
            if self._closed:
                raise StoreError(self._location, "the store is closed")
            snapshot: LogSnapshot = self._run(
                "reading the log",
                lambda conn: read_log(
                    conn, self._location, self._id, after=after, with_state=with_state
                ),
            )
            return snapshot

    def _run(self, doing: str, action: Callable[[Any], Any]) -> Any:
        return run_on(self._pool, self._location, doing, action)

    # -- restoring ---------------------------------------------------------------------

    def restore(self, *, clock: Callable[[], float] = time.time) -> RestoredSession:
        """Replay the log into a fresh pristine graph and working graph.

        From a writable store the two journal every later ingest and apply to this
        store (so it restores once); from a read-only one they are plain copies.

        Raises:
            StoreCorruptError: an entry does not decode or replay (names it).
            StoreError: this writable store already handed out its session.
        """
        if self._journal is not None:
            msg = "restore() was already called on this writable store; keep using its session"
            raise StoreError(self._location, msg)
        snapshot = self._read(after=0, with_state=True)
        journal = None if self._read_only else GraphJournal(self)
        resuming = ResumingClock(clock)
        session = replay(
            self._location,
            snapshot.entries(),
            snapshot.state,
            counter=self._counter,
            clock=resuming,
            journal=journal,
        )
        if journal is not None:
            with self._order:
                self._writable()
                journal.start()
                self._journal = journal
                self._writer.head = snapshot.head
                self._versions = snapshot.versions
                self._live = (session, resuming)
        return session

    def refresh(self) -> Refreshed:
        """Replay the entries other writers appended since this store last saw the log.

        Raises:
            StoreCorruptError: a new entry does not decode or replay (names it).
            StoreError: the session was not restored from this writable store, an
                atomic block is open, memory is ahead of the log, or the store is closed.
        """
        with self._order:
            self._writable()
            if self._live is None:
                msg = "refresh() needs the session restored from this store; call restore()"
                raise StoreError(self._location, msg)
            if self._writer.queued:
                # Memory holds the block's unwritten changes: others' entries would
                # replay on top of them, in an order the log never had.
                msg = "refresh() inside an atomic() block; refresh before the block begins"
                raise StoreError(self._location, msg)
            session, clock = self._live
            snapshot = self._read(after=self._writer.head, with_state=True)
            self._replaying = True
            try:
                for entry in snapshot.entries():
                    replay_entry(self._location, entry, session.raw, session.working, clock)
                    self._writer.head = entry.seq
            finally:
                self._replaying = False
            replayed = len(snapshot.rows)
            changed = snapshot.versions != self._versions
            self._versions = snapshot.versions
            return Refreshed(replayed, snapshot.state if changed or replayed else None)
