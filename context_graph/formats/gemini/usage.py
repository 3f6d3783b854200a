"""Gemini's usage metadata (`GenerateContentResponseUsageMetadata`), read into a `Usage`.

Snake_case or the API's camelCase: `prompt_token_count` (the cached content included),
`cached_content_token_count`; the completion is `candidates_token_count` plus
`thoughts_token_count` (thoughts are output the call is billed for).
`tool_use_prompt_token_count` (what a server-side tool fed back) is not the prompt the
caller sent and is left out.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # only annotations: importing `context_graph.tokens` here would
    # reach `formats.wires` while it is being built (the tokens package reads it)
    from context_graph.tokens.usage_counts import Usage, UsageCounts

__all__ = ["is_gemini_usage", "read_gemini_usage"]

_GEMINI_PROMPT = frozenset({"prompt_token_count", "promptTokenCount"})


def read_gemini_usage(counts: UsageCounts) -> Usage | None:
    """Gemini's usage metadata, in either spelling: thoughts are output too."""
    candidates = counts.get("candidates_token_count", "candidatesTokenCount") or 0
    thoughts = counts.get("thoughts_token_count", "thoughtsTokenCount") or 0
    return counts.usage(
        counts.get("prompt_token_count", "promptTokenCount"),
        candidates + thoughts,
        counts.get("cached_content_token_count", "cachedContentTokenCount") or 0,
        0,  # Gemini's caches are made ahead of the call (`caches.create`), not by it
    )


def is_gemini_usage(usage: Mapping[str, Any]) -> bool:
    """Whether a usage object is Gemini's: `prompt_token_count` in either spelling.

    One that also counts `prompt_tokens` is left to Chat Completions, which claims it.
    """
    return not _GEMINI_PROMPT.isdisjoint(usage) and "prompt_tokens" not in usage
