"""The figures triggers read of a view, kept so that an append costs the appended nodes.

`evaluate` runs after every ingest. Summing the whole view each time would make a
session's trigger checks quadratic, so a `WorkingView` keeps one `ViewFigures` per
projection and adds the nodes an ingest appends (`orchestrator.working.projection`); any other
change counts them again with `figures_counted`.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TypeAlias

from context_graph.graph.nodes import ANSWER_KINDS, Node
from context_graph.graph.units import Unit

__all__ = ["Position", "ViewFigures", "figures_counted", "figures_of"]

Position: TypeAlias = tuple[int, int]
"""Where a node stands in a view: (index of its unit, index within the unit).

Ordered like the node's place in the flat list of the view's node ids, and unchanged
when a unit grows or units are appended after it.
"""


def _at(entry: tuple[Position, Node]) -> Position:
    return entry[0]


@dataclass(slots=True)
class ViewFigures:
    """Sums over the nodes of a view's units, and the nodes that declare triggers."""

    nodes: int = 0
    """How many nodes the units hold."""
    tokens: int = 0
    """Their content tokens."""
    output_tokens: int = 0
    """The content tokens of the tool outputs among them (`ANSWER_KINDS`)."""
    declared: list[tuple[Position, Node]] = field(default_factory=list)
    """The nodes that declare triggers, in view order."""
    last_assistant: Position = (-1, -1)
    """Where the last assistant node stands; (-1, -1) without one."""

    def add(self, position: Position, node: Node, tokens: int) -> None:
        """Count one more node standing at `position`."""
        self.nodes += 1
        self.tokens += tokens
        if node.kind in ANSWER_KINDS:
            self.output_tokens += tokens
        if node.triggers:
            bisect.insort(self.declared, (position, node), key=_at)
        if node.kind == "assistant" and position > self.last_assistant:
            self.last_assistant = position

    def copy(self) -> ViewFigures:
        """An independent copy (the declared list is not shared)."""
        # Not `dataclasses.replace`, which reads the fields anew on every call.
        return ViewFigures(
            self.nodes, self.tokens, self.output_tokens, list(self.declared), self.last_assistant
        )


def figures_of(
    units: Iterable[Unit], node: Callable[[str], Node], tokens: Callable[[str], int]
) -> ViewFigures:
    """Count the figures of `units` from scratch, reading nodes and tokens by id."""
    return figures_counted(units, lambda node_id: (node(node_id), tokens(node_id)))


def figures_counted(
    units: Iterable[Unit], counted: Callable[[str], tuple[Node, int]]
) -> ViewFigures:
    """`figures_of`, reading each node with its tokens in one call.

    Counts what `ViewFigures.add` would, node by node in view order, without a call per
    node: the working view counts its whole view this way after every applied edit.
    """
    nodes = total = output = 0
    declared: list[tuple[Position, Node]] = []
    last_assistant: Position = (-1, -1)
    for index, unit in enumerate(units):
        for member, node_id in enumerate(unit.node_ids):
            node, tokens = counted(node_id)
            nodes += 1
            total += tokens
            kind = node.kind
            if kind in ANSWER_KINDS:
                output += tokens
            elif kind == "assistant":
                # View order is position order: the last one seen stands last.
                last_assistant = (index, member)
            if node.triggers:
                declared.append(((index, member), node))
    return ViewFigures(nodes, total, output, declared, last_assistant)
