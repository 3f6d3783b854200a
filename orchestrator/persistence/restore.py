"""Replaying a journal, and the graphs that journal what happens to them.

`replay_entry` applies one decoded entry to a fresh pristine graph and working graph:
events are ingested, proposals applied one by one, each while the working graph's
clock returns the time recorded for it, so the audit log comes back exactly, times
included; a replayed audit entry that differs from the recorded one is an error.

`JournaledGraph` and `JournaledWorkingGraph` are the graphs a writable store hands out:
once attached to a `Journal`, each ingested batch and each applied proposal (or batch)
lands in memory and in the journal as one step, under the journal's lock, so the
journal's order is the order things happened in: the entry is encoded (and checked to
read back) and inserted first, memory moves on inside the same transaction, and an
entry that cannot be written leaves memory as it was. The journal is asked first
whether it can be written, so a closed or failed store refuses before anything else.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, Protocol

from context_graph.errors import IngestError, InvariantViolation, StoreCorruptError, StoreError
from context_graph.graph.context_graph import ContextGraph
from context_graph.graph.edges import EdgeKind
from context_graph.graph.events import AgentEvent, coerce_events
from context_graph.graph.nodes import Node
from orchestrator.persistence.codec import JournalEntry
from orchestrator.working.buffer import AuditEntry, WorkingGraph, _State
from processors.base import Proposal

__all__ = ["Journal", "JournaledGraph", "JournaledWorkingGraph", "ResumingClock", "replay_entry"]


class Journal(Protocol):
    """Where journaled graphs write (a writable `SessionStore`)."""

    @property
    def path(self) -> Path:
        """The session file."""

    @property
    def order(self) -> AbstractContextManager[Any]:
        """A reentrant lock held around each change and its journal write."""

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


class ResumingClock:
    """The working graph's clock: a recorded time while replaying, then the real one."""

    __slots__ = ("_clock", "pending")

    def __init__(self, clock: Callable[[], float]) -> None:
        self._clock = clock
        self.pending: float | None = None
        """The time to return instead of the real clock's (set while replaying)."""

    def __call__(self) -> float:
        """The pending replayed time, else the real clock's."""
        return self._clock() if self.pending is None else self.pending


class JournaledGraph(ContextGraph):
    """A pristine graph that journals each batch ingested into it, once attached."""

    journal: Journal | None = None
    """Where it writes; `None` while replaying, and when restored from a read-only store."""

    def ingest(self, events: Iterable[AgentEvent | dict[str, Any]]) -> tuple[str, ...]:
        """Add a batch of events, whole or not at all, and journal it.

        Raises:
            IngestError: an event is malformed; nothing was added or written.
            StoreError: the journal cannot be written (checked before anything is added).
        """
        journal = self.journal
        if journal is None:
            return super().ingest(events)
        batch = coerce_events(events)
        with journal.order:
            journal.check_writable()
            if not batch:
                return super().ingest(batch)
            with journal.journaling_events(batch):
                return super().ingest(batch)

    def add_derived(self, node: Node) -> str:
        """Refused once attached: the journal has no entry for it."""
        self._refuse("add_derived")
        return super().add_derived(node)

    def add_edge(self, source: str, target: str, kind: EdgeKind) -> None:
        """Refused once attached: the journal has no entry for it."""
        self._refuse("add_edge")
        super().add_edge(source, target, kind)

    def _refuse(self, method: str) -> None:
        if self.journal is not None:
            msg = (
                f"{method}() on a stored session's pristine record is not journaled and "
                "would be lost on restore; apply a proposal to the working graph instead"
            )
            raise StoreError(str(self.journal.path), msg)


class JournaledWorkingGraph(WorkingGraph):
    """A working graph that journals each applied proposal or batch, once attached."""

    journal: Journal | None = None
    """Where it writes; `None` while replaying, and when restored from a read-only store."""

    def apply_batch(
        self, proposals: Iterable[Proposal], *, protected: Collection[str] = ()
    ) -> tuple[AuditEntry, ...]:
        """Apply several proposals as one swap, all or none, and journal them as one entry.

        Raises:
            InvariantViolation: one proposal breaks a rule; nothing changed or written.
            StoreError: the journal cannot be written (checked before anything changes).
        """
        journal = self.journal
        if journal is None:
            return super().apply_batch(proposals, protected=protected)
        with journal.order:
            journal.check_writable()
            return super().apply_batch(proposals, protected=protected)

    def _swap(
        self, state: _State, proposals: tuple[Proposal, ...], entries: tuple[AuditEntry, ...]
    ) -> None:
        # The entry is encoded, checked to read back and inserted before the state
        # moves on; the swap itself cannot fail, so memory and file stay one step.
        journal = self.journal
        if journal is None or not entries:
            super()._swap(state, proposals, entries)
            return
        with journal.journaling_proposals(proposals, entries):
            super()._swap(state, proposals, entries)


def replay_entry(
    path: str,
    entry: JournalEntry,
    raw: ContextGraph,
    working: WorkingGraph,
    clock: ResumingClock,
) -> None:
    """Apply one journal entry to `raw` / `working` as it was applied when recorded.

    Raises:
        StoreCorruptError: the entry does not replay, or replays to another audit entry.
    """
    if entry.kind == "events":
        try:
            raw.ingest(entry.events)
        except IngestError as exc:
            msg = f"its events no longer ingest ({exc}); was it written by another version?"
            raise StoreCorruptError(path, msg, seq=entry.seq) from exc
        return
    # One proposal at a time, each at its recorded time: a batch applied whole leaves
    # the state its proposals leave applied in order (each is checked against the
    # state the ones before it leave), and its audit entries share one time anyway.
    for index, (proposal, recorded) in enumerate(zip(entry.proposals, entry.audit, strict=True)):
        clock.pending = recorded.time
        try:
            replayed = working.apply(proposal)
        except InvariantViolation as exc:
            msg = f"proposal {index} from `{proposal.processor}` no longer applies: {exc}"
            raise StoreCorruptError(path, msg, seq=entry.seq) from exc
        finally:
            clock.pending = None
        if replayed != recorded:
            fields = [
                name
                for name in AuditEntry.model_fields
                if getattr(replayed, name) != getattr(recorded, name)
            ]
            msg = (
                f"proposal {index} from `{proposal.processor}` replays to another audit "
                f"entry than the recorded one (it differs in {', '.join(fields)})"
            )
            raise StoreCorruptError(path, msg, seq=entry.seq)
