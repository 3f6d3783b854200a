"""The graph and what goes into it: nodes, agent events, their ingest, edges and units.

`context_graph.ContextGraph` is the pristine record of a session; the modules here are
its parts: `content` (the parts a message carries), `nodes` (the node kinds) and `ids`
(their deterministic ids), `events` (what an agent loop hands over, and `sdk_replies` /
`call_shapes` for the SDKs' own objects, asking each format how it reads its own, with
`reply_reader` the shapes of that answer), `ingest` (events to nodes, all or nothing),
`withdrawal` (what a `Withdrawal` may take out of every view), `edges` (the `EdgeSet` a
graph holds), `units` (the `UnitIndex` it holds) and `anchors`, `node_tokens` (what a
node costs), `stats` (a summary for `inspect`).
"""

from __future__ import annotations

from context_graph.graph.context_graph import ContextGraph
from context_graph.graph.edges import EDGE_KINDS, EdgeKind
from context_graph.graph.node_tokens import NodeTokenCache
from context_graph.graph.stats import GraphStats, graph_stats
from context_graph.graph.units import Unit

__all__ = [
    "EDGE_KINDS",
    "ContextGraph",
    "EdgeKind",
    "GraphStats",
    "NodeTokenCache",
    "Unit",
    "graph_stats",
]
