"""`SessionStore`: what a `ContextManager` needs of the place its session is kept.

The manager opens a store (`open_store`), restores the session once (`restore`), then
writes its own state by key (`put_states`), holds the session's compaction lease around
each compaction run (`lease`) and groups the run's writes (`atomic`), and closes the store
with itself. Everything the graphs change is journaled
by the graphs `restore` handed out, which hold the store's journal (an `IngestJournal`
and an `ApplyJournal`), so the manager never writes an entry itself. A backend (the
SQLite file of `SQLiteStore`; a database server) implements these eight members, and
the manager holds one and never subclasses it. `refresh` and `lease` matter where several
workers write one session (`PostgresStore`): the one brings in what the others appended,
the other lets one of them compact at a time.

The contract a backend meets (`tests/orchestrator/persistence/test_store_contract.py` checks it for
every backend):

- *Replay is exact.* `restore` gives back the pristine record with the same node ids,
  and the working graph with the same view, versions and audit log (recorded times
  included), as the session had when each entry was written.
- *One step per change.* Each batch ingested into the restored pristine graph and
  each batch applied to the restored working graph is written as one entry, as one
  step with the change in memory: an entry that cannot be written (it would not read
  back, or the write fails) raises and leaves memory as it was; a batch memory refuses
  is never written.
- *Order.* Entries are written in the order the changes happened, from any thread.
- *Refusal first.* Once the store is closed, or after a write that left memory ahead of
  the store, every write (an ingest, an apply, `put_states`) raises `StoreError` before
  anything changes. A read-only store hands out plain copies and refuses `put_states`.
- *Edits without entries are refused.* `add_derived` and `add_edge` on the restored
  pristine graph raise `StoreError` (they would be lost on restore).
- *One lease at a time.* `lease` is granted when no one holds it, refused with
  `StoreConflictError` naming the holder when another store holds it, joined when this
  store holds it already, and given back when the block ends.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Protocol

from pydantic import JsonValue

from context_graph.graph.context_graph import ContextGraph
from orchestrator.working.buffer import WorkingGraph
from processors.base import Proposal

__all__ = ["Lease", "Rebased", "Refreshed", "RestoredSession", "SessionStore"]


@dataclass(frozen=True, slots=True)
class RestoredSession:
    """What `SessionStore.restore` rebuilt from the store.

    Attributes:
        raw: The pristine record. From a writable store it journals every batch
            ingested into it.
        working: The working graph over `raw`, with the audit log as recorded. From a
            writable store it journals every proposal or batch applied to it.
        state: The latest value of every state key.
        entries: How many journal entries were replayed.
    """

    raw: ContextGraph
    working: WorkingGraph
    state: dict[str, JsonValue]
    entries: int


@dataclass(frozen=True, slots=True)
class Refreshed:
    """What `SessionStore.refresh` brought into the restored session.

    Attributes:
        entries: How many entries other writers appended were replayed.
        state: The stored state, when it changed since this store last read or wrote
            it (`None`: it did not).
    """

    entries: int
    state: dict[str, JsonValue] | None


@dataclass(frozen=True, slots=True)
class Lease:
    """A compaction lease held on a session (`SessionStore.lease`).

    Attributes:
        holder: Who holds it (a worker's name, for people reading the store).
        token: The fencing token: larger than every token handed out before it.
    """

    holder: str
    token: int


@dataclass(frozen=True, slots=True)
class Rebased:
    """What an atomic block that raced other writers' appends was rebased over.

    Attributes:
        entries: How many entries other writers appended were replayed under the block.
        dropped: The block's proposals the newer log made invalid, each with the
            invariant checker's reason; they were taken back and not written.
    """

    entries: int
    dropped: tuple[tuple[Proposal, str], ...]


class SessionStore(Protocol):
    """One stored session: its journal of events and applied edits, and its state.

    Writes are refused (`StoreError`), before anything changes, once the store is
    closed, when it was opened read-only, and after a write failed with memory ahead of
    the store.
    """

    @property
    def location(self) -> str:
        """Where the session is kept (a file path, a database URL), for messages.

        Every `StoreError` the store raises names it; it stays readable after `close`.
        """

    @property
    def closed(self) -> bool:
        """Whether `close()` was called."""

    def restore(self, *, clock: Callable[[], float]) -> RestoredSession:
        """Rebuild the session; from a writable store its graphs journal from then on.

        A writable store restores once (its graphs are the session); a read-only one
        hands out plain copies each time. Nothing is returned unless everything
        replays.

        Args:
            clock: The working graph's clock for proposals applied from now on
                (replayed ones keep their recorded times).

        Raises:
            StoreCorruptError: the journal or the state does not load (names the entry).
            StoreError: a writable store's session was handed out already, or the store
                is closed.
        """

    def put_states(self, values: Mapping[str, JsonValue]) -> None:
        """Keep each value as the latest under its key, all of them in one step.

        A crash keeps all of them or none. Keys not given keep their values.

        Raises:
            ConfigurationError: a key is empty or a value is not JSON; nothing written.
            StoreError: the store cannot be written (see the class); nothing written.
        """

    def atomic(
        self, *, rebased: Callable[[Rebased], None] | None = None
    ) -> AbstractContextManager[None]:
        """Keep everything written inside (entries and state) as one step.

        It lands when the block ends, normally or by an exception (memory has moved on
        either way); until then a crash loses all of it and readers see none of it.
        Nested blocks join the outermost one.

        Args:
            rebased: Where several workers write, a block of applied proposals that
                finds the log moved on is rebased when it ends: the newer entries are
                replayed under it, its proposals checked again and written after them
                (those the newer log made invalid are taken back), and `rebased` is
                told what happened. Without it such a block is refused.

        Raises:
            StoreConflictError: the log moved on (no `rebased`), or the lease was taken
                over: nothing of the block was kept. A block of applied proposals only
                is then taken back from memory and the store stays writable.
            StoreError: what the block wrote cannot be kept; memory is then ahead of
                the store and every later write is refused.
        """

    def lease(
        self, *, holder: str | None = None, ttl: float = 60.0
    ) -> AbstractContextManager[Lease]:
        """Hold the session's compaction lease for the block; joined if held already.

        While it is held every write of this store checks that the lease is still its
        own; a read-only store writes nothing and is granted it at once.

        Args:
            holder: Who holds it, for people reading the store (host and pid when `None`).
            ttl: Seconds until the lease expires if it is not given back.

        Raises:
            StoreConflictError: another store holds the lease (on entry, naming the
                holder), or took it over after it expired (on a write inside).
            StoreError: the store is closed.
        """

    def refresh(self) -> Refreshed:
        """Replay into the restored session the entries other writers appended since.

        A store only this process writes has nothing to bring in (0 entries).

        Raises:
            StoreCorruptError: a new entry does not load or replay (names it).
            StoreError: the session was not restored from this store, memory is ahead of
                the store, or the store is closed.
        """

    def close(self) -> None:
        """Keep what an open `atomic` block wrote, release the store; idempotent.

        Later writes, through the store or its graphs, are refused.
        """
