"""Restoring a session: its journal replayed into fresh graphs, whatever the backend.

`replay` builds the pristine graph and the working graph (holding the store's journal,
not started while they replay) and applies the entries in order with `replay_entry`:
events are ingested, proposals applied one by one, each while the working graph's
clock returns the time recorded for it, so the audit log comes back exactly, times
included; a replayed audit entry that differs from the recorded one is an error.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from pydantic import JsonValue

from context_graph.errors import IngestError, InvariantViolation, StoreCorruptError
from context_graph.graph.context_graph import ContextGraph
from context_graph.tokens.counting import TokenCounter
from orchestrator.persistence.codec import JournalEntry
from orchestrator.persistence.journal import GraphJournal
from orchestrator.persistence.protocol import RestoredSession
from orchestrator.working.buffer import AuditEntry, WorkingGraph

__all__ = ["ResumingClock", "replay", "replay_entry"]


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


def replay(
    location: str,
    entries: Iterable[JournalEntry],
    state: dict[str, JsonValue],
    *,
    counter: TokenCounter,
    clock: Callable[[], float],
    journal: GraphJournal | None,
) -> RestoredSession:
    """Replay `entries` into a fresh pristine graph and working graph holding `journal`.

    Args:
        location: The store, for messages.
        entries: The journal, in order.
        state: The latest value of every state key, handed back as is.
        counter: The token counter the session was recorded with.
        clock: The working graph's clock for proposals applied from now on.
        journal: The graphs' journal (not started yet: the replay is not written
            again); `None` for plain copies.

    Raises:
        StoreCorruptError: an entry does not replay, or replays to another audit entry
            than the one recorded (names the entry).
    """
    raw = ContextGraph(counter=counter, journal=journal)
    resuming = ResumingClock(clock)
    working = WorkingGraph(raw, clock=resuming, journal=journal)
    replayed = 0
    for entry in entries:
        replay_entry(location, entry, raw, working, resuming)
        replayed += 1
    return RestoredSession(raw, working, state, replayed)


def replay_entry(
    location: str,
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
            raise StoreCorruptError(location, msg, seq=entry.seq) from exc
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
            raise StoreCorruptError(location, msg, seq=entry.seq) from exc
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
            raise StoreCorruptError(location, msg, seq=entry.seq)
