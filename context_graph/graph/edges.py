"""`EdgeSet`: the typed edges among a graph's nodes, acyclic by construction.

`ContextGraph` holds one and hands it node ids it has already checked. Every edge points
from a node to an older one, so insertion rank is a topological order while no edge
points forward, and most edges are checked without a search.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Literal, TypeAlias, cast

import networkx as nx

__all__ = ["EDGE_KINDS", "EdgeKind", "EdgeSet"]

EdgeKind: TypeAlias = Literal[
    "follows", "issued_by", "answers", "derived_from", "supersedes", "spawned_by"
]
#: Every edge kind, each pointing from the newer node to the older one.
EDGE_KINDS: tuple[str, ...] = (
    "follows",
    "issued_by",
    "answers",
    "derived_from",
    "supersedes",
    "spawned_by",
)


class EdgeSet:
    """The nodes' insertion ranks and the edges between them, each pair's kinds merged.

    It knows node ids only: whether an id names a node, and whether a kind is one of
    `EDGE_KINDS`, is checked by the graph before it asks.
    """

    __slots__ = ("_forward_edges", "_g", "_rank")

    def __init__(self) -> None:
        self._g: nx.DiGraph = nx.DiGraph()
        self._rank: dict[str, int] = {}
        self._forward_edges = 0

    @property
    def rank(self) -> Mapping[str, int]:
        """Each node's insertion rank (0 for the first node added)."""
        return self._rank

    def add_nodes(self, node_ids: Sequence[str]) -> None:
        """Add new nodes, in order, after every node added before (one networkx call)."""
        rank = self._rank
        for node_id in node_ids:
            rank[node_id] = len(rank)
        if node_ids:  # as adding them one by one, an empty batch leaves networkx untouched
            self._g.add_nodes_from(node_ids)

    def closes_cycle(self, source: str, target: str) -> bool:
        """Whether an edge `source -> target` would close a cycle."""
        return source == target or (
            not self._points_back(source, target) and nx.has_path(self._g, target, source)
        )

    def _points_back(self, source: str, target: str) -> bool:
        """True when the edge provably cannot close a cycle without a search.

        While every edge points from a newer to an older node, insertion rank is a
        topological order, and another such edge keeps it one.
        """
        return self._forward_edges == 0 and self._rank[source] > self._rank[target]

    def link(self, source: str, target: str, kind: str) -> None:
        """Add the edge `source -> target` of `kind` (no checks: see `closes_cycle`)."""
        if self._rank[source] < self._rank[target]:
            self._forward_edges += 1
        data = self._g.get_edge_data(source, target)
        if data is None:
            self._g.add_edge(source, target, kinds=(kind,))
        elif kind not in data["kinds"]:
            data["kinds"] = (*data["kinds"], kind)

    def link_new(self, edges: Sequence[tuple[str, str, str]]) -> None:
        """`link` each edge of a plan in order (every source is new in this commit).

        No edge can leave a node before the node is added, so an edge's kinds are only
        merged with those of the same pair earlier in `edges`, and networkx is asked to
        add each pair once, with no lookup first, in the order each pair first appears
        (so that adjacency order matches linking the edges one by one). A plan's edges
        all point from a node to one added before it, so none is a forward edge.
        """
        merged: dict[tuple[str, str], tuple[str, ...]] = {}
        for source, target, kind in edges:
            kinds = merged.get((source, target), ())
            if kind not in kinds:
                merged[source, target] = (*kinds, kind)
        add_edge = self._g.add_edge
        for (source, target), kinds in merged.items():
            add_edge(source, target, kinds=kinds)

    def edges(self, kind: EdgeKind | None = None) -> Iterator[tuple[str, str, str]]:
        """Iterate over `(source, target, kind)`, all kinds or one."""
        for u, v, data in self._g.edges(data=True):
            for k in data["kinds"]:
                if kind is None or k == kind:
                    yield u, v, k

    # `targets` and `sources` read networkx's adjacency dicts (`succ`, `pred`) in the order
    # `out_edges` / `in_edges` give them, without building an edge view per call: the
    # processors ask for a node's sources once per target at every compaction.

    def targets(self, node_id: str, kind: EdgeKind) -> tuple[str, ...]:
        """The nodes that `node_id` points at by edges of `kind` (older nodes)."""
        return tuple(v for v, d in self._g.succ[node_id].items() if kind in d["kinds"])

    def sources(self, node_id: str, kind: EdgeKind) -> tuple[str, ...]:
        """The nodes that point at `node_id` by edges of `kind` (newer nodes)."""
        return tuple(u for u, d in self._g.pred[node_id].items() if kind in d["kinds"])

    def view(self) -> nx.DiGraph:
        """A read-only networkx view of the structure (node ids; edges with `kinds`)."""
        return cast(nx.DiGraph, self._g.copy(as_view=True))
