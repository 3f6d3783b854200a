"""The manager's own state: one record (`ManagerState`) and its keeper (`StateKeeper`).

The journal (every ingested batch and every applied proposal, in order) is written by the
graphs a `SessionStore` restores, so nothing here records edits. What is kept here is the
manager's own state, which the journal cannot rebuild: trigger and guard state, counters,
the calibration factor, firings not handled yet, the nodes already scanned for secrets,
what the model has not been sent yet, how many units each renderer keeps leaving out
(`Renderer.kept_drops`), the pins of what `context_expand` restored and the usage the
provider reported for the session's calls. Each key is
written only when its value changed, so a turn that changes nothing costs no write.

What was not sent is kept as `sent`, the number of pristine nodes the last request
covered: the nodes ingested after it are the unsent ones (`ManagerState.unsent`), and
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
- `sent` and `renderers`: what the last request carried and left out. The last
  render is the last request, whichever worker made it, so its write is the one to keep.
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
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import JsonValue

from context_graph.errors import StoreConflictError, StoreCorruptError, StoreError
from context_graph.graph.context_graph import ContextGraph
from context_graph.render import RenderResult
from context_graph.tokens.calibration import Calibrator
from context_graph.tokens.usage import UsageTotals
from orchestrator.compaction.guards import GuardState
from orchestrator.compaction.renderers import RendererCache
from orchestrator.compaction.triggers import Firing, TriggerState
from orchestrator.persistence.protocol import Rebased, SessionStore
from orchestrator.policy.resolved import check_format

__all__ = ["ManagerState", "StateKeeper"]


@dataclass(slots=True)
class ManagerState:
    """Everything a `ContextManager` changes as it goes, in one place.

    The manager makes it and hands it to its collaborators; who changes each field is
    named below, and `StateKeeper.load` fills them all when a session resumes.
    """

    triggers: TriggerState = field(default_factory=TriggerState)
    """The trigger evaluator's state (the compactor; boundaries and manual requests)."""
    guards: GuardState = field(default_factory=GuardState)
    """The loop guards' state (the compactor, after each pipeline)."""
    calibrator: Calibrator = field(default_factory=Calibrator)
    """How the provider counts, learned from `report_usage` (shared by the renderers)."""
    pending: list[Firing] = field(default_factory=list)
    """Firings seen that no pipeline run has handled yet (the compactor)."""
    applied: int = 0
    """Proposals applied since the session began (the compactor, the redaction screen)."""
    rejected: int = 0
    """Proposals refused, plus processor runs that failed (the compactor)."""
    scanned: set[str] = field(default_factory=set)
    """Node ids already scanned for secrets (the redaction screen)."""
    unsent: set[str] = field(default_factory=set)
    """Nodes ingested since the last request was rendered: the model has not seen them
    (the manager: ingest adds, a render clears)."""
    pins: dict[str, int] = field(default_factory=dict)
    """Nodes `context_expand` brought back, each with the number of user turns at which
    compaction may take it again (the agent tools; `held` reads them)."""
    usage: UsageTotals = field(default_factory=UsageTotals)
    """The provider's usage of the session's calls, summed (the manager's `report_usage`)."""
    last: RenderResult | None = None
    """The last rendered request (the manager; not stored)."""
    last_timed_out: bool = False
    """A time limit cut short the compaction of the last render (the manager; not stored)."""

    def held(self, turns: int) -> frozenset[str]:
        """The pinned restored nodes at `turns` user turns; the expired pins are let go."""
        expired = [node_id for node_id, until in self.pins.items() if turns >= until]
        for node_id in expired:
            del self.pins[node_id]
        return frozenset(self.pins)


class StateKeeper:
    """Writes a `ManagerState` to its session store, each key only when it changed.

    Without a store, or once it is closed, every call here does nothing.

    Args:
        store: Where the session is kept; `None` for a manager in memory.
        state: The record it writes.
        raw: The pristine record (what was sent is counted in its nodes).
        renderers: The renderers whose kept drops are state too.
    """

    def __init__(
        self,
        store: SessionStore | None,
        state: ManagerState,
        raw: ContextGraph,
        renderers: RendererCache,
    ) -> None:
        self._store = store
        self._state = state
        self._raw = raw
        self._renderers = renderers
        self._saved: dict[str, str] = {}

    @property
    def store(self) -> SessionStore | None:
        """The store written to."""
        return self._store

    def values(self) -> dict[str, JsonValue]:
        """The state as the store keeps it: every key with its value now."""
        state = self._state
        return {
            "triggers": state.triggers.model_dump(mode="json"),
            "guards": state.guards.model_dump(mode="json"),
            "counters": {"applied": state.applied, "rejected": state.rejected},
            "calibration": {
                "factor": state.calibrator.factor,
                "observations": state.calibrator.observations,
            },
            "pending": [firing.model_dump(mode="json") for firing in state.pending],
            "scanned": list[JsonValue](sorted(state.scanned)),
            "sent": {"nodes": self._pristine_count() - len(state.unsent)},
            "renderers": {fmt: kept for fmt, kept in self._renderers.kept_drops().items()},
            # Written once there is a pin, and from then on (also empty, once released).
            **(
                {"pins": dict[str, JsonValue](sorted(state.pins.items()))}
                if state.pins or "pins" in self._saved
                else {}
            ),
            # Written once a call's usage was recorded: a session that never reports one
            # keeps the keys it always had.
            **(
                {"usage": state.usage.model_dump(mode="json")}
                if state.usage.calls or "usage" in self._saved
                else {}
            ),
        }

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
        brings the newer entries into the graphs and the newer state into the record,
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
        """Fill the record from a restored session's state (missing keys: defaults).

        Called once, before anything reads the record; the values count as written.

        Raises:
            StoreCorruptError: a value does not have the shape it was saved with.
        """
        try:
            self._apply(values)
        except (TypeError, ValueError, KeyError) as exc:
            where = "memory" if self._store is None else self._store.location
            raise StoreCorruptError(where, f"state does not load: {exc}") from exc
        self._saved = {key: json.dumps(v, sort_keys=True) for key, v in values.items()}

    def _apply(self, values: Mapping[str, Any]) -> None:
        state = self._state
        if "triggers" in values:
            state.triggers = TriggerState.model_validate(values["triggers"])
        if "guards" in values:
            state.guards = GuardState.model_validate(values["guards"])
        if "counters" in values:
            state.applied = int(values["counters"]["applied"])
            state.rejected = int(values["counters"]["rejected"])
        if "calibration" in values:
            calibration = values["calibration"]
            state.calibrator.resume(calibration["factor"], calibration["observations"])
        if "pending" in values:
            state.pending = [Firing.model_validate(item) for item in values["pending"]]
        if "scanned" in values:
            state.scanned = {str(node_id) for node_id in values["scanned"]}
        if "sent" in values:
            sent = int(values["sent"]["nodes"])
            if not 0 <= sent <= self._pristine_count():
                msg = f"`sent` is {sent}, but the record has {self._pristine_count()} nodes"
                raise ValueError(msg)
            derived = set(self._raw.derived())
            pristine = [node.id for node in self._raw if node.id not in derived]
            state.unsent = set(pristine[sent:])
        if "pins" in values:
            state.pins = {str(node_id): int(until) for node_id, until in values["pins"].items()}
        if "usage" in values:
            state.usage = UsageTotals.model_validate(values["usage"])
        if "renderers" in values:
            for fmt, kept in dict(values["renderers"]).items():
                self._renderers.get(check_format(fmt, "renderers")).keep_drops(kept)

    def _pristine_count(self) -> int:
        return len(self._raw) - len(self._raw.derived())
