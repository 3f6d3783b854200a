"""What a view made by replacements takes over from the view it was made from.

Most proposals of a compaction (masks, truncations, distillations) only replace nodes.
A replacement stands where its target stood: in the same unit, at the same index, with
the same kind (`whole_units` refuses another kind), and no other node moves. So the
view's figures (`ViewFigures`) and its answers (`Projector.answers`) are the previous
view's with each target swapped for its replacement; recounting them would read every
node of the view after every stage.

`carry_of` notes what to take over when the projector of the next view is made;
`take_over` sets it on that view's first projection, once it has checked that the
swaps are what the projection shows. Anything else (another edit, a target not in the
view, a replacement that is not new, pristine units that changed in between) takes
nothing over: the projection counts afresh when asked.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from context_graph.graph.context_graph import ContextGraph
from context_graph.graph.nodes import ANSWER_KINDS, Node
from context_graph.graph.units import Unit
from orchestrator.working.figures import ViewFigures
from orchestrator.working.overlay import Overlay
from processors.base import Proposal, Replace

__all__ = ["Carry", "Projected", "carry_of", "take_over"]


class Projected(Protocol):
    """What a carry reads and sets of a projection.

    That is `projection.Projection`, which imports this module: it is named by its shape
    here, so that the two modules do not import each other.
    """

    mark: int
    unit_of: dict[str, Unit]
    answers: tuple[Node, ...] | None
    figures: ViewFigures | None


@dataclass(frozen=True, slots=True)
class Carry:
    """The previous view's projection, and the swaps a replace-only proposal makes."""

    source: Projected
    swaps: dict[str, Node]
    """Target id -> its replacement."""
    before: Overlay
    """The overlay of the view the proposal was applied to."""


def carry_of(proposal: Proposal, source: Projected, before: Overlay) -> Carry | None:
    """What the view `proposal` leads to may take over from `source`, if anything."""
    swaps: dict[str, Node] = {}
    for edit in proposal.edits:
        if not isinstance(edit, Replace):
            return None
        swaps[edit.target] = edit.replacement
    if len(swaps) != len(proposal.edits) or not swaps:
        return None  # a target named twice: let the projection say what stands
    return Carry(source, swaps, before)


def take_over(carry: Carry, projection: Projected, graph: ContextGraph) -> None:
    """Set on `projection` the figures and answers `carry` makes exact; or leave them.

    Args:
        carry: What `carry_of` noted.
        projection: The first projection of the view the proposal led to.
        graph: The pristine graph both views read.
    """
    source = carry.source
    if source.mark != projection.mark or (source.figures is None and source.answers is None):
        return
    old_units, new_units = source.unit_of, projection.unit_of
    before = carry.before
    count = graph.token_cache.count_node
    pairs: list[tuple[Node, int, Node]] = []
    for target, node in carry.swaps.items():
        new_id = node.id
        if (
            target not in old_units
            or target in new_units
            or new_id in old_units
            or new_id not in new_units
            or new_id in before.derived
            or new_id in before.undone
        ):
            return
        old = before.derived.get(target)
        if old is None:
            old, tokens = graph[target], graph.tokens(target)
        else:
            tokens = count(old)
        if old.kind != node.kind:
            return
        pairs.append((old, tokens, node))
    if len(new_units) != len(old_units):
        return
    if source.answers is not None:
        swaps = carry.swaps
        projection.answers = tuple(swaps.get(n.id, n) for n in source.answers)
    if source.figures is not None:
        projection.figures = _swapped(source.figures, pairs, count)


def _swapped(
    figures: ViewFigures, pairs: list[tuple[Node, int, Node]], count: Callable[[Node], int]
) -> ViewFigures | None:
    """`figures` with each (old node, its tokens, new node) swapped in place; `None`: recount."""
    total, output = figures.tokens, figures.output_tokens
    swapped: dict[str, Node] = {}
    for old, tokens, node in pairs:
        delta = count(node) - tokens
        total += delta
        if node.kind in ANSWER_KINDS:
            output += delta
        if old.triggers or node.triggers:
            if not old.triggers:
                return None  # where the new one stands is not in the figures
            swapped[old.id] = node
    if swapped:
        # Declared entries are kept in view order; a swap keeps the place.
        declared = []
        for position, entry in figures.declared:
            entry = swapped.get(entry.id, entry)
            if entry.triggers:
                declared.append((position, entry))
    else:
        declared = list(figures.declared)
    return ViewFigures(figures.nodes, total, output, declared, figures.last_assistant)
