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
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from pydantic import BaseModel, ConfigDict

from context_graph.graph.context_graph import ContextGraph
from context_graph.graph.node_tokens import NodeTokenCache
from context_graph.graph.nodes import Node, ToolCallNode
from context_graph.graph.units import Unit
from orchestrator.working.invariants import check_proposal, enforce
from orchestrator.working.view import WorkingView
from processors.base import Abstract, Drop, Edit, Proposal, Replace

__all__ = ["AuditEntry", "Overlay", "WorkingGraph", "WorkingView"]


def _frozen_map() -> Mapping[str, Any]:
    return MappingProxyType({})


@dataclass(frozen=True, slots=True)
class Overlay:
    """What the applied edits did, as immutable maps from node ids.

    Attributes:
        derived: Every node an applied edit added, by id (kept after it is itself
            replaced, for provenance).
        replaced_by: Node id -> the id of the node that replaced it.
        abstracted_by: Node id -> the id of the summary that abstracts it.
        dropped: Ids of nodes that left the view with nothing in their place.
        left_at: Node id -> the working version at which it left the view.
        applied: How many proposals were applied.
    """

    derived: Mapping[str, Node] = field(default_factory=_frozen_map)
    replaced_by: Mapping[str, str] = field(default_factory=_frozen_map)
    abstracted_by: Mapping[str, str] = field(default_factory=_frozen_map)
    dropped: frozenset[str] = frozenset()
    left_at: Mapping[str, int] = field(default_factory=_frozen_map)
    applied: int = 0

    def resolve(self, node_id: str) -> tuple[str, bool]:
        """The node that stands for `node_id` now, and whether a summary is on the way."""
        via_summary = False
        while True:
            successor = self.replaced_by.get(node_id)
            if successor is None:
                successor = self.abstracted_by.get(node_id)
                if successor is None:
                    return node_id, via_summary
                via_summary = True
            node_id = successor

    def with_edits(self, edits: Sequence[Edit], version: int) -> Overlay:
        """A new overlay with `edits` applied at working version `version` (unchecked)."""
        derived = dict(self.derived)
        replaced_by = dict(self.replaced_by)
        abstracted_by = dict(self.abstracted_by)
        dropped = set(self.dropped)
        left_at = dict(self.left_at)
        for edit in edits:
            if isinstance(edit, Replace):
                derived[edit.replacement.id] = edit.replacement
                replaced_by[edit.target] = edit.replacement.id
                left_at[edit.target] = version
            elif isinstance(edit, Abstract):
                derived[edit.summary.id] = edit.summary
                for target in edit.targets:
                    abstracted_by[target] = edit.summary.id
                    left_at[target] = version
            else:
                dropped.update(edit.targets)
                left_at.update(dict.fromkeys(edit.targets, version))
        return Overlay(
            derived=MappingProxyType(derived),
            replaced_by=MappingProxyType(replaced_by),
            abstracted_by=MappingProxyType(abstracted_by),
            dropped=frozenset(dropped),
            left_at=MappingProxyType(left_at),
            applied=self.applied + 1,
        )


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
    """Content tokens removed minus content tokens added (checked, so always positive)."""
    note: str = ""
    """The proposal's own explanation."""
    version: int
    """The working graph's version right after this proposal was applied."""


@dataclass(frozen=True, slots=True)
class _State:
    """Everything that one apply swaps, behind one reference."""

    view: WorkingView
    audit: tuple[AuditEntry, ...]


def _entry(proposal: Proposal, version: int, now: float) -> AuditEntry:
    removed: list[str] = []
    added: list[str] = []
    for edit in proposal.edits:
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


class WorkingGraph:
    """The working projection of a pristine graph; renders like a graph (`RenderSource`).

    Args:
        pristine: The raw record. It is read, never written: derived nodes live here.
        clock: Seconds since the epoch, for the audit log; injectable for tests.
    """

    def __init__(self, pristine: ContextGraph, *, clock: Callable[[], float] = time.time) -> None:
        self._pristine = pristine
        self._clock = clock
        self._lock = threading.Lock()
        self._interned: dict[Unit, Unit] = {}
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
            InvariantViolation: one proposal breaks a rule; nothing changed.
        """
        batch = tuple(proposals)
        with self._lock:
            state = self._state
            view = state.view
            now = self._clock()
            entries: list[AuditEntry] = []
            for proposal in batch:
                view = enforce(proposal, view, protected=protected)
                entries.append(_entry(proposal, view.version, now))
            self._swap(_State(view, (*state.audit, *entries)), batch, tuple(entries))
        return tuple(entries)

    def _swap(
        self, state: _State, proposals: tuple[Proposal, ...], entries: tuple[AuditEntry, ...]
    ) -> None:
        """Make `state` (checked: `proposals` applied, `entries` their audit) the current one.

        The one place the state moves on, so that a subclass can make the swap and a
        record of it one step (the session store's journaled working graph).
        """
        self._state = state

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
