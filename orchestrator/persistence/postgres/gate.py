"""`WriteGate`: whether a PostgreSQL store may write now, and one write around each change.

It is what the graphs a store restored journal through (`JournalingStore`): the store's
lock, the refusals that come before anything changes (the store is closed, read-only,
or its memory is ahead of the log), and each ingested or applied batch written by the
store's writer around the change, except while entries the log already holds are
replayed into the graphs (a refresh, a rebase).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Any

from context_graph.errors import StoreError
from context_graph.graph.events import AgentEvent, coerce_events
from orchestrator.persistence.codec import check_audit, encode_applied, encode_events
from orchestrator.persistence.postgres.writer import LogWriter
from orchestrator.persistence.sqlite.writer import Entry
from orchestrator.working.buffer import AuditEntry
from processors.base import Proposal

__all__ = ["WriteGate"]


class WriteGate:
    """The write side of one `PostgresStore` (a `JournalingStore`).

    Args:
        location: The store, for messages.
        writer: Writes each entry.
        read_only: Every write is refused.
    """

    def __init__(self, location: str, writer: LogWriter, *, read_only: bool) -> None:
        self._location = location
        self._writer = writer
        self.read_only = read_only
        self.closed = False
        """The store was closed: every write is refused."""
        self.replaying: Callable[[], bool] = lambda: False
        """Whether entries of the log are being replayed (nothing is written then)."""
        self._order = threading.RLock()

    @property
    def location(self) -> str:
        """The store, for messages."""
        return self._location

    @property
    def order(self) -> threading.RLock:
        """The reentrant lock held around each change of the session and its entry."""
        return self._order

    def check_writable(self) -> None:
        """Raise if nothing may be written now (`JournalingStore`).

        Raises:
            StoreError: the store is closed, read-only, or memory is ahead of the log.
        """
        if not self.replaying():
            self.writable()

    def writable(self) -> None:
        """Raise if nothing may be written now, replaying or not (see `check_writable`)."""
        if self.closed:
            raise StoreError(self._location, "the store is closed")
        if self.read_only:
            msg = "opened read-only; open it without read_only=True to write"
            raise StoreError(self._location, msg)
        if self._writer.failed is not None:
            msg = (
                f"{self._writer.failed}, so the session in memory is ahead of the log; "
                "reopen the store to resume from what the log holds"
            )
            raise StoreError(self._location, msg)

    @contextlib.contextmanager
    def writing(
        self, entry: Entry | None, state: list[tuple[str, str]], *, applied: bool
    ) -> Iterator[None]:
        """Write `entry` and `state` (under the lock, once `writable` passes) around a change.

        Raises:
            StoreConflictError: another writer appended first; nothing written.
            StoreError: the store cannot be written; nothing written.
        """
        with self._order:
            self.writable()
            with self._writer.writing(entry, state, applied=applied):
                yield

    def journaling_events(
        self, events: Iterable[AgentEvent | Mapping[str, Any]]
    ) -> AbstractContextManager[None]:
        """Journal one batch around its ingest, made inside the block (`JournalingStore`).

        Raises:
            IngestError: an event could not be read back from the log; nothing written.
            StoreConflictError: another writer appended first; nothing written.
            StoreError: the store cannot be written; nothing written.
        """
        if self.replaying():
            return contextlib.nullcontext()
        batch = coerce_events(events)
        entry: Entry | None = ("events", encode_events(batch)) if batch else None
        return self.writing(entry, [], applied=False)

    def journaling_proposals(
        self, proposals: Sequence[Proposal], audit: Sequence[AuditEntry]
    ) -> AbstractContextManager[None]:
        """Journal one applied batch around its swap (`JournalingStore`).

        Raises:
            InvariantViolation: the proposals could not be read back from the log.
            StoreConflictError: another writer appended first; nothing written.
            StoreError: the store cannot be written; nothing written.
        """
        if self.replaying():
            return contextlib.nullcontext()
        proposals, audit = tuple(proposals), tuple(audit)
        check_audit(proposals, audit)
        body = encode_applied(proposals, audit)
        return self.writing(("proposals", body), [], applied=False)
