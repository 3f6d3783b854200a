"""Processors: transformations of context nodes (distill, mask, summarize, truncate).

A processor reads target nodes and returns a proposal; it never mutates the graph. The
built-in processors arrive with their own issue; this package already holds the layer's
place, so the import direction `orchestrator -> processors -> context_graph` is checked
from the start.
"""

from __future__ import annotations

__all__: list[str] = []
