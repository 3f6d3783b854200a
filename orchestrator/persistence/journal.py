"""`GraphJournal`: the journal a writable store hands the graphs it restores.

A restored session's `ContextGraph` and `WorkingGraph` are plain graphs holding this
journal (`IngestJournal` for the one, `ApplyJournal` for the other), so that each
ingested batch and each applied batch lands in memory and in the store as one step,
under the store's lock: the journal's order is the order things happened in. The entry
is encoded (and checked to read back) and written first, memory moves on inside the
same transaction, and an entry that cannot be written leaves memory as it was. The store
is asked first whether it can be written, so a closed or failed store refuses before
anything else.

The journal works with any backend that journals around a change (`JournalingStore`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Any, NoReturn, Protocol

from context_graph.errors import StoreError
from context_graph.graph.events import AgentEvent
from orchestrator.working.buffer import AuditEntry
from processors.base import Proposal

__all__ = ["GraphJournal", "JournalingStore"]


class JournalingStore(Protocol):
    """What `GraphJournal` needs of a backend: its lock, and one write around a change.

    `journaling_events` and `journaling_proposals` encode their entry (refusing, before
    anything is written, what could not be read back), write it, and keep the write
    when the block ends or undo it when the block raises.
    """

    @property
    def location(self) -> str:
        """Where the session is kept, for messages."""

    @property
    def order(self) -> AbstractContextManager[Any]:
        """A reentrant lock held around each change and its write."""

    def check_writable(self) -> None:
        """Raise `StoreError` if nothing may be written now."""

    def journaling_events(
        self, events: Iterable[AgentEvent | Mapping[str, Any]]
    ) -> AbstractContextManager[None]:
        """Journal one batch around its ingest, made inside the block."""

    def journaling_proposals(
        self, proposals: Sequence[Proposal], audit: Sequence[AuditEntry]
    ) -> AbstractContextManager[None]:
        """Journal one applied batch around its swap, made inside the block."""


class GraphJournal:
    """Journals what happens to a restored session's graphs into `store`, once started.

    Until `start()` every batch passes without being written: the store replays its own
    entries into the graphs first.

    Args:
        store: The writable store the entries go to.
    """

    __slots__ = ("_started", "_store")

    def __init__(self, store: JournalingStore) -> None:
        self._store = store
        self._started = False

    def start(self) -> None:
        """Write every batch from now on."""
        self._started = True

    @contextlib.contextmanager
    def ingesting(self, batch: Sequence[AgentEvent]) -> Iterator[None]:
        """Journal one batch around its ingest (`IngestJournal.ingesting`)."""
        if not self._started:
            yield
            return
        store = self._store
        with store.order:
            store.check_writable()
            if not batch:
                yield
                return
            with store.journaling_events(batch):
                yield

    @contextlib.contextmanager
    def applying(self) -> Iterator[None]:
        """Hold the store's order around one apply (`ApplyJournal.applying`)."""
        if not self._started:
            yield
            return
        store = self._store
        with store.order:
            store.check_writable()
            yield

    def swapping(
        self, proposals: tuple[Proposal, ...], audit: tuple[AuditEntry, ...]
    ) -> AbstractContextManager[None]:
        """Journal one applied batch around its swap (`ApplyJournal.swapping`)."""
        if not self._started:
            return contextlib.nullcontext()
        # Encoded, checked to read back and written before the state moves on; the swap
        # itself cannot fail, so memory and store stay one step.
        return self._store.journaling_proposals(proposals, audit)

    def refuse(self, edit: str) -> NoReturn:
        """Refuse an edit of the pristine record that has no entry (`IngestJournal.refuse`).

        Raises:
            StoreError: always.
        """
        msg = (
            f"{edit}() on a stored session's pristine record is not journaled and "
            "would be lost on restore; apply a proposal to the working graph instead"
        )
        raise StoreError(self._store.location, msg)
