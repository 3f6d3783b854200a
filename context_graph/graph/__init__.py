"""The graph and what goes into it: nodes, agent events, their ingest, edges and units.

`context_graph.ContextGraph` is the pristine record of a session; the modules here are
its parts: `nodes` (the node kinds), `events` (what an agent loop hands over, and
`sdk_replies` / `call_shapes` for the SDKs' own objects), `ingest` (events to nodes, all
or nothing), `edges` and `anchors` (how nodes relate), `stats` (a summary for `inspect`).
"""

from __future__ import annotations

from context_graph.graph.context_graph import EDGE_KINDS, ContextGraph, EdgeKind, Unit
from context_graph.graph.stats import GraphStats, graph_stats

__all__ = ["EDGE_KINDS", "ContextGraph", "EdgeKind", "GraphStats", "Unit", "graph_stats"]
