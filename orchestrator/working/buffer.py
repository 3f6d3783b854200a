"""`WorkingGraph`: the current projection of the pristine record, double-buffered.

The pristine `ContextGraph` is the raw record: append-only, never edited here. The
working graph is what the model is shown: the pristine graph read through an overlay of
applied edits (see `orchestrator.working.view` for how the view's units are formed).
Events ingested into the pristine graph appear in the view at once.

Processors read `snapshot()`, a frozen `WorkingView` that keeps reading the same however
the session moves on. `apply(proposal)` checks the proposal against the current view
(`orchestrator.working.invariants`), builds the next state beside the current one and swaps a
single reference: a reader sees the old state or the new one, never half of it, and a
rejected proposal changes nothing.

```python
working = WorkingGraph(graph)
proposal = await run_processor(masker, targets, ProcessorContext(
    graph=working.snapshot(), tokens=working.token_cache))
working.apply(proposal)
Renderer().render(working)
```
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Collection, Iterable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import Protocol

from pydantic import BaseModel, ConfigDict

from context_graph.graph.context_graph import ContextGraph
from context_graph.graph.node_tokens import NodeTokenCache
from context_graph.graph.nodes import Node, ToolCallNode
from context_graph.graph.units import Unit
from orchestrator.working.invariants import check_proposal, enforce
from orchestrator.working.overlay import Overlay
from orchestrator.working.view import WorkingView
from processors.base import Abstract, Drop, Proposal, Replace, Restore

__all__ = ["ApplyJournal", "AuditEntry", "WorkingGraph"]

#: Interned units kept past twice the view's before a prune (a small view prunes rarely).
_INTERNED_SLACK = 64


class AuditEntry(BaseModel):
    """One applied proposal, as the audit log records it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    processor: str
    """The name of the processor that made the proposal."""
    time: float
    """When it was applied, in seconds since the epoch (by the working graph's clock)."""
    removed: tuple[str, ...]
    """Ids of the nodes that left the view (replaced, abstracted or dropped), in order."""
    added: tuple[str, ...]
    """Ids of the nodes that entered it (replacements and summaries), in order."""
    tokens_saved: int
    """Content tokens removed minus content tokens added (checked: positive, but for a
    `restore` proposal, which brings content back)."""
    note: str = ""
    """The proposal's own explanation."""
    version: int
    """The working graph's version right after this proposal was applied."""


@dataclass(frozen=True, slots=True)
class _State:
    """Everything that one apply swaps, behind one reference."""

    view: WorkingView
    audit: tuple[AuditEntry, ...]


def _entry(proposal: Proposal, before: WorkingView, version: int, now: float) -> AuditEntry:
    removed: list[str] = []
    added: list[str] = []
    for edit in proposal.edits:
        if isinstance(edit, Restore):
            undone, bases = before.overlay.undone_by(edit.target, whole=edit.whole)
            removed.extend(i for i in undone if before.is_current(i))
            added.extend(bases)  # lineage order: transcript order
            continue
        if isinstance(edit, Replace):
            removed.append(edit.target)
            added.append(edit.replacement.id)
        elif isinstance(edit, Abstract):
            removed.extend(edit.targets)
            added.append(edit.summary.id)
        elif isinstance(edit, Drop):
            removed.extend(edit.targets)
    return AuditEntry(
        processor=proposal.processor,
        time=now,
        removed=tuple(removed),
        added=tuple(added),
        tokens_saved=proposal.tokens_saved,
        note=proposal.note,
        version=version,
    )


class ApplyJournal(Protocol):
    """Records each batch applied to a working graph, as one step with its swap.

    The contract a journal keeps (a writable session store's, say):

    - `applying()` is entered around one whole `apply_batch`, before any proposal is
      checked. Entering refuses, raising `StoreError` before anything is checked or
      changed, when nothing may be written now (a closed or failed store). It takes the
      journal's lock, held until the block ends, so that applies (and the ingests of a
      graph sharing the journal) are written in the order they happen, each checked
      against the state the ones before it left.
    - `swapping(proposals, audit)` is entered inside it, right before the swap, with the
      checked proposals and the audit entries they got (at least one). Entering
      refuses when the batch cannot be written (`InvariantViolation` when it could not
      be read back, `StoreError` when the write fails), and the working state is then
      as it was. The swap happens inside the block; when the block ends the write is
      kept, and if keeping it fails it raises, and every later apply is refused.
    """

    def applying(self) -> AbstractContextManager[None]:
        """Hold the journal's order around one apply; refuse it if nothing may be written."""

    def swapping(
        self, proposals: tuple[Proposal, ...], audit: tuple[AuditEntry, ...]
    ) -> AbstractContextManager[None]:
        """Write one applied batch around its swap, which the working graph makes inside."""


class WorkingGraph:
    """The working projection of a pristine graph; renders like a graph (`RenderSource`).

    Args:
        pristine: The raw record. It is read, never written: derived nodes live here.
        clock: Seconds since the epoch, for the audit log; injectable for tests.
        journal: Where each applied proposal or batch is recorded, as one step with its
            swap (a session store's journal); `None` keeps the edits in memory only.
    """

    def __init__(
        self,
        pristine: ContextGraph,
        *,
        clock: Callable[[], float] = time.time,
        journal: ApplyJournal | None = None,
    ) -> None:
        self._pristine = pristine
        self._clock = clock
        self._journal = journal
        self._lock = threading.Lock()
        self._interned: dict[Unit, Unit] = {}
        # How many interned units are kept before the next prune: twice the current
        # view's units at the last one (counting them projects the view, so not at every
        # apply).
        self._interned_room = _INTERNED_SLACK
        self._state = _State(WorkingView(pristine, Overlay(), interned=self._interned), ())

    # -- state -------------------------------------------------------------------------

    @property
    def pristine(self) -> ContextGraph:
        """The pristine record underneath."""
        return self._pristine

    @property
    def view(self) -> WorkingView:
        """The current view; live: it follows the pristine graph until the next apply."""
        return self._state.view

    def snapshot(self) -> WorkingView:
        """A frozen view of the working state now, for processors to read.

        It keeps its version and reads the same while events are ingested and
        proposals are applied; proposals made from it carry `base_version=view.version`.
        """
        return self._state.view.freeze()

    def audit(self) -> tuple[AuditEntry, ...]:
        """Every applied proposal, oldest first."""
        return self._state.audit

    def detached(self) -> WorkingGraph:
        """A copy of the state now that journals nothing: its edits stay in the copy.

        It reads the same pristine record. A render that may not write (another worker
        compacts the shared session) fits a request in it and writes nothing.
        """
        copy = WorkingGraph(self._pristine, clock=self._clock)
        copy._interned = self._interned
        copy._state = self._state
        return copy

    # -- edits -------------------------------------------------------------------------

    def check(self, proposal: Proposal, *, protected: Collection[str] = ()) -> list[str]:
        """The rules `proposal` would break if applied now (empty: it would be applied)."""
        return check_proposal(proposal, self._state.view, protected=protected)

    def apply(self, proposal: Proposal, *, protected: Collection[str] = ()) -> AuditEntry:
        """Check `proposal` against the current view and apply it whole, in one swap.

        Args:
            proposal: The edits, with the tokens they save.
            protected: Node ids that must not be edited besides pinned ones.

        Raises:
            InvariantViolation: the proposal breaks a rule (all are named); nothing
                changed.
        """
        return self.apply_batch((proposal,), protected=protected)[0]

    def apply_batch(
        self, proposals: Iterable[Proposal], *, protected: Collection[str] = ()
    ) -> tuple[AuditEntry, ...]:
        """Apply several proposals as one swap: all of them, or none.

        Each proposal is checked against the state the ones before it leave, so a
        pipeline's stages can land together (the rendered prefix changes once).

        Raises:
            InvariantViolation: one proposal breaks a rule, or the journal could not read
                the batch back; nothing changed.
            StoreError: the journal cannot be written (checked before anything else).
        """
        batch = tuple(proposals)
        journal = self._journal
        with nullcontext() if journal is None else journal.applying(), self._lock:
            state = self._state
            view = state.view
            now = self._clock()
            entries: list[AuditEntry] = []
            for proposal in batch:
                after = enforce(proposal, view, protected=protected)
                entries.append(_entry(proposal, view, after.version, now))
                view = after
            self._swap(_State(view, (*state.audit, *entries)), batch, tuple(entries))
        return tuple(entries)

    def _swap(
        self, state: _State, proposals: tuple[Proposal, ...], entries: tuple[AuditEntry, ...]
    ) -> None:
        """Make `state` (checked: `proposals` applied, `entries` their audit) the current one.

        The one place the state moves on: with a journal, the swap and its entry are one
        step (an apply that applied nothing has no entry).
        """
        journal = self._journal
        if journal is None or not entries:
            self._state = state
        else:
            with journal.swapping(proposals, entries):
                self._state = state
        self._prune_interned()

    def _prune_interned(self) -> None:
        """Forget the interned units the current view does not hand out, once they pile up.

        Only here, where the view is the one the renderer reads: a view made to check a
        proposal, or a snapshot's, lacks units the current view still hands out, and
        pruning to its units made the next view build equal units anew, which the
        renderer then rendered again (in the property test of
        tests/orchestrator/working/test_projection_chunks.py the loss came and went with
        the garbage collector's thresholds).
        """
        interned = self._interned
        if len(interned) <= self._interned_room:
            return
        units = self._state.view.units()
        keep = [unit for unit in units if interned.get(unit) is unit]
        interned.clear()
        interned.update((unit, unit) for unit in keep)
        self._interned_room = 2 * len(units) + _INTERNED_SLACK

    # -- what the renderer reads (RenderSource) ----------------------------------------

    @property
    def version(self) -> int:
        """Changes with every applied proposal and every pristine edit."""
        return self._state.view.version

    @property
    def token_cache(self) -> NodeTokenCache:
        """The pristine graph's token cache."""
        return self._pristine.token_cache

    def units(self) -> tuple[Unit, ...]:
        """The current view's interaction units, in order."""
        return self._state.view.units()

    def __getitem__(self, node_id: str) -> Node:
        return self._state.view[node_id]

    def __contains__(self, node_id: object) -> bool:
        return node_id in self._state.view

    def answer_to(self, call_node_id: str) -> Node | None:
        """The current node answering a call node, or `None`."""
        return self._state.view.answer_to(call_node_id)

    def first_call_with_id(self, tool_call_id: str) -> str | None:
        """The id standing for the first call that used `tool_call_id`, if any."""
        return self._state.view.first_call_with_id(tool_call_id)

    # -- queries -----------------------------------------------------------------------

    def call_of(self, answer_node_id: str) -> ToolCallNode | None:
        """The current call node an answer node answers, or `None`."""
        return self._state.view.call_of(answer_node_id)

    def unit_of(self, node_id: str) -> Unit:
        """The current unit holding `node_id`."""
        return self._state.view.unit_of(node_id)

    def is_current(self, node_id: str) -> bool:
        """Whether `node_id` is in the current view."""
        return self._state.view.is_current(node_id)

    def current_ids(self) -> tuple[str, ...]:
        """The ids of the current view's nodes, in order."""
        return self._state.view.current_ids()

    @property
    def total_tokens(self) -> int:
        """The content tokens of every node in the current view."""
        return self._state.view.total_tokens

    def roots(self, node_id: str) -> tuple[str, ...]:
        """The pristine node ids `node_id` stands for, transitively, in transcript order."""
        return self._state.view.roots(node_id)

    def expand(self, node_id: str) -> tuple[Node, ...]:
        """The original pristine nodes behind any node, in transcript order."""
        return self._state.view.expand(node_id)
