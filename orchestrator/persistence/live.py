"""`LiveSession`: a writable store's restored session, kept in step with a shared log.

A store several workers write hands its restored graphs out once, then keeps them in
step with the log: `refresh` replays the entries the others appended. An atomic block
(a compaction run) is *marked* when it begins: the working graph's state then, and how
many nodes the pristine record held. When the block cannot be written as it is, a
block of applied proposals only can then be

- *taken back* (`rewind`): the working graph returns to the mark, as if the block had
  never run, so that a refused run leaves the store writable; or
- *rebased* (`rebase`): taken back, the newer entries replayed, and the block's
  batches applied again on top, each checked by the invariant checker against the newer
  view exactly as on its first apply. A batch the newer log made invalid (it touches a
  node a newer entry changed) is dropped whole, never half-applied; the others get new
  audit entries (their recorded times kept), and are written after the newer entries.

Only the working graph can go back: the pristine record is append-only, so a block that
ingested events is never taken back (it is refused as before, and the store must be
reopened). The working graph keeps its whole state behind one reference that each
apply swaps (`WorkingGraph._swap`); going back swaps in a state the graph itself had,
under its lock, which is the one thing this module reaches into it for.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from context_graph.errors import InvariantViolation
from orchestrator.persistence.codec import JournalEntry, checksum, decode_entry, encode_applied
from orchestrator.persistence.protocol import Rebased, RestoredSession
from orchestrator.persistence.restore import ResumingClock, replay_entry
from orchestrator.persistence.sqlite.writer import Entry
from processors.base import Proposal

__all__ = ["LiveSession"]


@dataclass(frozen=True, slots=True)
class _Mark:
    """Where a block began: the working graph's state and the pristine record's size."""

    state: object
    nodes: int


class LiveSession:
    """The restored session of a writable store, replayed forward and taken back.

    Args:
        location: The store, for messages.
        session: The graphs the store handed out.
        clock: Their working graph's clock (replayed proposals take their recorded time).
    """

    def __init__(self, location: str, session: RestoredSession, clock: ResumingClock) -> None:
        self._location = location
        self.session = session
        self._clock = clock
        self._mark: _Mark | None = None
        self.replaying = False
        """Entries are being replayed: the graphs' journal writes nothing meanwhile."""

    def replay(self, entries: Iterable[JournalEntry], seen: Callable[[int], None]) -> int:
        """Replay `entries` (others' appends) in order; `seen(seq)` after each; how many.

        Raises:
            StoreCorruptError: an entry does not decode or replay (names it).
        """
        raw, working = self.session.raw, self.session.working
        replayed = 0
        self.replaying = True
        try:
            for entry in entries:
                replay_entry(self._location, entry, raw, working, self._clock)
                seen(entry.seq)
                replayed += 1
        finally:
            self.replaying = False
        return replayed

    # -- blocks --------------------------------------------------------------------------

    def mark(self) -> None:
        """Remember the state a block begins from."""
        working = self.session.working
        self._mark = _Mark(working._state, len(self.session.raw))

    def unmark(self) -> None:
        """The block ended (written, or not to be taken back)."""
        self._mark = None

    def movable(self, entries: Sequence[Entry]) -> bool:
        """Whether the block that queued `entries` can be taken back (and so rebased)."""
        mark = self._mark
        return (
            mark is not None
            and len(self.session.raw) == mark.nodes
            and all(kind == "proposals" for kind, _ in entries)
        )

    def rewind(self) -> None:
        """Take the block back: the working graph returns to the state at the mark."""
        mark = self._mark
        if mark is None:
            return
        working = self.session.working
        with working._lock:
            working._state = mark.state  # type: ignore[assignment]

    def rebase(
        self, newer: Iterable[JournalEntry], queued: Sequence[Entry], seen: Callable[[int], None]
    ) -> tuple[list[Entry], Rebased]:
        """Take the block back, replay `newer`, apply the block's batches again on top.

        Returns:
            The entries to write now (the batches that still apply, with their new
            audit entries), and what happened.

        Raises:
            StoreCorruptError: a newer entry does not decode or replay (memory is then
                between two entries: the caller stops writing).
        """
        self.rewind()
        replayed = self.replay(newer, seen)
        self.mark()
        kept: list[Entry] = []
        dropped: list[tuple[Proposal, str]] = []
        self.replaying = True
        try:
            for kind, body in queued:
                entry = decode_entry(self._location, 0, kind, body.encode("utf-8"), checksum(body))
                applied = self._apply_again(entry)
                if isinstance(applied, str):
                    dropped.extend((proposal, applied) for proposal in entry.proposals)
                else:
                    kept.append(applied)
        finally:
            self.replaying = False
        return kept, Rebased(replayed, tuple(dropped))

    def _apply_again(self, entry: JournalEntry) -> Entry | str:
        """One queued batch applied again at its recorded time; why not, if it no longer applies."""
        self._clock.pending = entry.audit[0].time
        try:
            audit = self.session.working.apply_batch(entry.proposals)
        except InvariantViolation as exc:
            return str(exc)
        finally:
            self._clock.pending = None
        return ("proposals", encode_applied(entry.proposals, audit))
