"""`LogFollower`: a PostgreSQL store's restored session, kept in step with the shared log.

The other side of `postgres.writer`: the writer appends from where this worker last saw
the log; the follower moves that point on. `refresh` replays what other workers
appended; an atomic block is marked when it begins and, when it ends, written with the
ways `LiveSession` has to take it back or rebase it, so that a compaction run racing
another worker's append lands after it instead of wedging the store.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

from pydantic import JsonValue

from context_graph.errors import StoreError
from orchestrator.persistence.live import LiveSession
from orchestrator.persistence.postgres.reader import LogSnapshot
from orchestrator.persistence.postgres.writer import LogWriter
from orchestrator.persistence.protocol import Rebased, Refreshed
from orchestrator.persistence.sqlite.writer import Entry

__all__ = ["LogFollower"]

Read = Callable[..., LogSnapshot]
"""Reads the log after an entry: `read(after=seq, with_state=bool)`."""


class LogFollower:
    """Refreshes a restored session and lands its atomic blocks (under the store's lock).

    Args:
        location: The store, for messages.
        live: The restored session.
        writer: The store's writer (its `head` is what this worker saw last).
        read: Reads the log after an entry.
        versions: The state keys' versions as restored.
    """

    def __init__(
        self,
        location: str,
        live: LiveSession,
        writer: LogWriter,
        read: Read,
        versions: dict[str, int],
    ) -> None:
        self._location = location
        self.live = live
        self._writer = writer
        self._read = read
        self._versions = versions

    def refresh(self) -> Refreshed:
        """Replay the entries other writers appended since this worker last saw the log.

        Raises:
            StoreCorruptError: a new entry does not decode or replay (names it).
            StoreError: an atomic block is open.
        """
        if self._writer.queued:
            # Memory holds the block's unwritten changes: others' entries would replay
            # on top of them, in an order the log never had.
            msg = "refresh() inside an atomic() block; refresh before the block begins"
            raise StoreError(self._location, msg)
        snapshot = self._read(after=self._writer.head, with_state=True)
        replayed = self.live.replay(snapshot.entries(), self._seen)
        changed = snapshot.versions != self._versions
        self._versions = snapshot.versions
        state: dict[str, JsonValue] | None = snapshot.state if changed or replayed else None
        return Refreshed(replayed, state)

    def begin_block(self) -> None:
        """Open an atomic scope; the outermost one marks where it began."""
        if not self._writer.queued:
            self.live.mark()
        self._writer.open_scope()

    def end_block(
        self, *, closed: bool, quiet: bool, rebased: Callable[[Rebased], None] | None
    ) -> None:
        """End one scope; the outermost writes, rebased or taken back when it can be.

        Raises:
            StoreError: the block was refused (see `PostgresStore.atomic`).
        """
        live = self.live
        movable = live.movable(self._writer.pending)
        reports: list[Rebased] = []
        rebase = None
        if movable and rebased is not None:
            rebase = functools.partial(self._rebase, reports)
        try:
            ended = self._writer.close_scope(
                closed=closed, quiet=quiet, undo=live.rewind if movable else None, rebase=rebase
            )
        finally:
            if not self._writer.queued:
                live.unmark()
        if ended and reports and rebased is not None:
            dropped = tuple(item for report in reports for item in report.dropped)
            rebased(Rebased(sum(report.entries for report in reports), dropped))

    def _rebase(self, reports: list[Rebased], queued: list[Entry]) -> list[Entry]:
        """Bring the newer entries in under the block, and its batches again on top."""
        newer = self._read(after=self._writer.head, with_state=False)  # nothing moved yet
        try:
            kept, report = self.live.rebase(newer.entries(), queued, self._seen)
        except BaseException as exc:
            # Replayed partway: memory is between two entries of the log.
            self._writer.failed = f"rebasing a block over newer entries failed ({exc!r})"
            raise
        reports.append(report)
        return kept

    def _seen(self, seq: int) -> None:
        self._writer.head = seq
