"""How pristine units project into a working view, a unit and a chunk of units at a time.

`Projector._project` (`orchestrator.working.projection`) walks the pristine units in
order with one `Walk`. A pristine unit with a member that left the view projects to a
`Segment`; the units of a stretch of `CHUNK` pristine units project to a `Chunk`. After
an applied edit the walk reuses, whole, every chunk the edit cannot reach (its
`reached` set misses every dirty id), so an edit costs the chunks it touches, not the
history; inside a chunk it does reach, it reuses each segment the edit left alone.

A summary of summaries would reach every chunk whose units lead into the summaries it
abstracts (half the history, say), though only the chunk that placed each of them
changes: a chunk whose only dirty ids are such summaries, placed before it, is reused
too, with what they lead on to now added to its `reached` (and `extra`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from operator import is_
from typing import Final

from context_graph.graph.anchors import unit_kind
from context_graph.graph.nodes import Node
from context_graph.graph.units import Unit
from orchestrator.working.layered import LayeredMap
from orchestrator.working.overlay import Overlay

__all__ = ["CHUNK", "Chunk", "Segment", "Walk"]

#: Pristine units per chunk: a chunk the edits miss costs one set test (of the dirty ids).
CHUNK: Final = 64


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


@dataclass(frozen=True, slots=True)
class Chunk:
    """What the pristine units at positions [i * CHUNK, (i + 1) * CHUNK) project to.

    Never changed once built: a later projection reuses it whole while it covers the
    very same Unit objects, the same units are hidden and no dirty id is in `reached`.
    """

    pristine: tuple[Unit, ...]
    out: tuple[Unit, ...]
    # Every id its segments reached, and the members of the units standing unchanged
    # (an edit that makes one leave targets a member).
    reached: frozenset[str]
    # The summaries first reached in this chunk, in order.
    emitted: tuple[str, ...]
    # Pristine head -> its segment, for the units that do not stand unchanged.
    segments: Mapping[str, Segment]
    # (pristine head, index in `out`) of the units that stand unchanged.
    verbatim: tuple[tuple[str, int], ...]
    # What summaries its segments reach, placed before it, moved on to since the
    # segments were made (`Walk.chunk`): each segment may reach these too.
    extra: frozenset[str] = frozenset()


def _same(old: Sequence[Unit], new: Sequence[Unit]) -> bool:
    """Whether two runs of units are the very same objects (compared in C)."""
    return len(old) == len(new) and all(map(is_, old, new))


class Walk:
    """One projection's pass over the pristine units, chunk after chunk, in order.

    Args:
        overlay: The applied edits the view reads the graph through.
        node: A node of the view (derived or pristine), by id.
        interned: The units handed out by the views of one working graph (see `unit`).
        hidden: Heads of the pristine units a pristine summary covers.
        touched: The ids the edits since the basis targeted (`Projector._project`).
        ends: Where the way from each summary led in the basis (`_resolve`); `None`
            without a basis.
        restored: What restores since the basis took away or brought back, with the
            nodes they restored: every way a restore changed ended at one of these (the
            restored node stood in the view), so the ends known there are forgotten.
    """

    __slots__ = (
        "_ends",
        "_hidden",
        "_interned",
        "_node",
        "_overlay",
        "_placed_before",
        "_touched",
        "dirty",
        "emitted",
        "visited",
    )

    def __init__(
        self,
        overlay: Overlay,
        node: Callable[[str], Node],
        interned: dict[Unit, Unit] | None,
        hidden: frozenset[str],
        touched: frozenset[str],
        ends: LayeredMap[str, tuple[str, bool]] | None = None,
        restored: frozenset[str] = frozenset(),
    ) -> None:
        self._overlay = overlay
        self._node = node
        self._interned = interned
        self._hidden = hidden
        # The touched ids, and the summaries whose first reaching unit may have moved.
        self.dirty: set[str] = set(touched)
        # The summaries placed so far.
        self.emitted: set[str] = set()
        # How many pristine units were looked at one by one (not reused a chunk whole).
        self.visited = 0
        known = LayeredMap() if ends is None else ends
        self._ends = known.draft()
        if restored:
            for start, (end, _) in known.items():
                if end in restored:
                    self._ends.pop(start)
        self._touched = touched
        # The summaries the basis placed before the chunk at hand.
        self._placed_before: set[str] = set()

    def ends(self) -> LayeredMap[str, tuple[str, bool]]:
        """Where the way from each summary passed led, for the next projection's walk."""
        return self._ends.frozen()

    def chunk(self, units: Sequence[Unit], old: Chunk | None, *, whole: bool) -> Chunk:
        """The chunk of `units`, reusing `old` (the basis's at this place) where it holds.

        `whole`: the basis hid the same units, so `old` may be reused whole.
        """
        if old is None:
            return self._projected(units, None)
        made = None
        if whole and _same(old.pristine, units):
            hit = self.dirty.intersection(old.reached)
            moved = self._moved_on(hit) if hit else frozenset()
            if moved is not None:
                # Every unit of it would reuse its segment or stand unchanged again, and
                # place the same summaries: nothing after it moves either.
                self.emitted.update(old.emitted)
                made = (
                    old
                    if not moved
                    else replace(old, reached=old.reached | moved, extra=old.extra | moved)
                )
        self._placed_before.update(old.emitted)
        return made if made is not None else self._projected(units, old)

    def _moved_on(self, hit: set[str]) -> frozenset[str] | None:
        """What the dirty ids a chunk reaches moved on to, when that leaves it as it was.

        Each must be a summary the edits targeted that the basis placed before the
        chunk (a summary of summaries abstracting it, a safety copy, a drop): its
        members lead on to whatever stands for it now, which the first unit reaching it
        places (before the chunk) or nothing does. `None` when one is anything else.
        """
        if not hit.issubset(self._touched) or not hit.issubset(self._placed_before):
            return None
        overlay = self._overlay
        moved: list[str] = []
        for node_id in hit:
            if node_id not in overlay.derived:
                return None
            while (
                after := overlay.replaced_by.get(node_id) or overlay.abstracted_by.get(node_id)
            ) is not None:
                moved.append(after)
                node_id = after
        return frozenset(moved)

    def _projected(self, units: Sequence[Unit], old: Chunk | None) -> Chunk:
        before: Mapping[str, Segment] = {} if old is None else old.segments
        dirty, emitted = self.dirty, self.emitted
        # Segments of a chunk reused across a move (`extra`) may reach those ids too.
        extra = frozenset() if old is None else old.extra
        if extra and not dirty.isdisjoint(extra):
            reusable, extra = False, frozenset()
        else:
            reusable = True
        hidden, left = self._hidden, self._overlay.left_at
        out: list[Unit] = []
        verbatim: list[tuple[str, int]] = []
        segments: dict[str, Segment] = {}
        reached: set[str] = set(extra)
        first: list[str] = []
        self.visited += len(units)
        for unit in units:
            head = unit.head
            if head in hidden:
                if head in before:
                    dirty.update(before[head].emitted)
                continue
            # Nodes only ever leave the view, so a unit standing unchanged here stood
            # unchanged in the basis too: it has no segment there.
            if not left.holds_any(unit.node_ids):
                verbatim.append((head, len(out)))
                out.append(unit)
                reached.update(unit.node_ids)
                continue
            was = before.get(head)
            if was is not None and reusable and was.unit is unit and dirty.isdisjoint(was.reached):
                segment = was
                emitted.update(segment.emitted)
            else:
                segment = self._segment(unit)
                if was is None:
                    dirty.update(segment.emitted)
                elif was.emitted != segment.emitted:
                    dirty.update(set(was.emitted).symmetric_difference(segment.emitted))
            segments[head] = segment
            out.extend(segment.out)
            reached.update(segment.reached)
            first.extend(segment.emitted)
        return Chunk(
            tuple(units),
            tuple(out),
            frozenset(reached),
            tuple(first),
            segments,
            tuple(verbatim),
            extra,
        )

    def _resolve(self, node_id: str) -> tuple[str, bool]:
        """`Overlay.resolve`, through the ends known for the summaries on the way.

        A rolling summary is abstracted by the next one at every compaction, so the way
        from a member to what stands for it now grows with the session. Where the way
        from each summary passed ended is kept (`ends`) and handed on to the next
        projection, which goes on from that end: the way up to it stays as it was,
        since only nodes in the view are edited, and a restore's ways are forgotten
        (`restored`). So a walk takes only the steps made since an end was found.
        """
        overlay, ends = self._overlay, self._ends
        # (node, whether the way from it to the next one passes a summary, keep its end)
        passed: list[tuple[str, bool, bool]] = []
        node, keep = node_id, False
        while True:
            known = ends.get(node)
            if known is not None:
                passed.append((node, known[1], True))
                node, keep = known[0], True
                continue
            summary = False
            successor = overlay.replaced_by.get(node)
            if successor is None:
                summary = True
                successor = overlay.abstracted_by.get(node)
                if successor is None:
                    break
            passed.append((node, summary, keep))
            node, keep = successor, summary  # the ends of summaries are kept
        end, via = node, False
        for passed_id, step, kept in reversed(passed):
            via = via or step
            if kept and ends.get(passed_id) != (end, via):
                ends[passed_id] = (end, via)
        return end, via

    def _segment(self, unit: Unit) -> Segment:
        dropped, emitted = self._overlay.dropped, self.emitted
        out: list[Unit] = []
        live: list[str] = []
        reached: set[str] = set(unit.node_ids)
        first: list[str] = []
        for member in unit.node_ids:
            now, via_summary = self._resolve(member)
            reached.add(now)
            if now in dropped:
                continue
            if not via_summary:
                live.append(now)
            elif now not in emitted:
                emitted.add(now)
                first.append(now)
                out.append(self.unit((now,)))
        if live:
            head, via_summary = self._resolve(unit.head)
            if head == live[0] and not via_summary:
                out.append(self.unit(tuple(live)))
            else:
                out.extend(self.unit((node_id,)) for node_id in live)
        return Segment(unit, tuple(out), frozenset(reached), tuple(first))

    def unit(self, node_ids: tuple[str, ...]) -> Unit:
        """The view's unit of `node_ids` (interned)."""
        unit = Unit(node_ids[0], unit_kind(self._node(node_ids[0])), node_ids)
        # The renderer reuses a unit's messages while it gets the very same Unit object,
        # so an unchanged unit of the view must be the same object from one version on.
        if self._interned is None:
            return unit
        return self._interned.setdefault(unit, unit)
