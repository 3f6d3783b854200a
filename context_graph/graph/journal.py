"""`IngestJournal`: the collaborator a `ContextGraph` records its ingested batches with.

A graph built alone keeps its record in memory only. A graph a session store restores
is handed the store's journal (`ContextGraph(journal=...)`) and ingests every batch
inside `journal.ingesting(batch)`, so that the batch in memory and its entry in the
journal are one step: both or neither.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import NoReturn, Protocol

from context_graph.graph.events import AgentEvent

__all__ = ["IngestJournal"]


class IngestJournal(Protocol):
    """Records each batch ingested into a graph, as one step with the ingest.

    The contract a journal keeps (a writable session store's, say):

    - `ingesting(batch)` is entered around one batch's ingest, once the events are
      validated and before anything of the batch is added. Entering refuses, raising
      before the graph changes, when nothing may be written now (a closed or failed
      store: `StoreError`) or when the batch cannot be written (`IngestError` naming
      the event). An empty batch is entered too: it writes nothing but is refused the
      same way.
    - Inside the block the graph adds the batch. If that raises, the write is undone
      and the graph is as it was. When the block ends the write is kept; if keeping it
      fails, it raises, and from then on every batch is refused (memory holds an
      entry the journal does not).
    - Batches are written in the order they are ingested, from any thread: entering
      takes the journal's lock, held until the block ends.
    """

    def ingesting(self, batch: Sequence[AgentEvent]) -> AbstractContextManager[None]:
        """Write `batch` around its ingest, which the graph makes inside the block."""

    def refuse(self, edit: str) -> NoReturn:
        """Raise the error for `edit` (`add_derived`, `add_edge`): it has no journal entry.

        Raises:
            StoreError: always; the edit would be lost when the session is restored.
        """
