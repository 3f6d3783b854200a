"""Summarize: abstract old interaction units into one rolling summary node.

`HistorySummarizer` is the processor; it asks a `Summarizer` for a candidate, checks it
(`checks`), retries once, and falls back to the deterministic `ExtractiveSummarizer`.
Model-backed summarizers for OpenAI-compatible endpoints and for Anthropic live in
`adapters` (optional extras). See docs/processors/summarize.md.
"""

from __future__ import annotations

from processors.summarize.adapters import AnthropicSummarizer, OpenAISummarizer
from processors.summarize.checks import (
    CandidateCheck,
    check_candidate,
    find_role_markup,
    find_tool_call_syntax,
    required_entities,
)
from processors.summarize.extractive import ExtractiveSummarizer
from processors.summarize.history import HistorySummarizer

__all__ = [
    "AnthropicSummarizer",
    "CandidateCheck",
    "ExtractiveSummarizer",
    "HistorySummarizer",
    "OpenAISummarizer",
    "check_candidate",
    "find_role_markup",
    "find_tool_call_syntax",
    "required_entities",
]
