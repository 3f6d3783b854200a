"""Sessions of shell commands for the brief's tests, and reading one section of a brief."""

from __future__ import annotations

from typing import Any

from context_graph import ContextGraph
from context_graph.graph.nodes import Node

__all__ = ["add_bash", "section_items", "transcript"]


def add_bash(graph: ContextGraph, call: str, command: str, output: str, **flags: Any) -> None:
    """An assistant turn that runs `command` in `bash`, and its output (`flags`: the
    result's, such as `is_error`)."""
    graph.add_assistant(
        f"Running {command}.",
        tool_calls=[{"id": call, "name": "bash", "arguments": {"command": command}}],
    )
    graph.add_tool_result(call, output, **flags)


def transcript(graph: ContextGraph) -> list[Node]:
    """The graph's nodes in transcript order: the span a summary is given."""
    return [graph[i] for i in graph.transcript()]


def section_items(text: str, heading: str) -> list[str]:
    """The items (`- ` lines, without the dash) of the section under `heading`; empty
    when the brief has no such section."""
    lines = text.split("\n")
    if heading not in lines:
        return []
    start = lines.index(heading) + 1
    end = next((i for i in range(start, len(lines)) if not lines[i].startswith("- ")), len(lines))
    return [line[2:] for line in lines[start:end]]
