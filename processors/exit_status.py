"""The exit status an importer kept in a node's metadata, for the processors that read it.

mini-swe-agent and others record a command's status beside its output (`returncode`),
so the masker's placeholder and the summary's outcome both read it from there first.
"""

from __future__ import annotations

import re

from context_graph.graph.nodes import Node

__all__ = ["meta_exit_code"]

_EXIT_META_KEYS = ("returncode", "exit_code", "exitCode", "return_code")


def meta_exit_code(node: Node) -> int | None:
    """The exit status in `node.meta` (an int, or a string of digits); `None` without one."""
    for key in _EXIT_META_KEYS:
        value = node.meta.get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if isinstance(value, str) and re.fullmatch(r"-?\d+", value.strip()):
            return int(value)
    return None
