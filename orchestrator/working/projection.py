"""`Projector`: how a `WorkingView` projects its units, built once, extended, reused after edits.

Each view holds one projector (`orchestrator.working.view` says what the units are). It
caches a `Projection` per pristine version. Appended pristine units extend it in place
(`_extended`); after an applied edit (a restore too) the next view's projector reuses
every chunk and segment the edit left alone (`_project` with a basis,
`orchestrator.working.segments`); anything else projects afresh.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from itertools import chain

from context_graph.graph.context_graph import ContextGraph
from context_graph.graph.nodes import ANSWER_KINDS, Node
from context_graph.graph.units import Unit
from orchestrator.working.carry import Carry, carry_of, take_over
from orchestrator.working.figures import ViewFigures, figures_counted
from orchestrator.working.layered import LayeredMap
from orchestrator.working.overlay import Overlay
from orchestrator.working.segments import CHUNK, Chunk, Walk
from processors.base import Proposal, Restore

__all__ = ["Projection", "Projector"]


@dataclass(slots=True)
class Projection:
    """The units of a working view and what keeps them up to date incrementally."""

    units: list[Unit]
    unit_of: dict[str, Unit]
    # Pristine head -> index in `units`, for the pristine units that stand unchanged.
    verbatim: dict[str, int]
    # `ContextGraph.unit_mark` when the units were last brought up to date.
    mark: int
    # Heads of the pristine units a pristine summary covers (`Projector._hidden`).
    hidden: frozenset[str]
    # Which pristine units `hidden` was judged over (`Projector._pristine_key`).
    key: int
    # What each run of `CHUNK` pristine units projects to, in order (as of when the
    # units were projected: appends since are in `units` only). Never changed once
    # built: a later projection reuses the chunks, and the segments, it can.
    chunks: tuple[Chunk, ...]
    # Handed out by `units()`; `None` after the list changed.
    frozen_units: tuple[Unit, ...] | None = None
    # The tool outputs, file reads and sub-agent answers among the units' nodes, in
    # order (`Projector.answers`); `None` after the list changed.
    answers: tuple[Node, ...] | None = None
    # Counted on first use, then kept up to date with appends: triggers read them
    # after every ingest.
    figures: ViewFigures | None = None
    # The projectors of the snapshots that read this projection too: while one of them
    # is alive, copy the projection before changing it. Most snapshots are let go at
    # once (a render takes one to screen it, a stage one per processor), and copying
    # the projection would cost the whole view at the next ingest.
    readers: list[weakref.ref[Projector]] | None = None
    # How many pristine units the projection looked at one by one (the rest it reused
    # a chunk at a time).
    visited: int = 0
    # Where the way from each summary passed led (`Walk._resolve`), for the next walk.
    ends: LayeredMap[str, tuple[str, bool]] = field(default_factory=LayeredMap)

    def shared(self) -> bool:
        """Whether a snapshot that is still alive reads this projection."""
        readers = self.readers
        if readers is None:
            return False
        alive = [reader for reader in readers if reader() is not None]
        self.readers = alive or None
        return bool(alive)

    def copy(self) -> Projection:
        """A copy whose containers can change without touching this one."""
        return Projection(
            list(self.units),
            dict(self.unit_of),
            dict(self.verbatim),
            self.mark,
            self.hidden,
            self.key,
            self.chunks,
            self.frozen_units,
            self.answers,
            None if self.figures is None else self.figures.copy(),
            ends=self.ends,
        )


class Projector:
    """Projects one working view's units and keeps the projection up to date.

    Args:
        graph: The pristine graph the view reads.
        overlay: The applied edits it reads the graph through.
        limit: A snapshot's transcript length: it projects only the nodes before it.
        interned: The units handed out by the views of one working graph (see `Walk.unit`).
        basis: A projection of the view this one was made from, the ids the edits in
            between targeted, and the nodes a restore among them took away or brought
            back: the first projection reuses what they left alone.
        cached: A projection of this very view, with its key (a snapshot's: -1).
    """

    __slots__ = (
        "__weakref__",
        "_basis",
        "_cached",
        "_carry",
        "_graph",
        "_interned",
        "_limit",
        "_overlay",
    )

    def __init__(
        self,
        graph: ContextGraph,
        overlay: Overlay,
        limit: int | None = None,
        interned: dict[Unit, Unit] | None = None,
        *,
        basis: tuple[Projection, frozenset[str], frozenset[str]] | None = None,
        cached: tuple[int, Projection] | None = None,
        carry: Carry | None = None,
    ) -> None:
        self._graph = graph
        self._overlay = overlay
        self._limit = limit
        self._interned = interned
        self._basis = basis
        self._cached = cached
        # What the first projection may take over from the view this one was made from.
        self._carry = carry

    # -- what the view reads -------------------------------------------------------------

    def units(self) -> tuple[Unit, ...]:
        """The view's interaction units, in order."""
        projection = self._current()
        if projection.frozen_units is None:
            projection.frozen_units = tuple(projection.units)
        return projection.frozen_units

    def answers(self, node: Callable[[str], Node]) -> tuple[Node, ...]:
        """The view's nodes of the `ANSWER_KINDS`, in order, read by id with `node`.

        Kept with the projection: every stage of a compaction asks for them, and a
        stage that applied nothing leaves the next one the same projection.
        """
        projection = self._current()
        if projection.answers is None:
            nodes = (node(i) for unit in projection.units for i in unit.node_ids)
            projection.answers = tuple(n for n in nodes if n.kind in ANSWER_KINDS)
        return projection.answers

    def unit_of(self, node_id: str) -> Unit | None:
        """The view's unit that holds `node_id`, or `None`."""
        return self._current().unit_of.get(node_id)

    def holds(self, node_id: str) -> bool:
        """Whether a unit of the view holds `node_id`."""
        return node_id in self._current().unit_of

    def figures(self) -> ViewFigures:
        """What the triggers read of the view (do not change it)."""
        projection = self._current()
        if projection.figures is None:
            projection.figures = figures_counted(projection.units, self._counted)
        return projection.figures

    # -- the projectors of the views made from this one ----------------------------------

    def snapshot(self, limit: int) -> Projector:
        """The projector of a snapshot of this view, stopped at transcript length `limit`.

        The snapshot sees every transcript node there is, so it projects what this view
        does now: it reads the same projection, which this projector copies before it
        changes it.
        """
        projection = self._current()
        snapshot = Projector(self._graph, self._overlay, limit, cached=(-1, projection))
        readers = projection.readers or []
        projection.readers = [*(r for r in readers if r() is not None), weakref.ref(snapshot)]
        return snapshot

    def after(self, proposal: Proposal, overlay: Overlay) -> Projector:
        """The projector of this view with `proposal` applied, reading through `overlay`."""
        basis = carry = None
        targets = self._overlay.targets_of(proposal.edits)
        # A restore changes the ways from the members below it: the walk forgets their
        # ends (`Walk`'s `restored`).
        restored = (
            targets
            if targets is not None and any(isinstance(e, Restore) for e in proposal.edits)
            else frozenset()
        )
        if targets is not None and self._cached is not None:
            basis = (self._cached[1], targets, restored)
            if self._limit is None:
                # A live view's projection at the same `unit_mark` covers the same units.
                carry = carry_of(proposal, self._cached[1], self._overlay)
        elif targets is not None and self._basis is not None:
            projection, touched, forget = self._basis
            basis = (projection, touched | targets, forget | restored)
        return Projector(
            self._graph, overlay, self._limit, self._interned, basis=basis, carry=carry
        )

    # -- keeping the projection ----------------------------------------------------------

    def _current(self) -> Projection:
        key = -1 if self._limit is not None else self._graph.version
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
            projection = self._project(cached[1], frozenset(), frozenset())
        elif self._basis is not None:
            projection = self._project(*self._basis)
            self._basis = None
            if self._carry is not None:
                take_over(self._carry, projection, self._graph)
        else:
            projection = self._project(None, frozenset(), frozenset())
        self._cached = (key, projection)
        self._carry = None
        return projection

    def _node(self, node_id: str) -> Node:
        """A node of the view (derived or pristine)."""
        derived = self._overlay.derived.get(node_id)
        return derived if derived is not None else self._graph[node_id]

    def _counted(self, node_id: str) -> tuple[Node, int]:
        """A node of the view with its tokens (`figures` reads every one)."""
        derived = self._overlay.derived.get(node_id)
        if derived is not None:
            return derived, self._graph.token_cache.count_node(derived)
        return self._graph[node_id], self._graph.tokens(node_id)

    # -- projecting ----------------------------------------------------------------------

    def _pristine_key(self) -> int:
        """Names the pristine units this view projects: they change when it does."""
        limit = self._limit
        return self._graph.unit_mark if limit is None else -1 - limit

    def _project(
        self, basis: Projection | None, touched: frozenset[str], restored: frozenset[str]
    ) -> Projection:
        """Project the view, reusing from `basis` the chunks and segments `touched` leaves alone.

        `basis` is a projection of this view, or of the view this one was made from by
        edits that target only the ids in `touched` (pristine nodes, or derived ones
        nothing stood for, and what a restore took away or brought back:
        `Overlay.targets_of`; `restored` holds the latter) and add no id in use (the
        lineage rule). A segment's members stand as they did while none of them, nor
        the nodes standing for them (`Segment.reached`), was targeted; its summaries stay
        first reached there while no segment before it changed which summaries it
        places. Such a segment projects the same here, so it is reused; a chunk of them
        (`Chunk`) is reused whole, without a look at its units.
        """
        mark = self._graph.unit_mark
        key = self._pristine_key()
        pristine_units = self._pristine_units()
        if basis is not None and basis.key == key:
            # The same pristine units: what covers them is unchanged.
            hidden = basis.hidden
        else:
            hidden = self._hidden(pristine_units)
        before = basis.chunks if basis is not None else ()
        whole = basis is not None and basis.hidden == hidden
        ends = basis.ends if basis is not None else None
        walk = Walk(self._overlay, self._node, self._interned, hidden, touched, ends, restored)
        chunks: list[Chunk] = []
        for index, start in enumerate(range(0, len(pristine_units), CHUNK)):
            old = before[index] if index < len(before) else None
            chunks.append(walk.chunk(pristine_units[start : start + CHUNK], old, whole=whole))
        units = list(chain.from_iterable(c.out for c in chunks))
        verbatim: dict[str, int] = {}
        offset = 0
        for made in chunks:
            for head, at in made.verbatim:
                verbatim[head] = offset + at
            offset += len(made.out)
        unit_of = {node_id: unit for unit in units for node_id in unit.node_ids}
        return Projection(
            units,
            unit_of,
            verbatim,
            mark,
            hidden,
            key,
            tuple(chunks),
            visited=walk.visited,
            ends=walk.ends(),
        )

    def _extended(self, projection: Projection) -> Projection | None:
        """`projection` brought up to date with the pristine units made or grown since.

        `None` when that takes more than appending (a new summary unit, a unit that
        grew while a pristine summary covers it, or while some of its members stand
        compacted): then project afresh.
        """
        graph = self._graph
        if graph.units_reshaped_since(projection.mark):
            return None  # a withdrawal took units apart: they did more than grow
        changed = [graph.unit_of(head) for head in graph.units_changed_since(projection.mark)]
        left = self._overlay.left_at
        hidden = projection.hidden
        for unit in changed:
            if unit.kind == "summary" or unit.head in hidden or left.holds_any(unit.node_ids):
                return None
        if projection.shared():
            projection = projection.copy()
        for unit in changed:
            self._place(projection, unit)
        # New units come after every summary, and a unit that grew stays uncovered:
        # what a pristine summary covers is as it was.
        projection.mark = projection.key = graph.unit_mark
        return projection

    def _place(self, projection: Projection, unit: Unit) -> None:
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
        projection.frozen_units = projection.answers = None
        for node_id in unit.node_ids:
            projection.unit_of[node_id] = unit
        figures = projection.figures
        if figures is not None:
            for member in range(known, len(unit)):
                node_id = unit.node_ids[member]
                figures.add((index, member), *self._counted(node_id))

    def _pristine_units(self) -> Sequence[Unit]:
        units = self._graph.units()
        limit = self._limit
        if limit is None:
            return units
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
                # A provider's own compaction covers only in its own format, which the
                # renderer knows and the view does not: the renderer decides.
                if getattr(graph[unit.head], "native", None) is None:
                    covered.update(graph[unit.head].abstracts)
            elif (
                covered
                and covered.issuperset(unit.node_ids)
                and not any(graph[m].pinned for m in unit.node_ids)
            ):
                hidden.add(unit.head)
        return frozenset(hidden)
