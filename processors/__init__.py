"""Processors: transformations of context nodes (distill, mask, summarize, truncate).

A processor reads target nodes and a context and returns a proposal; it never mutates
the graph. See docs/writing-a-processor.md.
"""

from __future__ import annotations

from processors.base import (
    Abstract,
    Drop,
    Edit,
    GraphView,
    Processor,
    ProcessorContext,
    Proposal,
    Replace,
    Summarizer,
    replacement_for,
    run_processor,
)
from processors.registry import available, create, get, register

__all__ = [
    "Abstract",
    "Drop",
    "Edit",
    "GraphView",
    "Processor",
    "ProcessorContext",
    "Proposal",
    "Replace",
    "Summarizer",
    "available",
    "create",
    "get",
    "register",
    "replacement_for",
    "run_processor",
]
