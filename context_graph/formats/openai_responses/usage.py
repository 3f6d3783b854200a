"""The Responses API's usage object (`ResponseUsage`), read into a `Usage`.

`input_tokens`, `output_tokens`, `input_tokens_details.cached_tokens` and
`.cache_write_tokens`; the input count includes both.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from context_graph.formats.openai_chat.usage import read_openai_usage

if TYPE_CHECKING:  # only annotations: importing `context_graph.tokens` here would
    # reach `formats.wires` while it is being built (the tokens package reads it)
    from context_graph.tokens.usage_counts import Usage, UsageCounts

__all__ = ["is_responses_usage", "read_responses_usage"]

# The prompt counts of Chat Completions and of Gemini (in both its spellings).
_OTHER_PROMPTS = frozenset({"prompt_tokens", "prompt_token_count", "promptTokenCount"})


def read_responses_usage(counts: UsageCounts) -> Usage | None:
    """The Responses API's usage (`None` without an input count)."""
    return read_openai_usage(counts, "input_tokens", "output_tokens", "input_tokens_details")


def is_responses_usage(usage: Mapping[str, Any]) -> bool:
    """Whether a usage object is the Responses API's: `input_tokens_details` marks it.

    One that also counts a prompt as Chat Completions or Gemini do is left to them.
    """
    return "input_tokens_details" in usage and _OTHER_PROMPTS.isdisjoint(usage)
