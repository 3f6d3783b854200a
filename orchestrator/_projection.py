"""The working view: a pristine graph read through an overlay of applied edits.

The pristine `ContextGraph` is never written to; what applied edits did lives in an
immutable `Overlay` (`orchestrator.buffer`). A `WorkingView` pairs the two and answers
every query by reading the pristine graph through the overlay, so an event ingested
after an edit is in the view with nothing to sync.

The view's units, for each pristine unit in order:

- each member is followed through the overlay to the node that stands for it now (a
  replacement of a replacement ..., a summary, or nothing when dropped);
- members that stand as replacements keep their unit: the pristine unit with each node
  swapped for its current replacement, headed by the current head;
- members abstracted into a summary appear once, as a unit of kind `summary` holding
  only the summary node, at the place of the first unit the summary abstracts;
- a unit whose members were all dropped is left out.

A member that joined its unit after the unit was dropped or abstracted (the late result
of a call that was open then) stands as a unit of its own, which the renderer sends as
plain text: nothing new is lost, and no result appears without its call.

Units that an imported compaction in the pristine record covers are left out the way
the renderer leaves them out, judged by their pristine ids.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from context_graph.errors import UnknownNodeError
from context_graph.graph import ContextGraph, Unit
from context_graph.nodes import AnswerNode, Node, ToolCallNode
from context_graph.tokens import NodeTokenCache
from orchestrator._figures import ViewFigures, figures_counted
from processors.base import GraphView, Proposal, Replace

if TYPE_CHECKING:
    # Only for annotations: the buffer module builds overlays and imports this one.
    from orchestrator.buffer import Overlay

__all__ = ["WorkingView"]


def _lineage(node: Node) -> tuple[str, ...]:
    return (*((node.replaces,) if node.replaces is not None else ()), *node.abstracts)


def _targets(proposal: Proposal, overlay: Overlay) -> frozenset[str] | None:
    """The ids `proposal`'s edits target, applied over `overlay`.

    `None` when one is a derived node that something already stands for (possible only
    unchecked): projections record the pristine members and the nodes standing for
    them, not the nodes in between.
    """
    targets: set[str] = set()
    for edit in proposal.edits:
        if isinstance(edit, Replace):
            targets.add(edit.target)
        else:
            targets.update(edit.targets)
    for target in targets:
        if target in overlay.derived and (
            target in overlay.replaced_by or target in overlay.abstracted_by
        ):
            return None
    return frozenset(targets)


@dataclass(frozen=True, slots=True)
class _Frozen:
    """Where a snapshot stopped: transcript length, version and user turns then."""

    limit: int
    version: int
    turns: int


@dataclass(frozen=True, slots=True)
class _Segment:
    """What one pristine unit with a member that left the view projects to."""

    unit: Unit
    out: tuple[Unit, ...]
    # Its members and the nodes standing for them now (`Overlay.resolve`): while the
    # edits since target none of them, each member stands as it did.
    reached: frozenset[str]
    # The summaries first reached here, so placed here.
    emitted: tuple[str, ...]


@dataclass(slots=True)
class _Projection:
    units: list[Unit]
    unit_of: dict[str, Unit]
    # Pristine head -> index in `units`, for the pristine units that stand unchanged.
    verbatim: dict[str, int]
    # `ContextGraph.unit_mark` when the units were last brought up to date.
    mark: int
    # Heads of the pristine units a pristine summary covers (`WorkingView._hidden`).
    hidden: frozenset[str]
    # Which pristine units `hidden` was judged over (`WorkingView._pristine_key`).
    key: int
    # Pristine head -> its segment, for the pristine units that do not stand unchanged.
    # Never changed once built: a later projection reuses the segments it can.
    segments: dict[str, _Segment]
    # Handed out by `units()`; `None` after the list changed.
    frozen_units: tuple[Unit, ...] | None = None
    # Counted on first use, then kept up to date with appends: triggers read them
    # after every ingest.
    figures: ViewFigures | None = None
    # A snapshot reads this projection too: copy it before changing it.
    shared: bool = False

    def copy(self) -> _Projection:
        return _Projection(
            list(self.units),
            dict(self.unit_of),
            dict(self.verbatim),
            self.mark,
            self.hidden,
            self.key,
            self.segments,
            self.frozen_units,
            None if self.figures is None else self.figures.copy(),
        )


class WorkingView(GraphView):
    """The working graph as processors and the renderer read it; a `GraphView`.

    `units()`, `unit_of`, `answer_to`, `call_of`, `first_call_with_id`, `is_current`,
    `current_ids` and `by_path` describe the current view. Lookups (`view[id]`, `in`,
    `tokens`) reach every node the view can explain: pristine nodes (also those compacted
    away) and derived ones. `transcript()`, `turns`, `len()` and the edges (`targets`,
    `sources`) are the pristine record's, plus the overlay's `derived_from` lineage.

    A live view (held by `WorkingGraph`) follows the pristine graph as it grows; a frozen
    one (`WorkingGraph.snapshot()`) sees only the transcript as it was when frozen, so
    it reads the same however the session and the working graph move on.
    """

    __slots__ = ("_basis", "_cached", "_frozen", "_interned", "_overlay")

    def __init__(
        self,
        pristine: ContextGraph,
        overlay: Overlay,
        *,
        interned: dict[Unit, Unit] | None = None,
        _frozen: _Frozen | None = None,
        _basis: tuple[_Projection, frozenset[str]] | None = None,
    ) -> None:
        super().__init__(pristine)
        self._overlay = overlay
        self._interned = interned
        self._frozen = _frozen
        self._cached: tuple[int, _Projection] | None = None
        # A projection of the view this one was made from, and the ids the edits in
        # between targeted: the first projection reuses what they left alone.
        self._basis = _basis

    # -- identity ----------------------------------------------------------------------

    @property
    def version(self) -> int:
        """Changes with every applied proposal and every pristine edit (frozen: fixed)."""
        if self._frozen is not None:
            return self._frozen.version
        return self._graph.version + self._overlay.applied

    @property
    def pristine(self) -> ContextGraph:
        """The pristine graph underneath (read it, never write to it through here)."""
        return self._graph

    @property
    def overlay(self) -> Overlay:
        """The applied edits this view reads the pristine graph through."""
        return self._overlay

    @property
    def frozen(self) -> bool:
        """Whether this view is a snapshot that no later change reaches."""
        return self._frozen is not None

    @property
    def token_cache(self) -> NodeTokenCache:
        """The pristine graph's token cache (the renderer counts with it)."""
        return self._graph.token_cache

    def freeze(self) -> WorkingView:
        """This view as an immutable snapshot (itself when already frozen)."""
        if self._frozen is not None:
            return self
        graph = self._graph
        # Transcript length without copying the transcript: derived nodes are the rest.
        frozen = _Frozen(len(graph) - len(graph.derived()), self.version, graph.turns)
        snapshot = WorkingView(graph, self._overlay, _frozen=frozen)
        # The snapshot sees every transcript node there is, so it projects what this
        # view does now: it reads the same projection, which this view copies before
        # it changes it.
        projection = self._projection()
        projection.shared = True
        snapshot._cached = (-1, projection)
        return snapshot

    def with_proposal(self, proposal: Proposal) -> WorkingView:
        """The view with `proposal` applied, unchecked (`WorkingGraph.apply` checks first)."""
        version = self.version + 1
        overlay = self._overlay.with_edits(proposal.edits, version)
        frozen = self._frozen
        if frozen is not None:
            frozen = _Frozen(frozen.limit, version, frozen.turns)
        basis = None
        targets = _targets(proposal, self._overlay)
        if targets is not None and self._cached is not None:
            basis = (self._cached[1], targets)
        elif targets is not None and self._basis is not None:
            basis = (self._basis[0], self._basis[1] | targets)
        return WorkingView(
            self._graph, overlay, interned=self._interned, _frozen=frozen, _basis=basis
        )

    # -- nodes -------------------------------------------------------------------------

    def _within(self, node: Node) -> bool:
        frozen = self._frozen
        return frozen is None or node.seq is None or node.seq < frozen.limit

    def get(self, node_id: str) -> Node | None:
        """Any node the view can explain (pristine or derived), or `None`."""
        node = self._overlay.derived.get(node_id)
        if node is not None:
            return node
        node = self._graph.get(node_id)
        return node if node is not None and self._within(node) else None

    def __getitem__(self, node_id: str) -> Node:
        node = self.get(node_id)
        if node is None:
            msg = f"node {node_id!r} is in neither the pristine nor the working graph"
            raise UnknownNodeError(msg)
        return node

    def __contains__(self, node_id: object) -> bool:
        return isinstance(node_id, str) and self.get(node_id) is not None

    def is_current(self, node_id: str) -> bool:
        """Whether `node_id` is in the current view (a unit holds it)."""
        return node_id in self._projection().unit_of

    def current_ids(self) -> tuple[str, ...]:
        """The ids of the current view's nodes, in order."""
        return tuple(i for unit in self.units() for i in unit.node_ids)

    def tokens(self, node_id: str) -> int:
        """The content tokens of any node the view can explain."""
        derived = self._overlay.derived.get(node_id)
        if derived is not None:
            return self._graph.token_cache.count_node(derived)
        self[node_id]  # raises for a node this view cannot explain
        return self._graph.tokens(node_id)  # counted once, at ingest

    @property
    def total_tokens(self) -> int:
        """The content tokens of every node in the current view."""
        return self.figures().tokens

    def figures(self) -> ViewFigures:
        """What the triggers read of the current view (do not change it)."""
        projection = self._projection()
        if projection.figures is None:
            projection.figures = figures_counted(projection.units, self._counted)
        return projection.figures

    def _counted(self, node_id: str) -> tuple[Node, int]:
        """A node of the current view with its tokens (`figures` reads every one)."""
        derived = self._overlay.derived.get(node_id)
        if derived is not None:
            return derived, self._graph.token_cache.count_node(derived)
        return self._graph[node_id], self._graph.tokens(node_id)

    def departure(self, node_id: str) -> tuple[str, int] | None:
        """How and at which version `node_id` left the view, or `None` if it did not."""
        version = self._overlay.left_at.get(node_id)
        if version is None:
            return None
        overlay = self._overlay
        if node_id in overlay.replaced_by:
            how = f"replaced by `{overlay.replaced_by[node_id]}`"
        elif node_id in overlay.abstracted_by:
            how = f"abstracted into `{overlay.abstracted_by[node_id]}`"
        else:
            how = "dropped"
        return how, version

    # -- the record --------------------------------------------------------------------

    @property
    def turns(self) -> int:
        """How many user turns the pristine record had (when frozen, then)."""
        return self._frozen.turns if self._frozen is not None else self._graph.turns

    def transcript(self) -> tuple[str, ...]:
        """The pristine transcript's node ids in order (when frozen, as it was then)."""
        transcript = self._graph.transcript()
        return transcript if self._frozen is None else transcript[: self._frozen.limit]

    # -- units -------------------------------------------------------------------------

    def units(self) -> tuple[Unit, ...]:
        """The current view's interaction units, in order."""
        projection = self._projection()
        if projection.frozen_units is None:
            projection.frozen_units = tuple(projection.units)
        return projection.frozen_units

    def unit_of(self, node_id: str) -> Unit:
        """The current view's unit that holds `node_id`."""
        unit = self._projection().unit_of.get(node_id)
        if unit is None:
            msg = f"node {node_id!r} is not in the current working view"
            raise UnknownNodeError(msg)
        return unit

    def _projection(self) -> _Projection:
        key = -1 if self._frozen is not None else self._graph.version
        cached = self._cached
        if cached is not None:
            if cached[0] == key:
                return cached[1]
            # Only a live view gets here: a frozen one's key never changes.
            extended = self._extended(cached[1])
            if extended is not None:
                self._cached = (key, extended)
                return extended
            # Same overlay: every segment of a pristine unit that did not change holds.
            projection = self._project(cached[1], frozenset())
        elif self._basis is not None:
            projection = self._project(*self._basis)
            self._basis = None
        else:
            projection = self._project(None, frozenset())
        self._cached = (key, projection)
        return projection

    def _pristine_key(self) -> int:
        """Names the pristine units this view projects: they change when it does."""
        frozen = self._frozen
        return self._graph.unit_mark if frozen is None else -1 - frozen.limit

    def _project(self, basis: _Projection | None, touched: frozenset[str]) -> _Projection:
        """Project the view, reusing from `basis` the segments `touched` leaves alone.

        `basis` is a projection of this view, or of the view this one was made from by
        edits that target only the ids in `touched` (pristine nodes, or derived ones
        nothing stood for: `_targets`) and add no id in use (the lineage rule). A
        segment's members stand as they did while none of them, nor the nodes standing
        for them (`_Segment.reached`), was targeted; its summaries stay first reached
        there while no segment before it changed which summaries it places. Such a
        segment projects the same here, so it is reused.
        """
        mark = self._graph.unit_mark
        key = self._pristine_key()
        pristine_units = self._pristine_units()
        if basis is not None and basis.key == key:
            # The same pristine units: what covers them is unchanged.
            hidden = basis.hidden
        else:
            hidden = self._hidden(pristine_units)
        before = basis.segments if basis is not None else {}
        # The touched ids, and the summaries whose first reaching unit may have moved.
        dirty = set(touched)
        # A C-level set test per unit: this loop runs over the whole view after every
        # applied edit.
        left = self._overlay.left_at.keys()
        units: list[Unit] = []
        verbatim: dict[str, int] = {}
        segments: dict[str, _Segment] = {}
        emitted: set[str] = set()
        ends: dict[str, tuple[str, bool]] = {}
        for unit in pristine_units:
            head = unit.head
            if head in hidden:
                if before and head in before:
                    dirty.update(before[head].emitted)
                continue
            # Nodes only ever leave the view, so a unit standing unchanged here stood
            # unchanged in `basis` too: it has no segment there.
            if left.isdisjoint(unit.node_ids):
                verbatim[head] = len(units)
                units.append(unit)
                continue
            old = before.get(head)
            if old is not None and old.unit is unit and dirty.isdisjoint(old.reached):
                segment = old
                emitted.update(segment.emitted)
            else:
                segment = self._project_unit(unit, emitted, ends)
                if old is None:
                    dirty.update(segment.emitted)
                elif old.emitted != segment.emitted:
                    dirty.update(set(old.emitted).symmetric_difference(segment.emitted))
            segments[head] = segment
            units.extend(segment.out)
        unit_of = {node_id: unit for unit in units for node_id in unit.node_ids}
        self._prune_interned(units)
        return _Projection(units, unit_of, verbatim, mark, hidden, key, segments)

    def _extended(self, projection: _Projection) -> _Projection | None:
        """`projection` brought up to date with the pristine units made or grown since.

        `None` when that takes more than appending (a new summary unit, a unit that
        grew while a pristine summary covers it, or while some of its members stand
        compacted): then project afresh.
        """
        graph = self._graph
        changed = [graph.unit_of(head) for head in graph.units_changed_since(projection.mark)]
        left = self._overlay.left_at
        hidden = projection.hidden
        for unit in changed:
            if (
                unit.kind == "summary"
                or unit.head in hidden
                or (left and not left.keys().isdisjoint(unit.node_ids))
            ):
                return None
        if projection.shared:
            projection = projection.copy()
        for unit in changed:
            self._place(projection, unit)
        # New units come after every summary, and a unit that grew stays uncovered:
        # what a pristine summary covers is as it was.
        projection.mark = projection.key = graph.unit_mark
        return projection

    def _place(self, projection: _Projection, unit: Unit) -> None:
        """Put a pristine unit that is new, or grew at its end, in its place."""
        index = projection.verbatim.get(unit.head)
        if index is None:
            index = len(projection.units)
            projection.verbatim[unit.head] = index
            projection.units.append(unit)
            known = 0
        else:
            known = len(projection.units[index])
            projection.units[index] = unit
        projection.frozen_units = None
        for node_id in unit.node_ids:
            projection.unit_of[node_id] = unit
        figures = projection.figures
        if figures is not None:
            for member in range(known, len(unit)):
                node_id = unit.node_ids[member]
                figures.add((index, member), *self._counted(node_id))

    def _pristine_units(self) -> list[Unit]:
        units = self._graph.units()
        if self._frozen is None:
            return list(units)
        limit = self._frozen.limit
        kept: list[Unit] = []
        for unit in units:
            # A unit's head is its oldest node: if the head is past the limit, all are.
            members = tuple(m for m in unit.node_ids if self._seq(m) < limit)
            if members:
                same = len(members) == len(unit)
                kept.append(unit if same else Unit(unit.head, unit.kind, members))
        return kept

    def _seq(self, node_id: str) -> int:
        seq = self._graph[node_id].seq
        return seq if seq is not None else -1

    def _hidden(self, units: Sequence[Unit]) -> frozenset[str]:
        """Heads of units that a later pristine summary covers (as the renderer does)."""
        graph = self._graph
        if not graph.by_kind("summary"):
            # No summary node at all, so no unit of kind `summary` either.
            return frozenset()
        covered: set[str] = set()
        hidden: set[str] = set()
        for unit in reversed(units):
            if unit.kind == "summary":
                covered.update(graph[unit.head].abstracts)
            elif (
                covered
                and covered.issuperset(unit.node_ids)
                and not any(graph[m].pinned for m in unit.node_ids)
            ):
                hidden.add(unit.head)
        return frozenset(hidden)

    def _resolve(self, node_id: str, ends: dict[str, tuple[str, bool]]) -> tuple[str, bool]:
        """`Overlay.resolve`, remembering in `ends` where each first successor leads.

        Many members lead into one summary, and summaries of summaries make the way on
        from it long: it is walked once per projection.
        """
        overlay = self._overlay
        successor = overlay.replaced_by.get(node_id)
        via_summary = False
        if successor is None:
            successor = overlay.abstracted_by.get(node_id)
            if successor is None:
                return node_id, False
            via_summary = True
        end = ends.get(successor)
        if end is None:
            end = ends[successor] = overlay.resolve(successor)
        return end[0], via_summary or end[1]

    def _project_unit(
        self, unit: Unit, emitted: set[str], ends: dict[str, tuple[str, bool]]
    ) -> _Segment:
        overlay = self._overlay
        out: list[Unit] = []
        live: list[str] = []
        reached: set[str] = set(unit.node_ids)
        first: list[str] = []
        for member in unit.node_ids:
            now, via_summary = self._resolve(member, ends)
            reached.add(now)
            if now in overlay.dropped:
                continue
            if not via_summary:
                live.append(now)
            elif now not in emitted:
                emitted.add(now)
                first.append(now)
                out.append(self._unit((now,)))
        if live:
            head, via_summary = self._resolve(unit.head, ends)
            if head == live[0] and not via_summary:
                out.append(self._unit(tuple(live)))
            else:
                out.extend(self._unit((node_id,)) for node_id in live)
        return _Segment(unit, tuple(out), frozenset(reached), tuple(first))

    def _unit(self, node_ids: tuple[str, ...]) -> Unit:
        unit = Unit(node_ids[0], self[node_ids[0]].kind, node_ids)
        # The renderer reuses a unit's messages while it gets the very same Unit object,
        # so an unchanged unit of the view must be the same object from one version on.
        if self._interned is None:
            return unit
        return self._interned.setdefault(unit, unit)

    def _prune_interned(self, units: Sequence[Unit]) -> None:
        interned = self._interned
        if interned is None or len(interned) <= 2 * len(units) + 64:
            return
        keep = [u for u in units if interned.get(u) is u]
        interned.clear()
        interned.update((u, u) for u in keep)

    # -- pairing -----------------------------------------------------------------------

    def _root(self, node: Node) -> str | None:
        """The pristine node a chain of replacements leads back to, if it is one."""
        derived = self._overlay.derived
        while node.id in derived:
            if node.replaces is None:
                return None
            node = self[node.replaces]
        return node.id

    def _current(self, pristine_id: str) -> Node | None:
        now, via_summary = self._overlay.resolve(pristine_id)
        if via_summary or not self.is_current(now):
            return None
        return self[now]

    def answer_to(self, call_node_id: str) -> Node | None:
        """The current node answering the call `call_node_id`, or `None`."""
        call = self[call_node_id]
        root = self._root(call) if isinstance(call, ToolCallNode) else None
        if root is None or root not in self._graph:
            return None
        answer = self._graph.answer_to(root)
        if answer is None or not self._within(answer):
            return None
        return self._current(answer.id)

    def call_of(self, answer_node_id: str) -> ToolCallNode | None:
        """The current call node that `answer_node_id` answers, or `None`."""
        answer = self[answer_node_id]
        root = self._root(answer) if isinstance(answer, AnswerNode) else None
        if root is None or root not in self._graph:
            return None
        call = self._graph.call_of(root)
        current = self._current(call.id) if call is not None else None
        return current if isinstance(current, ToolCallNode) else None

    def first_call_with_id(self, tool_call_id: str) -> str | None:
        """The id standing for the session's first call with `tool_call_id` now.

        When that call left the view its pristine id is returned, so later calls that
        reuse the id keep the provider ids they had (renders stay byte-stable).
        """
        first = self._graph.first_call_with_id(tool_call_id)
        if first is None or not self._within(self._graph[first]):
            return None
        current = self._current(first)
        return current.id if current is not None else first

    def is_superseded(self, node_id: str) -> bool:
        """Whether a later read of the same file covers the file this node stands for."""
        root = self._root(self[node_id])
        if root is None or root not in self._graph:
            return False
        return any(self._within(self._graph[s]) for s in self._graph.sources(root, "supersedes"))

    def by_path(self, path: str) -> tuple[str, ...]:
        """Current nodes standing for reads of `path`, oldest first."""
        found = (self._current(i) for i in self._graph.by_path(path))
        return tuple(node.id for node in found if node is not None)

    def targets(self, node_id: str, kind: Any) -> tuple[str, ...]:
        """Older nodes `node_id` points at by `kind`; a derived node's lineage included."""
        node = self[node_id]
        if node_id in self._overlay.derived:
            return _lineage(node) if kind == "derived_from" else ()
        return self._graph.targets(node_id, kind)

    def sources(self, node_id: str, kind: Any) -> tuple[str, ...]:
        """Newer nodes pointing at `node_id` by `kind`; its stand-in for `derived_from`."""
        _ = self[node_id]  # raises for an id the view cannot explain
        found: tuple[str, ...] = ()
        if node_id in self._graph:
            found = tuple(
                s for s in self._graph.sources(node_id, kind) if self._within(self._graph[s])
            )
        overlay = self._overlay
        successor = overlay.replaced_by.get(node_id) or overlay.abstracted_by.get(node_id)
        return (*found, successor) if kind == "derived_from" and successor else found

    # -- provenance --------------------------------------------------------------------

    def roots(self, node_id: str) -> tuple[str, ...]:
        """The pristine transcript nodes `node_id` stands for, transitively, in order."""
        found: set[str] = set()
        seen: set[str] = set()
        stack = [node_id]
        while stack:
            current = stack.pop()
            if current in seen:
                continue
            seen.add(current)
            node = self[current]
            if current not in self._overlay.derived and node.seq is not None:
                found.add(current)
            else:
                stack.extend(_lineage(node))
        return tuple(sorted(found, key=self._seq))

    def expand(self, node_id: str) -> tuple[Node, ...]:
        """The original pristine nodes behind `node_id`, in transcript order."""
        return tuple(self._graph[root] for root in self.roots(node_id))
