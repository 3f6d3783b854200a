"""Which nodes a summary may stand for, and which earlier summary it updates.

The targets must be whole interaction units in transcript order (a derived copy stands
in for the node it replaces), with no pinned node. A summary this processor wrote may
lead the targets, or sit just before them in the graph: the new summary then updates it
(rolling) instead of summarizing a summary from scratch. Later summaries of this
processor among the targets are absorbed: their briefs are merged into the new one, in
transcript order, with the user turns between them, so that a session of many requests
keeps one summary of its past (`rolling_run`) instead of one more per request.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from context_graph.errors import UnknownNodeError
from context_graph.graph.nodes import Node, SummaryNode
from context_graph.graph.units import Unit
from processors.base import ProcessorContext

__all__ = ["Plan", "imported_text", "plan_targets", "rolling_run"]


@dataclass(frozen=True, slots=True)
class Plan:
    """What a summary will abstract.

    Attributes:
        previous: The summary this one updates, if any.
        units: The newer span, grouped by interaction unit, in order; it may hold
            later summaries of the same processor, which the new one absorbs.
        tokens_before: Content tokens of everything the summary replaces.
    """

    previous: SummaryNode | None
    units: tuple[tuple[Node, ...], ...]
    tokens_before: int

    @property
    def span(self) -> tuple[Node, ...]:
        """The newer nodes, in order."""
        return tuple(node for unit in self.units for node in unit)

    @property
    def abstract_ids(self) -> tuple[str, ...]:
        """Ids the summary abstracts: the previous summary first, then the span."""
        head = (self.previous.id,) if self.previous is not None else ()
        return (*head, *(node.id for node in self.span))

    @property
    def summaries(self) -> tuple[SummaryNode, ...]:
        """Every summary the new one updates or absorbs, oldest first."""
        head = (self.previous,) if self.previous is not None else ()
        return (*head, *(n for n in self.span if isinstance(n, SummaryNode)))


def _is_own(node: Node, origin: str) -> bool:
    return isinstance(node, SummaryNode) and node.origin == origin and node.seq is None


def _transcript_id(node: Node, ctx: ProcessorContext) -> str | None:
    """The transcript node that `node` is or stands for (following `replaces`)."""
    current: Node | None = node
    for _ in range(64):
        if current is None:
            return None
        if current.seq is not None and current.id in ctx.graph:
            return current.id
        if current.replaces is None or current.replaces not in ctx.graph:
            return None
        current = ctx.graph[current.replaces]
    return None


def _group(nodes: Sequence[Node], ctx: ProcessorContext) -> list[tuple[Unit, list[Node]]] | str:
    """The targets grouped by unit, or why they are not whole units in order."""
    order = {unit.head: index for index, unit in enumerate(ctx.graph.units())}
    groups: list[tuple[Unit, list[Node], list[str]]] = []
    for node in nodes:
        # A working view knows the units of its current nodes (replacements included);
        # a plain graph only those of transcript nodes, reached through `replaces`.
        try:
            unit, tid = ctx.graph.unit_of(node.id), node.id
        except UnknownNodeError:
            if isinstance(node, SummaryNode) and node.seq is None:
                # It has a place only in a working view (a unit of its own); in a plain
                # graph it stands for nodes that are still there.
                return (
                    f"target {node.id} is a summary with no unit in this graph: a summary "
                    "may only lead the targets, or stand among them in a working view"
                )
            found = _transcript_id(node, ctx)
            if found is None:
                return f"target {node.id} is not in the graph's transcript"
            try:
                unit, tid = ctx.graph.unit_of(found), found
            except UnknownNodeError:
                return f"target {node.id} belongs to no interaction unit"
        if groups and groups[-1][0].head == unit.head:
            groups[-1][1].append(node)
            groups[-1][2].append(tid)
            continue
        if groups and order[unit.head] <= order[groups[-1][0].head]:
            return f"targets are not in transcript order (at {node.id})"
        groups.append((unit, [node], [tid]))
    for unit, _, ids in groups:
        if tuple(ids) != unit.node_ids:
            return (
                f"targets split unit {unit.head} ({len(ids)} of its {len(unit)} nodes); "
                "a summary abstracts whole units only"
            )
    return [(unit, members) for unit, members, _ in groups]


def _latest_own(summary: SummaryNode, origin: str, ctx: ProcessorContext) -> SummaryNode:
    """The newest summary of `origin` in the chain of rolling updates of `summary`."""
    current = summary
    for _ in range(10_000):
        newer = [
            node
            for s in ctx.graph.sources(current.id, "derived_from")
            if isinstance(node := ctx.graph[s], SummaryNode) and _is_own(node, origin)
        ]
        if not newer:
            break
        current = newer[-1]
    return current


def _summary_before(first: Unit, origin: str, ctx: ProcessorContext) -> SummaryNode | None:
    """A summary of `origin` that covers the unit just before `first`, if any."""
    units = ctx.graph.units()
    index = next(i for i, unit in enumerate(units) if unit.head == first.head)
    if index == 0:
        return None
    before = units[index - 1]
    if before.kind == "summary":
        # In a working view the earlier summary is a unit of its own.
        head = ctx.graph[before.head]
        if isinstance(head, SummaryNode) and _is_own(head, origin):
            return None if head.pinned else head
    for node_id in reversed(before.node_ids):
        for source in ctx.graph.sources(node_id, "derived_from"):
            node = ctx.graph[source]
            if isinstance(node, SummaryNode) and _is_own(node, origin):
                latest = _latest_own(node, origin, ctx)
                return None if latest.pinned else latest  # a pinned summary stays as it is
    return None


def _already_summarized(nodes: Sequence[Node], origin: str, ctx: ProcessorContext) -> str | None:
    for node in nodes:
        if node.id not in ctx.graph:
            continue
        for source in ctx.graph.sources(node.id, "derived_from"):
            if _is_own(ctx.graph[source], origin):
                return f"target {node.id} is already summarized by {source}"
    return None


def plan_targets(origin: str, targets: Sequence[Node], ctx: ProcessorContext) -> Plan | str:
    """The plan for summarizing `targets`, or the reason to refuse them."""
    if not targets:
        return "no targets"
    pinned = next((n for n in targets if n.pinned), None)
    if pinned is not None:
        return f"target {pinned.id} is pinned; pinned nodes are never summarized"
    previous: SummaryNode | None = None
    rest = list(targets)
    first = rest[0]
    if isinstance(first, SummaryNode) and _is_own(first, origin):
        previous, rest = first, rest[1:]
    if all(_is_own(n, origin) for n in rest):
        return "nothing newer than the previous summary"
    grouped = _group(rest, ctx)
    if isinstance(grouped, str):
        return grouped
    refusal = _already_summarized(rest, origin, ctx)
    if refusal is not None:
        return refusal
    if previous is None:
        previous = _summary_before(grouped[0][0], origin, ctx)
    units = tuple(tuple(members) for _, members in grouped)
    before = sum(ctx.count(n) for unit in units for n in unit)
    if previous is not None:
        before += ctx.count(previous)
    return Plan(previous, units, before)


def rolling_run(run: Sequence[Node]) -> tuple[Node, ...]:
    """What one summary takes of `run` (whole units in order): all of it, or nothing.

    A run holds earlier summaries when requests came between compactions (each request
    has the summary of the tool loop after it): the new summary absorbs every one of
    them with the requests between (`plan_targets`), so the past stays one summary and
    the view a long session keeps does not grow with its requests. A run of summaries
    alone holds nothing new (`()`), unless another tool wrote one of them as text (an
    imported compaction, `seq` set, no provider artifact): no brief of ours read it yet.
    """
    if all(node.kind == "summary" for node in run) and not any(map(imported_text, run)):
        return ()
    return tuple(run)


def imported_text(node: Node) -> bool:
    """Whether `node` is a summary another tool wrote as text: a brief of ours may take it.

    An imported compaction (`seq` set) with no provider artifact (`native`).
    """
    return isinstance(node, SummaryNode) and node.seq is not None and node.native is None
