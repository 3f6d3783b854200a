"""`ContextGraph`: the DAG of nodes built from agent events, and the queries on it.

Every edge points from a node to an older one (a result *answers* its call, a node
*follows* the one before it in the transcript, a newer read *supersedes* an older one),
so the graph is acyclic by construction; an explicit edge that would close a cycle is
refused with `CycleError`.

A `Withdrawal` takes recorded nodes out of every view (the units, the pairing, the open
calls, `covered`, the lookups by kind, tool, path and pin); lookups by id, `transcript()`,
iteration and the edges still reach them (`context_graph.graph.withdrawal`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from contextlib import nullcontext
from typing import Any, cast

import networkx as nx
from pydantic import JsonValue

from context_graph.errors import CycleError, DuplicateNodeError, GraphError, UnknownNodeError
from context_graph.graph.adders import EventAdders
from context_graph.graph.edges import EDGE_KINDS, EdgeKind, EdgeSet
from context_graph.graph.events import (
    AgentEvent,
    coerce_events,
)
from context_graph.graph.ingest import plan_ingest
from context_graph.graph.ingest_plan import IngestCursor, IngestPlan
from context_graph.graph.journal import IngestJournal
from context_graph.graph.node_tokens import NodeTokenCache
from context_graph.graph.nodes import Node, ToolCallNode
from context_graph.graph.units import Unit, UnitIndex
from context_graph.graph.withdrawal import prune, unpair
from context_graph.tokens.counting import TokenCounter, default_counter

__all__ = ["ContextGraph"]


class ContextGraph(EventAdders):
    """A DAG of context nodes, built from agent events.

    Ingest is atomic per batch: `ingest(events)` either adds every node and edge of the
    batch or raises `IngestError` and leaves the graph exactly as it was. Ingesting an
    event costs the size of the event: the queries it needs are indexed. The graph holds
    its edges in an `EdgeSet` and its interaction units in a `UnitIndex`; the `add_*`
    shorthands (`EventAdders`) only build an event and call `ingest`.

    Args:
        counter: The token counter; the offline `cl100k_base` tiktoken counter by default.
        journal: Where each ingested batch is recorded, as one step with its ingest (a
            session store's journal); `None` keeps the record in memory only. A graph
            with a journal refuses the edits it has no entry for (`add_derived`,
            `add_edge`).
    """

    def __init__(
        self, *, counter: TokenCounter | None = None, journal: IngestJournal | None = None
    ) -> None:
        self.token_cache = NodeTokenCache(counter or default_counter())
        self._journal = journal
        self._edges = EdgeSet()
        self._units = UnitIndex()
        self._nodes: dict[str, Node] = {}
        self._cursor = IngestCursor()
        self._derived: list[str] = []
        self._tokens: dict[str, int] = {}
        self._total_tokens = 0
        self._answer: dict[str, str] = {}
        self._call_of: dict[str, str] = {}
        self._units_cache: tuple[int, tuple[Unit, ...]] | None = None
        self._by_kind: dict[str, list[str]] = {}
        self._by_tool: dict[str, list[str]] = {}
        self._file_reads: dict[str, list[str]] = {}
        self._superseded: set[str] = set()
        self._pinned: list[str] = []
        self._turn = 0
        self._first_call: dict[str, str] = {}
        self._withdrawn: dict[str, None] = {}
        self._version = 0

    # -- ingest ------------------------------------------------------------------------

    def ingest(self, events: Iterable[AgentEvent | dict[str, Any]]) -> tuple[str, ...]:
        """Add a batch of events, whole or not at all; return the new node ids in order.

        Raises:
            IngestError: an event is malformed or inconsistent (names the event's place),
                or the journal cannot keep it; the graph is unchanged.
            StoreError: the journal cannot be written (checked before anything is added).
        """
        batch = coerce_events(events)
        journal = self._journal
        # Planned under the journal's lock: a plan is made against the graph as it is.
        with nullcontext() if journal is None else journal.ingesting(batch):
            plan = plan_ingest(self, self._cursor, batch)
            self._commit(plan)
        return tuple(plan.by_id)

    def check(self, events: Iterable[AgentEvent | dict[str, Any]]) -> None:
        """Raise the `IngestError` that ingesting `events` now would raise; add nothing."""
        plan_ingest(self, self._cursor, coerce_events(events))

    def add(self, event: AgentEvent | dict[str, Any]) -> tuple[str, ...]:
        """Add one event; return the ids of the nodes it made."""
        return self.ingest((event,))

    def add_derived(self, node: Node) -> str:
        """Add a node made by a processor (a summary, a masked copy) with its lineage edges.

        The node stays out of the transcript order; its `replaces` / `abstracts` ids must
        already be in the graph.

        Raises:
            DuplicateNodeError: the id is taken.
            UnknownNodeError: a lineage id is not in the graph.
            StoreError: the graph has a journal, which has no entry for a derived node.
        """
        if self._journal is not None:
            self._journal.refuse("add_derived")
        if node.id in self._nodes:
            msg = f"node id {node.id} is already in the graph"
            raise DuplicateNodeError(msg)
        sources = [*([node.replaces] if node.replaces else []), *node.abstracts]
        for source in sources:
            self._require(source)
        tokens = self.token_cache.count_node(node)
        self._insert(node, tokens)
        self._derived.append(node.id)
        for source in sources:
            self._link(node.id, source, "derived_from")
        return node.id

    def _commit(self, plan: IngestPlan) -> None:
        """Apply a validated plan. Nothing here can fail on a plan from `plan_ingest`."""
        if plan.withdrawn:
            # First: a result later in the batch may answer a call this opened again.
            self._withdraw(plan.withdrawn)
        nodes = plan.nodes
        self._insert_nodes(nodes, plan.tokens)
        self._cursor.advance(plan)
        self._units.extend(nodes, plan.unit_of)
        self._version += len(plan.edges)
        self._edges.link_new(plan.edges)
        for call_node, answer_node in plan.answers.items():
            self._answer[call_node] = answer_node
            self._call_of[answer_node] = call_node
        self._file_reads.update(plan.file_reads)
        self._superseded |= plan.superseded
        self._turn = plan.turn
        self._version += plan.version_credit

    def _withdraw(self, node_ids: Sequence[str]) -> None:
        """Take withdrawn nodes out of the units, the pairing and the lookups."""
        self._withdrawn.update(dict.fromkeys(node_ids))
        self._version += len(node_ids)
        self._units.withdraw(node_ids)
        unpair(node_ids, self._answer, self._call_of)
        gone = set(node_ids)
        for index in (self._by_kind, self._by_tool, self._file_reads):
            prune(index, gone, drop_empty=index is self._file_reads)
        self._pinned = [i for i in self._pinned if i not in gone]
        self._superseded -= {
            *gone,
            *(o for i in node_ids for o in self._edges.targets(i, "supersedes")
              if all(s in self._withdrawn for s in self._edges.sources(o, "supersedes"))),
        }  # fmt: skip

    def _insert(self, node: Node, tokens: int) -> None:
        self._insert_nodes((node,), {node.id: tokens})

    def _insert_nodes(self, nodes: Sequence[Node], tokens: dict[str, int]) -> None:
        """Add new nodes, in order, with their token counts (one networkx call for all)."""
        self._version += len(nodes)
        by_kind = self._by_kind
        total = self._total_tokens
        for node in nodes:
            node_id = node.id
            count = tokens[node_id]
            self._nodes[node_id] = node
            self._tokens[node_id] = count
            total += count
            by_kind.setdefault(node.kind, []).append(node_id)
            if isinstance(node, ToolCallNode):
                self._by_tool.setdefault(node.name, []).append(node_id)
                self._first_call.setdefault(node.tool_call_id, node_id)
            if node.pinned:
                self._pinned.append(node_id)
        self._total_tokens = total
        self._edges.add_nodes([node.id for node in nodes])

    # -- edges -------------------------------------------------------------------------

    def add_edge(self, source: str, target: str, kind: EdgeKind) -> None:
        """Add an edge `source -> target` of `kind` (from the newer node to the older).

        Raises:
            UnknownNodeError: an endpoint is not in the graph.
            CycleError: the edge would close a cycle; the graph is unchanged.
            GraphError: the kind is not one of `EDGE_KINDS`.
            StoreError: the graph has a journal, which has no entry for an explicit edge.
        """
        if self._journal is not None:
            self._journal.refuse("add_edge")
        if kind not in EDGE_KINDS:
            msg = f"unknown edge kind {kind!r}; expected one of {', '.join(EDGE_KINDS)}"
            raise GraphError(msg)
        self._require(source)
        self._require(target)
        if self._edges.closes_cycle(source, target):
            msg = f"edge {source} -> {target} ({kind}) would close a cycle"
            raise CycleError(msg)
        self._link(source, target, kind)

    def _link(self, source: str, target: str, kind: str) -> None:
        self._version += 1
        self._edges.link(source, target, kind)

    def edges(self, kind: EdgeKind | None = None) -> Iterator[tuple[str, str, str]]:
        """Iterate over `(source, target, kind)`, all kinds or one."""
        return self._edges.edges(kind)

    def targets(self, node_id: str, kind: EdgeKind) -> tuple[str, ...]:
        """The nodes that `node_id` points at by edges of `kind` (older nodes)."""
        self._require(node_id)
        return self._edges.targets(node_id, kind)

    def sources(self, node_id: str, kind: EdgeKind) -> tuple[str, ...]:
        """The nodes that point at `node_id` by edges of `kind` (newer nodes)."""
        self._require(node_id)
        return self._edges.sources(node_id, kind)

    @property
    def nx(self) -> nx.DiGraph:
        """A read-only networkx view of the structure (node ids; edges with `kinds`)."""
        return self._edges.view()

    # -- nodes -------------------------------------------------------------------------

    def _require(self, node_id: str) -> Node:
        node = self._nodes.get(node_id)
        if node is None:
            msg = f"node {node_id!r} is not in the graph"
            raise UnknownNodeError(msg)
        return node

    def __getitem__(self, node_id: str) -> Node:
        # `_require` inlined: this is the graph's hottest lookup.
        node = self._nodes.get(node_id)
        if node is None:
            msg = f"node {node_id!r} is not in the graph"
            raise UnknownNodeError(msg)
        return node

    def __contains__(self, node_id: object) -> bool:
        return node_id in self._nodes

    def __len__(self) -> int:
        return len(self._nodes)

    def __iter__(self) -> Iterator[Node]:
        return (self._nodes[i] for i in self._cursor.order)

    def get(self, node_id: str) -> Node | None:
        """The node with this id, or `None`."""
        return self._nodes.get(node_id)

    def transcript(self) -> tuple[str, ...]:
        """The ids of the transcript nodes in the order they happened."""
        return tuple(self._cursor.order)

    def covered(self, node_id: str) -> tuple[str, ...]:
        """The ids of every node that `node_id` stands for, in order.

        A summary a processor made stands for its `abstracts`. An imported compaction (a
        summary in the transcript) stands for every transcript node before it, although
        it abstracts only those since the previous compaction, that one first: the
        previous one stands for the rest. Any other node stands for its `abstracts` (none).
        """
        node = self._require(node_id)
        if node.kind == "summary" and node.seq is not None:
            found = self._cursor.order[: node.seq]
        else:
            found = list(node.abstracts)
        withdrawn = self._withdrawn
        return tuple(i for i in found if i not in withdrawn) if withdrawn else tuple(found)

    def is_withdrawn(self, node_id: str) -> bool:
        """Whether a `Withdrawal` took this recorded node out of every view."""
        return node_id in self._withdrawn

    def withdrawn(self) -> tuple[str, ...]:
        """The ids of the withdrawn nodes, in the order they were withdrawn."""
        return tuple(self._withdrawn)

    def derived(self) -> tuple[str, ...]:
        """The ids of nodes added by `add_derived`, oldest first."""
        return tuple(self._derived)

    def tokens(self, node_id: str) -> int:
        """The content tokens of one node (no per-message overhead)."""
        # `_tokens` has exactly the keys of `_nodes`, so this is `_require`'s check.
        tokens = self._tokens.get(node_id)
        if tokens is None:
            msg = f"node {node_id!r} is not in the graph"
            raise UnknownNodeError(msg)
        return tokens

    @property
    def total_tokens(self) -> int:
        """The content tokens of every node in the graph."""
        return self._total_tokens

    @property
    def version(self) -> int:
        """A counter that changes with every edit (renders are cached by it)."""
        return self._version

    def first_call_with_id(self, tool_call_id: str) -> str | None:
        """The node id of the earliest tool call that used `tool_call_id`, if any."""
        return self._first_call.get(tool_call_id)

    @property
    def turns(self) -> int:
        """How many user turns have been ingested."""
        return self._turn

    # -- units and pairing --------------------------------------------------------------

    def unit_of(self, node_id: str) -> Unit:
        """The interaction unit that holds `node_id`."""
        self._require(node_id)
        unit = self._units.unit_of(node_id)
        if unit is None:
            why = "was withdrawn" if node_id in self._withdrawn else "is derived"
            msg = f"node {node_id!r} {why} and belongs to no transcript unit"
            raise UnknownNodeError(msg)
        return unit

    def units(self) -> tuple[Unit, ...]:
        """Every interaction unit, in the order their heads happened."""
        cached = self._units_cache
        if cached is not None and cached[0] == self._version:
            return cached[1]
        units = self._units.units()
        self._units_cache = (self._version, units)
        return units

    def units_from(self, start: int) -> tuple[Unit, ...]:
        """`units()[start:]`, without a copy of the units before `start`.

        A reader that keeps up with the units as they come (the first request's tokens,
        say) reads only the new ones: a copy of every unit per request grew with the
        session.
        """
        return self._units.units_from(start)

    def units_newest_first(self) -> Iterator[Unit]:
        """The units from the newest back, without a copy of them all.

        For a reader that stops after a few (the latest user turn): `units()` copies the
        whole list once per version, a cost per request that grew with the session.
        Do not ingest while iterating.
        """
        return self._units.newest_first()

    @property
    def unit_mark(self) -> int:
        """A mark of the units as they are now, for `units_changed_since`."""
        return self._units.mark

    def units_changed_since(self, mark: int) -> tuple[str, ...]:
        """Heads of the units made or grown since `unit_mark` was `mark`, each once, in order.

        A unit only ever grows at its end, and new units come after every older one, so
        a consumer that kept the units at `mark` can bring them up to date from these.
        """
        return self._units.changed_since(mark)

    def units_reshaped_since(self, mark: int) -> bool:
        """Whether a withdrawal took units apart since `unit_mark` was `mark`.

        Then the units did more than grow at their ends: a consumer that kept them
        must read them afresh.
        """
        return self._units.reshaped_since(mark)

    def answer_to(self, call_node_id: str) -> Node | None:
        """The node that answers the tool call `call_node_id`, or `None` while it is open."""
        self._require(call_node_id)
        answer = self._answer.get(call_node_id)
        return self._nodes[answer] if answer is not None else None

    def call_of(self, answer_node_id: str) -> ToolCallNode | None:
        """The tool call that `answer_node_id` answers, or `None`."""
        self._require(answer_node_id)
        call = self._call_of.get(answer_node_id)
        return cast(ToolCallNode, self._nodes[call]) if call is not None else None

    def unanswered_calls(self) -> tuple[str, ...]:
        """Ids of tool-call nodes that have no result yet, in transcript order."""
        open_ids = [i for ids in self._cursor.open_calls.values() for i in ids]
        return tuple(sorted(open_ids, key=self._edges.rank.__getitem__))

    def is_superseded(self, node_id: str) -> bool:
        """Whether a later read of the same file covers this file node."""
        return node_id in self._superseded

    # -- lookups -------------------------------------------------------------------------

    def pinned(self) -> tuple[str, ...]:
        """Ids of pinned nodes, oldest first."""
        return tuple(self._pinned)

    def by_kind(self, kind: str) -> tuple[str, ...]:
        """Ids of nodes of one kind, oldest first."""
        return tuple(self._by_kind.get(kind, ()))

    def by_tool(self, name: str) -> tuple[str, ...]:
        """Ids of the tool-call nodes that called tool `name`, oldest first."""
        return tuple(self._by_tool.get(name, ()))

    def by_path(self, path: str) -> tuple[str, ...]:
        """Ids of the file nodes that read `path`, oldest first (version 1 first)."""
        return tuple(self._file_reads.get(path, ()))

    def files(self) -> tuple[str, ...]:
        """Every path that was read, in the order first read."""
        return tuple(self._file_reads)

    def meta_of(self, node_id: str) -> dict[str, JsonValue]:
        """A copy of a node's metadata."""
        return dict(self._require(node_id).meta)
