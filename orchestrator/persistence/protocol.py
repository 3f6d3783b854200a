"""`SessionStore`: what a `ContextManager` needs of the place its session is kept.

The manager restores a session once (`restore`), then writes its own state by key
(`put_states`), groups the writes of one compaction run (`atomic`) and closes the store
with itself. Everything the graphs change is journaled by the graphs `restore` handed
out, under the store's own lock, so the manager never writes an entry itself. A backend
(the SQLite file of `SQLiteStore`; a database server) implements these members; the
manager holds one and never subclasses it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Protocol

from pydantic import JsonValue

from context_graph.graph.context_graph import ContextGraph
from orchestrator.working.buffer import WorkingGraph

__all__ = ["RestoredSession", "SessionStore"]


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


class SessionStore(Protocol):
    """One stored session: its journal of events and applied edits, and its state.

    Writes are refused (`StoreError`), before anything changes, once the store is
    closed, when it was opened read-only, and after a write failed.
    """

    @property
    def location(self) -> str:
        """Where the session is kept (a file path, a database URL), for messages."""

    @property
    def closed(self) -> bool:
        """Whether `close()` was called."""

    def restore(self, *, clock: Callable[[], float]) -> RestoredSession:
        """Rebuild the session; from then on its graphs journal what happens to them.

        Raises:
            StoreCorruptError: the journal or the state does not load.
        """

    def put_states(self, values: Mapping[str, JsonValue]) -> None:
        """Write several state keys as one step.

        Raises:
            StoreError: the store cannot be written.
        """

    def atomic(self) -> AbstractContextManager[None]:
        """Keep everything written inside as one transaction, when the block ends."""

    def close(self) -> None:
        """Release the store; later writes are refused. Closing twice is allowed."""
