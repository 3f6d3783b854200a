"""What an ingest plans and where it stands: `IngestPlan`, `IngestCursor`, `PlannedGraph`.

The planner (`context_graph.graph.ingest`) fills a plan against a graph it only reads
(`PlannedGraph`) and the graph's cursor; the graph commits the plan and advances the
cursor, in one step, so a batch that fails to plan changes nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from context_graph.graph.node_tokens import NodeTokenCache
from context_graph.graph.nodes import Node, ToolCallNode
from context_graph.graph.units import Unit

__all__ = ["Edge", "IngestCursor", "IngestPlan", "PlannedGraph"]

Edge = tuple[str, str, str]


@dataclass(slots=True)
class IngestPlan:
    """Everything one batch adds, ready to be committed in one step."""

    nodes: list[Node] = field(default_factory=list)
    edges: list[Edge] = field(default_factory=list)
    tokens: dict[str, int] = field(default_factory=dict)
    open_calls: dict[str, list[str]] = field(default_factory=dict)
    """Overlay: the full new list of open call nodes for every call id touched."""
    answers: dict[str, str] = field(default_factory=dict)
    """New call node -> answer node pairs."""
    unit_of: dict[str, str] = field(default_factory=dict)
    """New node -> the head of its interaction unit."""
    file_reads: dict[str, list[str]] = field(default_factory=dict)
    """Overlay: the full new list of read nodes for every path touched."""
    superseded: set[str] = field(default_factory=set)
    answered_ids: set[str] = field(default_factory=set)
    """Call ids that got a result in this batch."""
    first_calls: dict[str, str] = field(default_factory=dict)
    """Call id -> the first call node using it, for ids new in this batch."""
    seq: int = 0
    turn: int = 0
    last_id: str | None = None
    compaction: str | None = None
    """The newest imported compaction (summary node in the transcript), if any."""
    version_credit: int = 0
    """Version steps for the `derived_from` edges the compactions no longer hold.

    A compaction used to hold an edge to every earlier node, and the graph's version
    counted each; it still counts them (one per node before the previous compaction),
    so that versions recorded in session files (audit entries) replay the same.
    """
    by_id: dict[str, Node] = field(default_factory=dict)
    """Every node of `nodes` by id, in the same order."""
    withdrawn: list[str] = field(default_factory=list)
    """Recorded nodes the batch's withdrawals take out of every view, in order."""


@dataclass(slots=True)
class IngestCursor:
    """Where ingest stands in a graph, between batches.

    What the planner needs that no query of the graph gives without a copy. The graph
    holds one, hands it to `plan_ingest`, and moves it on with `advance` when it commits
    a plan.
    """

    order: list[str] = field(default_factory=list)
    """The transcript's node ids, in order."""
    open_calls: dict[str, list[str]] = field(default_factory=dict)
    """Call id -> the call nodes with that id still waiting for a result, oldest first."""
    answered_ids: set[str] = field(default_factory=set)
    """Call ids that got a result."""
    next_seq: int = 0
    """The position of the next transcript node."""
    last_id: str | None = None
    """The newest transcript node."""
    compaction: str | None = None
    """The newest imported compaction: the next one abstracts the nodes since it."""

    def advance(self, plan: IngestPlan) -> None:
        """Move on past a committed plan."""
        self.order.extend(node.id for node in plan.nodes)
        for call_id, open_ids in plan.open_calls.items():
            if open_ids:
                self.open_calls[call_id] = open_ids
            else:
                self.open_calls.pop(call_id, None)
        self.answered_ids |= plan.answered_ids
        self.next_seq = plan.seq
        self.last_id = plan.last_id
        self.compaction = plan.compaction


class PlannedGraph(Protocol):
    """The queries the planner asks of the graph it plans against (a `ContextGraph`)."""

    @property
    def turns(self) -> int:
        """User turns so far."""

    @property
    def token_cache(self) -> NodeTokenCache:
        """The graph's node token counts."""

    def __getitem__(self, node_id: str) -> Node: ...

    def __contains__(self, node_id: object) -> bool: ...

    def by_path(self, path: str) -> tuple[str, ...]:
        """The reads of a file path, oldest first."""

    def unit_of(self, node_id: str) -> Unit:
        """The interaction unit a node belongs to."""

    def first_call_with_id(self, tool_call_id: str) -> str | None:
        """The first call node with a tool-call id, if any."""

    def is_superseded(self, node_id: str) -> bool:
        """Whether a later read of the same file covers the node."""

    def is_withdrawn(self, node_id: str) -> bool:
        """Whether a withdrawal took the node out of every view."""

    def answer_to(self, call_node_id: str) -> Node | None:
        """The node answering a call node, or `None` while it is open."""

    def call_of(self, answer_node_id: str) -> ToolCallNode | None:
        """The call node an answer node answers, or `None`."""

    def by_kind(self, kind: str) -> tuple[str, ...]:
        """The node ids of one kind, oldest first."""
