"""Planning a `Withdrawal`: which recorded nodes leave every view, and which calls open again.

A withdrawal is a recorded event like any other (the session store journals it with
its batch), but it adds no node: it names nodes recorded before its batch, and from
then on the graph leaves them out of its units, its pairing and its lookups
(`ContextGraph.is_withdrawn`). The record keeps them.

What may be withdrawn keeps every view valid:

- a tool call goes with its answer (a call whose answer stays is refused); withdrawing
  the answer alone opens the call again, so it renders as a call without a result (the
  placeholder the renderer sends for any open call) until another result answers it;
- an assistant turn goes with its tool calls;
- a node that an imported compaction recorded after it stands for is refused while that
  compaction stays: the compaction's summary may hold its content.

`plan_withdrawal` checks a withdrawal against the graph and the batch planned so far,
raising `IngestError` on the first node it refuses, and records the change in the plan:
its `withdrawn` ids, and the open calls (`open_calls`) that the answers it withdraws
open again or the open calls it withdraws close.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from typing import cast

from context_graph.errors import IngestError
from context_graph.graph.events import Withdrawal
from context_graph.graph.ingest_plan import IngestPlan, PlannedGraph
from context_graph.graph.nodes import AnswerNode, AssistantNode, Node, ToolCallNode

__all__ = ["plan_withdrawal", "prune", "unpair"]


def plan_withdrawal(
    event: Withdrawal,
    graph: PlannedGraph,
    plan: IngestPlan,
    open_calls: Callable[[str], list[str]],
) -> None:
    """Check `event` and record what it changes in `plan`.

    Args:
        event: The withdrawal.
        graph: The graph the batch is planned against.
        plan: The batch planned so far (its new nodes cannot be withdrawn in it).
        open_calls: The open call nodes of a call id, the plan's changes included.

    Raises:
        IngestError: a node is refused (the reason names it and what to do instead).
    """
    nodes = [_withdrawable(graph, plan, node_id) for node_id in event.node_ids]
    taken = {*event.node_ids, *plan.withdrawn}
    for node in nodes:
        _check_pairs(graph, plan, node, taken)
    _check_compactions(graph, nodes, taken)
    for node in nodes:
        call = graph.call_of(node.id) if isinstance(node, AnswerNode) else None
        if call is not None and call.id not in taken:
            # Its answer is gone: the call waits for a result again, in call order.
            waiting = {*open_calls(call.tool_call_id), call.id}
            plan.open_calls[call.tool_call_id] = sorted(waiting, key=lambda i: _seq(graph[i]))
    for node in nodes:
        if isinstance(node, ToolCallNode) and node.id in open_calls(node.tool_call_id):
            rest = [i for i in open_calls(node.tool_call_id) if i != node.id]
            plan.open_calls[node.tool_call_id] = rest
    plan.withdrawn.extend(event.node_ids)


def _withdrawable(graph: PlannedGraph, plan: IngestPlan, node_id: str) -> Node:
    """The recorded node `node_id`, or the error that it cannot be withdrawn at all."""
    if node_id in plan.by_id:
        msg = (
            f"withdrawal: node `{node_id}` is recorded in this same batch; withdraw it in "
            f"a batch of its own after it"
        )
        raise IngestError(msg)
    if node_id not in graph:
        msg = f"withdrawal: no node has id `{node_id}`; name nodes of the pristine record"
        raise IngestError(msg)
    node = graph[node_id]
    if node.seq is None:
        msg = (
            f"withdrawal: node `{node_id}` was made by a processor, not recorded; withdraw "
            f"the recorded nodes it stands for"
        )
        raise IngestError(msg)
    if graph.is_withdrawn(node_id) or node_id in plan.withdrawn:
        msg = f"withdrawal: node `{node_id}` is withdrawn already"
        raise IngestError(msg)
    return node


def _check_pairs(graph: PlannedGraph, plan: IngestPlan, node: Node, taken: Collection[str]) -> None:
    """Refuse a call whose answer stays, and an assistant turn whose calls stay."""
    if isinstance(node, ToolCallNode):
        if node.id in plan.answers:
            msg = (
                f"withdrawal: tool call `{node.tool_call_id}` (node `{node.id}`) is answered "
                f"in this same batch; withdraw both in a batch of their own after it"
            )
            raise IngestError(msg)
        answer = graph.answer_to(node.id)
        if answer is not None and answer.id not in taken:
            msg = (
                f"withdrawal: tool call `{node.tool_call_id}` (node `{node.id}`) keeps its "
                f"answer `{answer.id}`; withdraw the answer with it, or the answer alone"
            )
            raise IngestError(msg)
    elif isinstance(node, AssistantNode):
        for member in graph.unit_of(node.id).node_ids:
            call = graph[member]
            if isinstance(call, ToolCallNode) and call.assistant_id == node.id:
                if member not in taken:
                    msg = (
                        f"withdrawal: assistant turn `{node.id}` keeps its tool call "
                        f"`{call.tool_call_id}` (node `{member}`); withdraw its calls and "
                        f"their answers with it"
                    )
                    raise IngestError(msg)


def _check_compactions(graph: PlannedGraph, nodes: list[Node], taken: Collection[str]) -> None:
    """Refuse a node that an imported compaction after it still stands for."""
    newest: Node | None = None
    for summary_id in graph.by_kind("summary"):
        summary = graph[summary_id]
        if summary.seq is not None and summary_id not in taken:
            if not graph.is_withdrawn(summary_id):
                newest = summary
    if newest is None:
        return
    for node in nodes:
        if _seq(node) < _seq(newest):
            msg = (
                f"withdrawal: node `{node.id}` is covered by the compaction `{newest.id}` "
                f"recorded after it, whose summary may hold its content; withdraw the "
                f"compaction with it (or first)"
            )
            raise IngestError(msg)


def _seq(node: Node) -> int:
    return cast(int, node.seq)


def unpair(node_ids: Sequence[str], answer: dict[str, str], call_of: dict[str, str]) -> None:
    """Forget the pairs withdrawn nodes were in (`answer`: call -> answer, `call_of`).

    A withdrawn call goes with its answer; a withdrawn answer leaves its call open.
    """
    for node_id in node_ids:
        answered = answer.pop(node_id, None)
        if answered is not None:
            call_of.pop(answered, None)
        call = call_of.pop(node_id, None)
        if call is not None:
            answer.pop(call, None)


def prune(index: dict[str, list[str]], gone: set[str], *, drop_empty: bool) -> None:
    """Take `gone` out of a lookup's lists (a key left without ids goes with `drop_empty`)."""
    for key, ids in list(index.items()):
        if gone.isdisjoint(ids):
            continue
        index[key] = [i for i in ids if i not in gone]
        if drop_empty and not index[key]:
            del index[key]
