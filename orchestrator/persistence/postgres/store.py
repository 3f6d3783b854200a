"""`PostgresStore`: a session kept in PostgreSQL, written by any number of workers.

The session is the same ordered journal as in a SQLite file (`events` and `proposals`
entries, replayed by `restore`), kept as an append-only log in a database that holds
many sessions (`postgres.schema`). What changes is that several processes write one
session: each append is a compare-and-set on the log's head (`postgres.writer`), so a
writer whose view is behind gets `StoreConflictError` with nothing written, calls
`refresh()` to replay what the others appended (`live`), and retries. A compactor takes
the session's lease (`lease()`, `postgres.lease`), whose fencing token every write it
makes is checked against; a compaction run that finds the log moved on when it ends is
rebased over the newer entries (`atomic(rebased=...)`); a worker waiting for others'
entries blocks in `wait()` (LISTEN/NOTIFY).

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
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager
from typing import Any

from pydantic import JsonValue

from context_graph.errors import StoreError
from context_graph.tokens.counting import TokenCounter, default_counter
from orchestrator.persistence.codec import JournalEntry, encode_applied, encode_events
from orchestrator.persistence.journal import GraphJournal
from orchestrator.persistence.live import LiveSession
from orchestrator.persistence.postgres.connect import PoolShare, parse_location, run_on, translate
from orchestrator.persistence.postgres.follow import LogFollower
from orchestrator.persistence.postgres.gate import WriteGate
from orchestrator.persistence.postgres.lease import LeaseKeeper
from orchestrator.persistence.postgres.reader import LogSnapshot, open_session, read_log
from orchestrator.persistence.postgres.watch import wait_for_entries
from orchestrator.persistence.postgres.writer import LogWriter
from orchestrator.persistence.protocol import Lease, Rebased, Refreshed, RestoredSession
from orchestrator.persistence.restore import ResumingClock, replay
from orchestrator.persistence.schema import encode_state

__all__ = ["PostgresStore"]


class PostgresStore:
    """A `SessionStore` in a PostgreSQL database, shared by workers; `PostgresStore.open`.

    Writes are refused, before anything changes, once the store is closed, when it was
    opened read-only, and after a commit failed with memory ahead of the log (reopen to
    resume from what the log holds).
    """

    def __init__(
        self,
        conninfo: str,
        location: str,
        session: str,
        session_id: int,
        *,
        counter: TokenCounter,
        timeout: float,
        pool: Any,
        durable: bool,
        read_only: bool,
    ) -> None:
        self._conninfo = conninfo
        self._session = session
        self._location = location
        self._id = session_id
        self._counter = counter
        self._timeout = timeout
        self._pool: Any = pool
        self._durable = durable
        self._writer = LogWriter(location, session_id, pool, durable=durable)
        self._gate = WriteGate(location, self._writer, read_only=read_only)
        self._order = self._gate.order
        self._writable = self._gate.writable
        self._leases = LeaseKeeper(location, session_id, self._pool, self._writer)
        self._journal: GraphJournal | None = None
        self._follower: LogFollower | None = None

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

    def sibling(self, session: str) -> PostgresStore:
        """Open another session of the same database, writable, as this store was opened.

        It gets this store's counter, timeout and durability (a fork of the session).

        Raises:
            ConfigurationError: `session` is not a valid session name.
            StoreError: as `open`.
        """
        return PostgresStore.open(
            self._conninfo,
            session=session,
            counter=self._counter,
            durable=self._durable,
            timeout=self._timeout,
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
        return self._gate.read_only

    @property
    def closed(self) -> bool:
        """Whether `close()` was called."""
        return self._gate.closed

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
            if self._gate.closed:
                return
            self._gate.closed = True
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
        mode = (
            "closed" if self._gate.closed else "read-only" if self._gate.read_only else "writable"
        )
        return f"PostgresStore({self._location!r}, {mode})"

    # -- writing -----------------------------------------------------------------------

    def put_states(self, values: Mapping[str, JsonValue]) -> None:
        """Keep each value as the latest under its key, all in one transaction.

        Raises:
            ConfigurationError: a key is empty or a value is not JSON; nothing written.
            StoreError: the store cannot be written (see the class).
        """
        with self._gate.writing(None, encode_state(values), applied=True):
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
        with self._gate.writing((entry.kind, body), [], applied=False):
            pass

    @contextlib.contextmanager
    def atomic(self, *, rebased: Callable[[Rebased], None] | None = None) -> Iterator[None]:
        """Write everything inside as one transaction when the block ends.

        A block of applied proposals only (a compaction run) that finds the log moved
        on is, with `rebased`, rebased over the newer entries (`LiveSession.rebase`) and
        written after them, and `rebased` is told what was replayed and dropped; without
        it, or when its lease was lost, it is taken back from memory and the store
        stays writable (refresh, then retry).

        Raises:
            StoreConflictError: another writer appended meanwhile (no `rebased`), or the
                lease was lost: nothing of the block was kept.
            StoreError: the queued entries cannot be written; memory is ahead (every
                later write refused) unless the block was taken back.
        """
        with self._order:
            follower = self._follower
            if follower is None:
                self._writer.open_scope()
            else:
                follower.begin_block()
        try:
            yield
        except BaseException:
            with self._order:
                self._end_block(follower, quiet=True, rebased=None)
            raise
        with self._order:
            self._end_block(follower, quiet=False, rebased=rebased)

    def _end_block(
        self,
        follower: LogFollower | None,
        *,
        quiet: bool,
        rebased: Callable[[Rebased], None] | None,
    ) -> None:
        if follower is None:
            self._writer.close_scope(closed=self._gate.closed, quiet=quiet)
        else:
            follower.end_block(closed=self._gate.closed, quiet=quiet, rebased=rebased)

    def lease(
        self, *, holder: str | None = None, ttl: float = 60.0
    ) -> AbstractContextManager[Lease]:
        """Hold the session's compaction lease; every write meanwhile checks its token.

        A lease this store holds already is joined (given back by the outer block); a
        read-only store writes nothing and is granted one with token 0.

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
        if self._gate.read_only and not self._gate.closed:
            return contextlib.nullcontext(Lease(name, 0))
        return self._leases.hold(name, ttl, self._order, self._writable, lambda: self._gate.closed)

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
        if self._gate.closed:
            raise StoreError(self._location, "the store is closed")
        seen = self._writer.head
        try:
            head = wait_for_entries(self._conninfo, self._id, seen, timeout=timeout, poll=poll)
        except Exception as exc:
            raise translate(exc, self._location, "waiting for new entries") from exc
        return head > seen

    def _read(self, *, after: int, with_state: bool) -> LogSnapshot:
        with self._order:
            if self._gate.closed:
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
        journal = None if self._gate.read_only else GraphJournal(self._gate)
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
                live = LiveSession(self._location, session, resuming)
                self._follower = LogFollower(
                    self._location, live, self._writer, self._read, snapshot.versions
                )
                self._gate.replaying = lambda: live.replaying
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
            if self._follower is None:
                msg = "refresh() needs the session restored from this store; call restore()"
                raise StoreError(self._location, msg)
            return self._follower.refresh()
