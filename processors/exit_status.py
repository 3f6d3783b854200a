"""The exit status a tool result carries, for the processors that read it.

A result's status is its typed `ToolResultNode.exit_code`, set by the agent loop or by an
importer whose source records one. Sessions stored before that field existed kept
mini-swe-agent's status in `meta["returncode"]`; it is still read, here and nowhere else.
"""

from __future__ import annotations

from context_graph.graph.nodes import Node, ToolResultNode

__all__ = ["exit_code_of"]

# Where the mini-swe-agent importer put the status before the typed field existed.
_LEGACY_META_KEY = "returncode"


def exit_code_of(node: Node) -> int | None:
    """The exit status `node` recorded; `None` when it recorded none."""
    if isinstance(node, ToolResultNode) and node.exit_code is not None:
        return node.exit_code
    legacy = node.meta.get(_LEGACY_META_KEY)
    if isinstance(legacy, int) and not isinstance(legacy, bool):
        return legacy
    return None
