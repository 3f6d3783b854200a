"""What a provider says a call used (`Usage`), and a session's sum of it (`UsageTotals`).

`read_usage(usage, shape)` reads one call's usage object, as the SDK's object or its dict
(the JSON the API sent), with the reader of the format named `shape` (its folder's
`usage` module says which fields it reads and how they add up).

No usage (`None`), or a usage without its prompt count, reads as `None`: the call says
nothing about its input. A count missing beside the prompt count reads as 0 (the APIs
leave zero counts out). A count that is not an int >= 0 (a bool, a float, a string, a
negative number), or cached tokens beyond the prompt, is an `IngestError` naming the
field: a wrong figure is never added to a session's totals.
"""

from __future__ import annotations

from typing import TypeAlias

from pydantic import BaseModel

from context_graph.errors import SourceLocation
from context_graph.formats.wires import WIRES, FormatName
from context_graph.tokens.usage_counts import COUNT_FIELD, Usage, UsageCounts, as_mapping

__all__ = ["Usage", "UsageShape", "UsageTotals", "read_usage"]

UsageShape: TypeAlias = FormatName
"""Whose usage object it is: a format's name (the Responses API's differs from chat's)."""


class UsageTotals(Usage):
    """The usage of a session's calls, summed; the hit rate is over the whole session."""

    calls: int = COUNT_FIELD
    """How many calls reported their usage."""

    def add(self, usage: Usage) -> UsageTotals:
        """These totals with one more call's `usage`."""
        return UsageTotals(
            calls=self.calls + 1,
            prompt_tokens=self.prompt_tokens + usage.prompt_tokens,
            completion_tokens=self.completion_tokens + usage.completion_tokens,
            cached_tokens=self.cached_tokens + usage.cached_tokens,
            cache_creation_tokens=self.cache_creation_tokens + usage.cache_creation_tokens,
        )


def read_usage(
    usage: object, shape: UsageShape, *, where: SourceLocation | None = None
) -> Usage | None:
    """One call's `Usage`, from the provider's usage object (`None`: it reports no input).

    Args:
        usage: The usage object (`response.usage`, Gemini's `response.usage_metadata`),
            as the SDK's object or its dict; `None` for a response without one.
        shape: Whose usage object it is.
        where: Where the usage object sits in its response, for the error's path.

    Raises:
        IngestError: a count is not an int >= 0, the cached tokens exceed the prompt,
            or `usage` is not an object; names the field.
    """
    where = where or SourceLocation()
    if usage is None:
        return None
    data = usage.model_dump(exclude_none=True) if isinstance(usage, BaseModel) else usage
    counts = UsageCounts(as_mapping(data, where, "the usage"), where)
    return WIRES[shape].read_usage(counts)
