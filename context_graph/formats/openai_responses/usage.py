"""The Responses API's usage object (`ResponseUsage`), read into a `Usage`.

`input_tokens`, `output_tokens`, `input_tokens_details.cached_tokens` and
`.cache_write_tokens`; the input count includes both.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from context_graph.formats.openai_chat.usage import read_openai_usage

if TYPE_CHECKING:  # only annotations: importing `context_graph.tokens` here would
    # reach `formats.wires` while it is being built (the tokens package reads it)
    from context_graph.tokens.usage_counts import Usage, UsageCounts

__all__ = ["read_responses_usage"]


def read_responses_usage(counts: UsageCounts) -> Usage | None:
    """The Responses API's usage (`None` without an input count)."""
    return read_openai_usage(counts, "input_tokens", "output_tokens", "input_tokens_details")
