"""Processors: transformations of context nodes (distill, mask, summarize, truncate).

A processor reads target nodes and a context and returns a proposal; it never mutates
the graph. See docs/writing-a-processor.md and docs/processors/.
"""

from __future__ import annotations

#: Marks this `__init__.py` as context-graph's (checked by `orchestrator._own`): a same-named
#: package of another distribution, installed into the same folder, replaces the file and the
#: mark.
__distribution__ = "context-graph"

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
    replace_each,
    replacement_for,
    run_processor,
)
from processors.caches import clear_caches
from processors.distill import Distiller, distill_text
from processors.mask import ObservationMasker
from processors.redact import SecretRedactor, find_secrets, redact_text
from processors.registry import (
    available_processors,
    create_processor,
    get_processor,
    register_processor,
    unregister_processor,
)
from processors.summarize import (
    AnthropicSummarizer,
    ExtractiveSummarizer,
    HistorySummarizer,
    OpenAISummarizer,
    check_candidate,
)
from processors.truncate import ToolOutputTruncator, truncate_text
from processors.urls import UrlShortener, restore_urls, shorten_urls

__all__ = [
    "Abstract",
    "AnthropicSummarizer",
    "Distiller",
    "Drop",
    "Edit",
    "ExtractiveSummarizer",
    "GraphView",
    "HistorySummarizer",
    "ObservationMasker",
    "OpenAISummarizer",
    "Processor",
    "ProcessorContext",
    "Proposal",
    "Replace",
    "SecretRedactor",
    "Summarizer",
    "ToolOutputTruncator",
    "UrlShortener",
    "available_processors",
    "check_candidate",
    "clear_caches",
    "create_processor",
    "distill_text",
    "find_secrets",
    "get_processor",
    "redact_text",
    "register_processor",
    "replace_each",
    "replacement_for",
    "restore_urls",
    "run_processor",
    "shorten_urls",
    "truncate_text",
    "unregister_processor",
]
