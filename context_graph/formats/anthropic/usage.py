"""Anthropic's usage object (`Usage`, and a stream's `MessageDeltaUsage`), read.

`input_tokens` leaves the cache reads (`cache_read_input_tokens`) and writes
(`cache_creation_input_tokens`) out, so the prompt is the three summed; `output_tokens`
is the completion.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # only annotations: importing `context_graph.tokens` here would
    # reach `formats.wires` while it is being built (the tokens package reads it)
    from context_graph.tokens.usage_counts import Usage, UsageCounts

__all__ = ["read_anthropic_usage"]


def read_anthropic_usage(counts: UsageCounts) -> Usage | None:
    """Anthropic's usage: `input_tokens` is only what the cache neither read nor wrote."""
    fresh = counts.get("input_tokens")
    read = counts.get("cache_read_input_tokens") or 0
    written = counts.get("cache_creation_input_tokens") or 0
    prompt = None if fresh is None else fresh + read + written
    return counts.usage(prompt, counts.get("output_tokens") or 0, read, written)
