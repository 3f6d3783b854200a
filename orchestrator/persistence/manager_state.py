"""The manager's state in its session store: the owners' protocol and the keeper.

The journal (every ingested batch and every applied proposal, in order) is written by the
graphs a `SessionStore` restores, so nothing here records edits. What is kept here is the
manager's own state, which the journal cannot rebuild. Each collaborator keeps the part it
changes and hands it over as JSON through `StateOwner` (`state()` / `load()`); the
`StateKeeper` is given the owners, gathers their keys and writes each key only when its
value changed, so a turn that changes nothing costs no write:

- the `Compactor`: `triggers`, `guards`, `pending` (the firings no run handled yet);
- the `ProposalCounters`: `counters` (applied and rejected proposals);
- the `RendererCache`: `calibration` (how the provider counts), `renderers` (how many
  units each renderer keeps leaving out, `Renderer.kept_drops`) and, for a session with
  cache marks, `cache_marks` (the units of each format's last request, where the next
  request's marks go: `Renderer.previous_units`);
- the `SecretScreen`: `scanned` (the nodes already scanned for secrets);
- the `CallLedger`: `sent` and `usage` (what the model was sent, what the provider used);
- the `Pins` of `context_expand`: `pins`.

What was not sent is kept as `sent`, the number of pristine nodes the last request
covered: the nodes ingested after it are the unsent ones (`CallLedger.unsent`), and
since every ingested batch is journaled, that holds after a crash too, however many
batches came in since the state was last written.

Where several workers write one session (`PostgresStore`), a state key is kept as its
last write, with no check of the version the writer read: a write never raises
`StoreConflictError`, so a render or a usage report does not fail because another
worker rendered, and `refresh()` brings in what the others wrote (the stored state
replacing this worker's). That is what each key wants:

- `triggers`, `pending`, `guards`, `counters`, `pins`: written right after an ingest, an
  applied restore or a compaction run. Each of those is an append, which lands only
  from a view of the log no other worker moved on (else it raises before any state is
  written), and a run is written in one transaction with its state, under the lease;
  so they are written from the newest state but for a race between two workers'
  turns, where the later turn's state stands (its triggers saw the later log).
  `counters` are figures for `stats()`; another worker's count in such a race is lost
  from them and from nothing else.
- `sent`, `renderers` and `cache_marks`: what the last request carried and left out.
  The last render is the last request, whichever worker made it, so its write is the one
  to keep (and the provider's cache holds that request: the next worker's marks compare
  with it).
- `calibration`: how the provider counts tokens, learned from `report_usage`; any
  worker's estimate is one, and the last is the freshest.
- `scanned`: node ids already scanned for secrets; one lost is scanned again, and a
  scan of a node already redacted finds nothing to change.
- `usage`: the session's usage totals (`report_usage` given a call's `Usage`), written
  once a call's usage was recorded. Figures for `stats()` like `counters`: in a race
  between two workers' reports, the later write stands and the other call is lost
  from the totals.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Protocol

from pydantic import JsonValue

from context_graph.errors import StoreConflictError, StoreCorruptError, StoreError
from orchestrator.persistence.protocol import Rebased, SessionStore

__all__ = ["StateKeeper", "StateOwner"]


class StateOwner(Protocol):
    """A collaborator that keeps part of the manager's state, handed over as JSON.

    Each owner has keys of its own; no two owners hand over the same key.
    """

    def state(self) -> dict[str, JsonValue]:
        """Its keys with their values now, as the store keeps them.

        A key may be left out until it has something to keep (`pins`, `usage`): a
        session that never used it keeps the keys it always had.
        """

    def read(self, values: Mapping[str, JsonValue]) -> Callable[[], None]:
        """Check its own keys of a stored state, and return what takes them.

        Nothing changes until the returned function is called (so that a state whose
        value for another owner is bad changes no owner); a key missing leaves its value
        as it is.

        Raises:
            TypeError, ValueError, KeyError, AttributeError: a value does not have the
                shape it was saved with.
        """


class StateKeeper:
    """Writes its owners' state to the session store, each key only when it changed.

    Without a store, or once it is closed, `save`, `atomic`, `leased` and `close` do
    nothing.

    The owners are handed over after the keeper is made (`track`): they write their
    state through it (`save`, `atomic`), so they are made with it.

    Args:
        store: Where the session is kept; `None` for a manager in memory.
    """

    def __init__(self, store: SessionStore | None) -> None:
        self._store = store
        self._owners: list[StateOwner] = []
        self._saved: dict[str, str] = {}

    def track(self, owners: Sequence[StateOwner]) -> None:
        """Gather the state of `owners` too (after those tracked already, in this order)."""
        self._owners.extend(owners)

    @property
    def store(self) -> SessionStore | None:
        """The store written to."""
        return self._store

    def values(self) -> dict[str, JsonValue]:
        """The state as the store keeps it: every owner's keys with their values now.

        Raises:
            RuntimeError: two owners hand over the same key (a wiring mistake).
        """
        values: dict[str, JsonValue] = {}
        for owner in self._owners:
            part = owner.state()
            shared = values.keys() & part.keys()
            if shared:
                msg = f"state keys {sorted(shared)} are handed over by two owners"
                raise RuntimeError(msg)
            values.update(part)
        return values

    def save(self) -> None:
        """Write every state key whose value changed since it was last written.

        The keys are written in one transaction: they depend on each other (a trigger
        that fired and the firing it left pending), so a crash between two of them
        would reopen a state no process was ever in.
        """
        store = self._store
        if store is None or store.closed:
            return
        changed: dict[str, JsonValue] = {}
        texts: dict[str, str] = {}
        for key, value in self.values().items():
            text = json.dumps(value, sort_keys=True)
            if self._saved.get(key) != text:
                changed[key], texts[key] = value, text
        if changed:
            store.put_states(changed)
            self._saved.update(texts)

    @contextlib.contextmanager
    def atomic(self, rebased: Callable[[Rebased], None] | None = None) -> Iterator[None]:
        """One transaction of the store for everything written inside (`SessionStore.atomic`).

        Args:
            rebased: Told what a block that raced other writers was rebased over.
        """
        store = self._store
        if store is None or store.closed:
            yield
            return
        try:
            with store.atomic(rebased=rebased):
                yield
        except StoreError:
            # What the block saved may not have been kept: write every key next time.
            self._saved = {}
            raise

    @contextlib.contextmanager
    def leased(self, ttl: float) -> Iterator[str | None]:
        """Hold the store's compaction lease for the block (`SessionStore.lease`).

        Yields:
            `None` when this worker holds it (or there is no store), else why not:
            another worker holds it, and compacts the session meanwhile.
        """
        store = self._store
        if store is None or store.closed:
            yield None
            return
        with contextlib.ExitStack() as stack:
            held: str | None = None
            try:
                stack.enter_context(store.lease(ttl=ttl))
            except StoreConflictError as exc:
                held = str(exc)
            yield held

    def close(self) -> None:
        """Save the state and close the store. Closing twice is harmless.

        The store is closed (and its file given back) even when the save fails.

        Raises:
            StoreError: the state could not be saved (after an earlier failed write, or
                now); the store is closed all the same, so the file can be reopened.
        """
        store = self._store
        if store is None or store.closed:
            return
        try:
            self.save()
        finally:
            store.close()

    def refresh(self) -> int:
        """Replay what other writers appended to the store, and load its state if it moved.

        With a store several workers write (`PostgresStore`), an ingest or a compaction
        made from an older view raises `StoreConflictError` and changes nothing; this
        brings the newer entries into the graphs and the newer state to its owners,
        so the caller can retry. The stored state wins over this worker's unsaved one.

        Returns:
            How many entries were replayed (0 without a store).

        Raises:
            StoreCorruptError: a new entry or the state does not load.
            StoreError: the store is closed, or memory is ahead of it (reopen).
        """
        store = self._store
        if store is None:
            return 0
        refreshed = store.refresh()
        if refreshed.state is not None:
            self.load(refreshed.state)
        return refreshed.entries

    def load(self, values: Mapping[str, JsonValue]) -> None:
        """Hand a restored session's state to the owners (a key missing keeps its value).

        Called once before anything reads the state, and by `refresh`; the values count
        as written. Every owner checks its keys before any takes its own: a state that
        does not load changes nothing.

        Raises:
            StoreCorruptError: a value does not have the shape it was saved with.
        """
        try:
            takes = [owner.read(values) for owner in self._owners]
        except (TypeError, ValueError, KeyError, AttributeError) as exc:
            where = "memory" if self._store is None else self._store.location
            raise StoreCorruptError(where, f"state does not load: {exc}") from exc
        for take in takes:
            take()
        self._saved = {key: json.dumps(v, sort_keys=True) for key, v in values.items()}
