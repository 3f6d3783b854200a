"""A summary of a graph: what `context-graph inspect` prints."""

from __future__ import annotations

from collections import Counter

from pydantic import BaseModel, ConfigDict, Field

from context_graph.graph.context_graph import ContextGraph
from context_graph.graph.nodes import AnswerNode, SubagentResultNode, UserNode

__all__ = ["GraphStats", "graph_stats"]


class GraphStats(BaseModel):
    """Counts that describe a graph at a glance."""

    model_config = ConfigDict(frozen=True)

    nodes: int
    """Transcript nodes (nodes added by processors are not counted)."""
    nodes_by_kind: dict[str, int]
    """Node counts per kind, kinds sorted by name."""
    total_tokens: int
    """Content tokens of the transcript nodes (no per-message overhead)."""
    tokens_by_kind: dict[str, int]
    """Content tokens per kind."""
    units: int
    """Interaction units (the atoms that are kept or dropped whole)."""
    user_turns: int
    """User turns (notices not counted)."""
    notices: int
    """User-role messages the agent harness wrote (`UserNode.notice`)."""
    tool_calls: int
    """Tool calls made."""
    tool_errors: int
    """Results that reported an error."""
    unanswered_calls: list[str]
    """Tool-call node ids that have no result."""
    files_read: dict[str, int]
    """Every path read, with how many times it was read."""
    subagents: list[str]
    """Sub-agent ids (or result node ids when the id is unknown), in order."""
    withdrawn: int = Field(default=0, exclude_if=lambda v: v == 0)
    """Nodes a `Withdrawal` took out of every view (none of the counts above holds
    them); left out of the JSON when none."""


def graph_stats(graph: ContextGraph) -> GraphStats:
    """Count what is in `graph`: kinds, tokens, units, calls, files and sub-agents."""
    kinds: Counter[str] = Counter()
    tokens: Counter[str] = Counter()
    errors = 0
    notices = 0
    subagents: list[str] = []
    withdrawn = 0
    for node in graph:
        if graph.is_withdrawn(node.id):
            withdrawn += 1
            continue
        kinds[node.kind] += 1
        tokens[node.kind] += graph.tokens(node.id)
        errors += isinstance(node, AnswerNode) and node.is_error
        notices += isinstance(node, UserNode) and node.notice
        if isinstance(node, SubagentResultNode):
            subagents.append(node.agent_id or node.id)
    return GraphStats(
        nodes=sum(kinds.values()),
        nodes_by_kind=dict(sorted(kinds.items())),
        total_tokens=sum(tokens.values()),
        tokens_by_kind=dict(sorted(tokens.items())),
        units=len(graph.units()),
        user_turns=graph.turns,
        notices=notices,
        tool_calls=kinds["tool_call"],
        tool_errors=errors,
        unanswered_calls=list(graph.unanswered_calls()),
        files_read={path: len(graph.by_path(path)) for path in graph.files()},
        subagents=subagents,
        withdrawn=withdrawn,
    )
