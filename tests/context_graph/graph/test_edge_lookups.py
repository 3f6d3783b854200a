"""`EdgeSet.sources` and `targets` read the adjacency, as networkx's edge views list it."""

from __future__ import annotations

from typing import Any

import networkx as nx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from context_graph.graph.edges import EDGE_KINDS, EdgeSet


def _edge_set(edges: list[tuple[int, int, str]], size: int) -> EdgeSet:
    """An edge set of `size` nodes `n0..`, each edge from the newer node to the older."""
    made = EdgeSet()
    made.add_nodes([f"n{i}" for i in range(size)])
    for a, b, kind in edges:
        newer, older = max(a, b) % size, min(a, b) % size
        if newer != older:
            made.link(f"n{newer}", f"n{older}", kind)
    return made


_EDGES = st.lists(
    st.tuples(st.integers(0, 11), st.integers(0, 11), st.sampled_from(EDGE_KINDS)), max_size=40
)


class TestEdgeLookups:
    """What a node's sources and targets are, and what reading them costs."""

    def test_no_edge_view_is_built(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """Reading a node's sources and targets builds no networkx edge view."""
        edges = _edge_set([(3, 1, "follows"), (3, 1, "answers"), (2, 1, "derived_from")], 4)

        def refused(*_args: Any, **_kwargs: Any) -> Any:
            msg = "an edge view was built"
            raise AssertionError(msg)

        monkeypatch.setattr(nx.DiGraph, "in_edges", property(refused))
        monkeypatch.setattr(nx.DiGraph, "out_edges", property(refused))
        assert edges.sources("n1", "answers") == ("n3",)
        assert edges.sources("n1", "derived_from") == ("n2",)
        assert edges.targets("n3", "follows") == ("n1",)

    @settings(max_examples=200, deadline=None)
    @given(edges=_EDGES, size=st.integers(2, 12), kind=st.sampled_from(EDGE_KINDS))
    def test_same_as_the_edge_views(
        self, edges: list[tuple[int, int, str]], size: int, kind: Any
    ) -> None:
        """For every node and kind, the ids (in order) the edge views give."""
        made = _edge_set(edges, size)
        graph = made.view()
        for i in range(size):
            node = f"n{i}"
            into = graph.in_edges(node, data=True)
            out = graph.out_edges(node, data=True)
            assert made.sources(node, kind) == tuple(u for u, _, d in into if kind in d["kinds"])
            assert made.targets(node, kind) == tuple(v for _, v, d in out if kind in d["kinds"])
