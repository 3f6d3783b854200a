"""Chat Completions' usage object (`CompletionUsage`), read into a `Usage`.

`prompt_tokens`, `completion_tokens`; cached from `prompt_tokens_details.cached_tokens`,
cache writes from `prompt_tokens_details.cache_write_tokens`. The prompt count includes
both. The Responses API's object has the same structure under other names.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # only annotations: importing `context_graph.tokens` here would
    # reach `formats.wires` while it is being built (the tokens package reads it)
    from context_graph.tokens.usage_counts import Usage, UsageCounts

__all__ = ["is_chat_usage", "read_chat_usage", "read_openai_usage"]


def read_openai_usage(
    counts: UsageCounts, prompt: str, completion: str, details: str
) -> Usage | None:
    """An OpenAI usage object: the prompt count includes the cache's reads and writes."""
    inner = counts.inner(details)
    return counts.usage(
        counts.get(prompt),
        counts.get(completion) or 0,
        inner.get("cached_tokens") or 0,
        inner.get("cache_write_tokens") or 0,
    )


def read_chat_usage(counts: UsageCounts) -> Usage | None:
    """Chat Completions' usage (`None` without a prompt count)."""
    return read_openai_usage(counts, "prompt_tokens", "completion_tokens", "prompt_tokens_details")


def is_chat_usage(usage: Mapping[str, Any]) -> bool:
    """Whether a usage object is Chat Completions': it alone counts `prompt_tokens`."""
    return "prompt_tokens" in usage
