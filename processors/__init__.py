"""Processors: transformations of context nodes (distill, mask, summarize, truncate).

A processor reads target nodes and a context and returns a proposal; it never mutates
the graph. Exported here: the `Processor`, `Summarizer` and `Redactor` protocols and the
types of their contract, the built-in processors and summarizers, the registry that
finds processors by name, and `clear_caches`. Each family's text-level helpers
(`distill_text`, `redact_text`, ...) live in its module (`processors.distill`, ...).
See docs/writing-a-processor.md, docs/processors/ and docs/api.md.
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
    Redactor,
    Replace,
    Resizable,
    Restore,
    Scope,
    Summarizer,
    replace_each,
    replacement_for,
    run_processor,
    scope_of,
)
from processors.caches import clear_caches
from processors.distill import Distiller
from processors.mask import ObservationMasker
from processors.preamble_trees import PreambleTreeTrimmer
from processors.redact import SecretRedactor
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
)
from processors.thinking import ThinkingClearer
from processors.tool_inputs import ToolInputClearer
from processors.truncate import ToolOutputTruncator
from processors.urls import UrlShortener

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
    "PreambleTreeTrimmer",
    "Processor",
    "ProcessorContext",
    "Proposal",
    "Redactor",
    "Replace",
    "Resizable",
    "Restore",
    "Scope",
    "SecretRedactor",
    "Summarizer",
    "ThinkingClearer",
    "ToolInputClearer",
    "ToolOutputTruncator",
    "UrlShortener",
    "available_processors",
    "clear_caches",
    "create_processor",
    "get_processor",
    "register_processor",
    "replace_each",
    "replacement_for",
    "run_processor",
    "scope_of",
    "unregister_processor",
]
