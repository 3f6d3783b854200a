"""Anthropic's usage object (`Usage`, and a stream's `MessageDeltaUsage`), read.

`input_tokens` leaves the cache reads (`cache_read_input_tokens`) and writes
(`cache_creation_input_tokens`) out, so the prompt is the three summed; `output_tokens`
is the completion.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # only annotations: importing `context_graph.tokens` here would
    # reach `formats.wires` while it is being built (the tokens package reads it)
    from context_graph.tokens.usage_counts import Usage, UsageCounts

__all__ = ["is_anthropic_usage", "read_anthropic_usage"]

# Keys of the other usage objects that hold `input_tokens` or a prompt count of their own.
_OTHERS = frozenset(
    {
        "cached_input_tokens",
        "input_tokens_details",
        "prompt_tokens",
        "prompt_token_count",
        "promptTokenCount",
    }
)


def read_anthropic_usage(counts: UsageCounts) -> Usage | None:
    """Anthropic's usage: `input_tokens` is only what the cache neither read nor wrote."""
    fresh = counts.get("input_tokens")
    read = counts.get("cache_read_input_tokens") or 0
    written = counts.get("cache_creation_input_tokens") or 0
    prompt = None if fresh is None else fresh + read + written
    return counts.usage(prompt, counts.get("output_tokens") or 0, read, written)


def is_anthropic_usage(usage: Mapping[str, Any]) -> bool:
    """Whether a usage object is Anthropic's: `input_tokens`, and no key another's has.

    The Responses API's usage counts `input_tokens` too (with `input_tokens_details`),
    and so do Codex CLI's running totals (with `cached_input_tokens`), which would count
    every call again; one that counts a prompt as Chat Completions or Gemini do is theirs.
    """
    return "input_tokens" in usage and _OTHERS.isdisjoint(usage)
