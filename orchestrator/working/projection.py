"""How a `WorkingView` projects its units: built once, extended, reused after edits.

Mixed into `WorkingView` (`orchestrator.working.view`, which says what the units are).
A projection is cached per pristine version. Appended pristine units extend it in place
(`_extended`); after an applied edit the next projection reuses every segment the edit
left alone (`_project` with a basis); anything else projects afresh.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from context_graph.graph.anchors import unit_kind
from context_graph.graph.context_graph import ContextGraph
from context_graph.graph.nodes import Node
from context_graph.graph.units import Unit
from orchestrator.working.figures import ViewFigures
from processors.base import Proposal, Replace

if TYPE_CHECKING:
    # Only for annotations: the buffer module builds overlays and imports the view.
    from orchestrator.working.buffer import Overlay

__all__ = ["Frozen", "Projection", "ProjectionMethods", "Segment", "edit_targets"]


def edit_targets(proposal: Proposal, overlay: Overlay) -> frozenset[str] | None:
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
class Frozen:
    """Where a snapshot stopped: transcript length, version and user turns then."""

    limit: int
    version: int
    turns: int


@dataclass(frozen=True, slots=True)
class Segment:
    """What one pristine unit with a member that left the view projects to."""

    unit: Unit
    out: tuple[Unit, ...]
    # Its members and the nodes standing for them now (`Overlay.resolve`): while the
    # edits since target none of them, each member stands as it did.
    reached: frozenset[str]
    # The summaries first reached here, so placed here.
    emitted: tuple[str, ...]


@dataclass(slots=True)
class Projection:
    """The units of a working view and what keeps them up to date incrementally."""

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
    segments: dict[str, Segment]
    # Handed out by `units()`; `None` after the list changed.
    frozen_units: tuple[Unit, ...] | None = None
    # Counted on first use, then kept up to date with appends: triggers read them
    # after every ingest.
    figures: ViewFigures | None = None
    # A snapshot reads this projection too: copy it before changing it.
    shared: bool = False

    def copy(self) -> Projection:
        """A copy whose containers can change without touching this one."""
        return Projection(
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


class ProjectionMethods:
    """Building and caching the projection; mixed into `WorkingView`."""

    __slots__ = ()

    _graph: ContextGraph
    _overlay: Overlay
    _frozen: Frozen | None
    _interned: dict[Unit, Unit] | None

    if TYPE_CHECKING:

        def __getitem__(self, node_id: str) -> Node: ...

        def _counted(self, node_id: str) -> tuple[Node, int]: ...

    def _pristine_key(self) -> int:
        """Names the pristine units this view projects: they change when it does."""
        frozen = self._frozen
        return self._graph.unit_mark if frozen is None else -1 - frozen.limit

    def _project(self, basis: Projection | None, touched: frozenset[str]) -> Projection:
        """Project the view, reusing from `basis` the segments `touched` leaves alone.

        `basis` is a projection of this view, or of the view this one was made from by
        edits that target only the ids in `touched` (pristine nodes, or derived ones
        nothing stood for: `_targets`) and add no id in use (the lineage rule). A
        segment's members stand as they did while none of them, nor the nodes standing
        for them (`Segment.reached`), was targeted; its summaries stay first reached
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
        segments: dict[str, Segment] = {}
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
        return Projection(units, unit_of, verbatim, mark, hidden, key, segments)

    def _extended(self, projection: Projection) -> Projection | None:
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
    ) -> Segment:
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
        return Segment(unit, tuple(out), frozenset(reached), tuple(first))

    def _unit(self, node_ids: tuple[str, ...]) -> Unit:
        unit = Unit(node_ids[0], unit_kind(self[node_ids[0]]), node_ids)
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
