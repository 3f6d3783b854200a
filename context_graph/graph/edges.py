"""The edges of `ContextGraph`: adding them (acyclic by construction) and reading them.

Mixed into `ContextGraph`, which owns the attributes declared below. Every edge points
from a node to an older one, so insertion rank is a topological order while no edge
points forward, and most edges are checked without a search.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Literal, TypeAlias, cast

import networkx as nx

from context_graph.errors import CycleError, GraphError
from context_graph.graph.nodes import Node

__all__ = ["EDGE_KINDS", "EdgeKind", "EdgeMethods"]

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


class EdgeMethods:
    """Edge insertion and queries; mixed into `ContextGraph`."""

    _g: nx.DiGraph
    _rank: dict[str, int]
    _forward_edges: int
    _version: int
    _require: Callable[[str], Node]

    def add_edge(self, source: str, target: str, kind: EdgeKind) -> None:
        """Add an edge `source -> target` of `kind` (from the newer node to the older).

        Raises:
            UnknownNodeError: an endpoint is not in the graph.
            CycleError: the edge would close a cycle; the graph is unchanged.
            GraphError: the kind is not one of `EDGE_KINDS`.
        """
        if kind not in EDGE_KINDS:
            msg = f"unknown edge kind {kind!r}; expected one of {', '.join(EDGE_KINDS)}"
            raise GraphError(msg)
        self._require(source)
        self._require(target)
        if source == target or (
            not self._points_back(source, target) and (nx.has_path(self._g, target, source))
        ):
            msg = f"edge {source} -> {target} ({kind}) would close a cycle"
            raise CycleError(msg)
        self._link(source, target, kind)

    def _points_back(self, source: str, target: str) -> bool:
        """True when the edge provably cannot close a cycle without a search.

        While every edge points from a newer to an older node, insertion rank is a
        topological order, and another such edge keeps it one.
        """
        return self._forward_edges == 0 and self._rank[source] > self._rank[target]

    def _link(self, source: str, target: str, kind: str) -> None:
        self._version += 1
        if self._rank[source] < self._rank[target]:
            self._forward_edges += 1
        data = self._g.get_edge_data(source, target)
        if data is None:
            self._g.add_edge(source, target, kinds=(kind,))
        elif kind not in data["kinds"]:
            data["kinds"] = (*data["kinds"], kind)

    def _link_new(self, edges: Sequence[tuple[str, str, str]]) -> None:
        """`_link` each edge of a plan in order (every source is new in this commit).

        No edge can leave a node before the node is added, so an edge's kinds are only
        merged with those of the same pair earlier in `edges`, and networkx is asked to
        add each pair once, with no lookup first, in the order each pair first appears
        (so that adjacency order matches linking the edges one by one). A plan's edges
        all point from a node to one added before it, so none is a forward edge.
        """
        self._version += len(edges)
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

    def targets(self, node_id: str, kind: EdgeKind) -> tuple[str, ...]:
        """The nodes that `node_id` points at by edges of `kind` (older nodes)."""
        self._require(node_id)
        return tuple(v for _, v, d in self._g.out_edges(node_id, data=True) if kind in d["kinds"])

    def sources(self, node_id: str, kind: EdgeKind) -> tuple[str, ...]:
        """The nodes that point at `node_id` by edges of `kind` (newer nodes)."""
        self._require(node_id)
        return tuple(u for u, _, d in self._g.in_edges(node_id, data=True) if kind in d["kinds"])

    @property
    def nx(self) -> nx.DiGraph:
        """A read-only networkx view of the structure (node ids; edges with `kinds`)."""
        return cast(nx.DiGraph, self._g.copy(as_view=True))
