"""`MemoryRecord`: the journal of a session kept in memory, so that it can be forked.

A manager without a store hands this to its graphs as their journal (`IngestJournal`
for the pristine record, `ApplyJournal` for the working graph), so it holds the same
entries a session store would: every ingested batch and every applied batch with its
audit entries, in order. Nothing is encoded: an entry holds the events and proposals
themselves (the nodes built from them share their content), so keeping it costs a
reference per event. `ContextManager.fork` reads it as it reads a store's journal.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import NoReturn

from context_graph.errors import ConfigurationError
from context_graph.graph.context_graph import ContextGraph
from context_graph.graph.events import AgentEvent
from orchestrator.persistence.codec import JournalEntry
from orchestrator.persistence.restore import ResumingClock, replay_entry
from orchestrator.working.buffer import AuditEntry, WorkingGraph
from processors.base import Proposal

__all__ = ["MemoryRecord"]


class MemoryRecord:
    """Every batch ingested into and applied to a manager's graphs in memory, in order.

    Args:
        clock: The working graph's clock; `clock` wraps it so that replayed proposals
            keep their recorded times.
    """

    __slots__ = ("_entries", "_lock", "clock")

    def __init__(self, clock: Callable[[], float]) -> None:
        self._entries: list[JournalEntry] = []
        self._lock = threading.RLock()
        self.clock = ResumingClock(clock)
        """The clock to give the working graph this record journals."""

    def entries(self) -> tuple[JournalEntry, ...]:
        """The entries so far, oldest first."""
        with self._lock:
            return tuple(self._entries)

    def replay(
        self, entries: Iterable[JournalEntry], raw: ContextGraph, working: WorkingGraph
    ) -> None:
        """Replay `entries` into `raw` and `working` (which journal to this record).

        Raises:
            StoreCorruptError: an entry does not replay as recorded (names it).
        """
        for entry in entries:
            replay_entry("memory", entry, raw, working, self.clock)

    # -- IngestJournal -----------------------------------------------------------------

    @contextlib.contextmanager
    def ingesting(self, batch: Sequence[AgentEvent]) -> Iterator[None]:
        """Keep `batch` once the graph has ingested it (not when the ingest raises)."""
        with self._lock:
            yield
            if batch:
                entries = self._entries
                entries.append(JournalEntry(len(entries) + 1, "events", events=tuple(batch)))

    def refuse(self, edit: str) -> NoReturn:
        """Refuse an edit of the pristine record that no entry keeps.

        Raises:
            ConfigurationError: always.
        """
        msg = (
            f"{edit}() on a manager's pristine record is not kept in its record, so a "
            "fork() would lose it; apply a proposal to the working graph instead"
        )
        raise ConfigurationError(msg)

    # -- ApplyJournal ------------------------------------------------------------------

    @contextlib.contextmanager
    def applying(self) -> Iterator[None]:
        """Hold the record's order around one apply."""
        with self._lock:
            yield

    @contextlib.contextmanager
    def swapping(
        self, proposals: tuple[Proposal, ...], audit: tuple[AuditEntry, ...]
    ) -> Iterator[None]:
        """Keep the applied batch once the working graph has swapped it in."""
        with self._lock:
            yield
            entries = self._entries
            seq = len(entries) + 1
            entries.append(JournalEntry(seq, "proposals", proposals=proposals, audit=audit))
