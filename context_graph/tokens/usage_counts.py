"""What one call used (`Usage`), and checked reads of a usage object's counts.

The generic half of `context_graph.tokens.usage`: each format's folder reads its
provider's usage object with `UsageCounts` (`context_graph.formats.<folder>.usage`), and
`read_usage` picks the reader by the format's name. Nothing here names a format.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self

from pydantic import BaseModel, ConfigDict, Field, model_validator

from context_graph.errors import IngestError, SourceLocation

__all__ = ["COUNT_FIELD", "Usage", "UsageCounts", "as_mapping"]

#: A token count field: an int >= 0, 0 when absent.
COUNT_FIELD = Field(default=0, ge=0, strict=True)


class Usage(BaseModel):
    """What one call used, as the provider reported it (`read_usage`)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    prompt_tokens: int = COUNT_FIELD
    """The whole input the provider counted, cached and cache-written tokens included."""
    completion_tokens: int = COUNT_FIELD
    """The output (reasoning and thoughts included)."""
    cached_tokens: int = COUNT_FIELD
    """Input tokens read from the provider's prompt cache."""
    cache_creation_tokens: int = COUNT_FIELD
    """Input tokens written to the prompt cache (Anthropic's cache creation, OpenAI's
    cache writes); 0 where the provider does not say."""

    @model_validator(mode="after")
    def _cache_within_prompt(self) -> Self:
        # Cached tokens are part of the prompt; more of them would put the hit rate above 1.
        if self.cached_tokens + self.cache_creation_tokens > self.prompt_tokens:
            msg = (
                f"cached ({self.cached_tokens}) and cache-creation "
                f"({self.cache_creation_tokens}) tokens exceed the prompt's "
                f"{self.prompt_tokens}"
            )
            raise ValueError(msg)
        return self

    @property
    def total_tokens(self) -> int:
        """Prompt plus completion tokens."""
        return self.prompt_tokens + self.completion_tokens

    @property
    def cache_hit_rate(self) -> float | None:
        """Cached input over input, in [0, 1] (`None` without input tokens)."""
        return self.cached_tokens / self.prompt_tokens if self.prompt_tokens else None


class UsageCounts:
    """Checked reads of the counts in one usage object."""

    def __init__(self, data: Mapping[str, Any], where: SourceLocation) -> None:
        self._data = data
        self._where = where

    def get(self, *keys: str) -> int | None:
        """The count under the first of `keys` present (`None`: none is, or it is null)."""
        for key in keys:
            value = self._data.get(key)
            if value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                at = self._where.with_path(key)
                msg = f"`{at.path}` must be a count of tokens (an int >= 0), got {value!r}"
                raise IngestError(msg, at)
            return value
        return None

    def inner(self, key: str) -> UsageCounts:
        """The counts of a nested details object (none when it is absent)."""
        at = self._where.with_path(key)
        value = self._data.get(key)
        return UsageCounts({} if value is None else as_mapping(value, at, f"`{at.path}`"), at)

    def usage(self, prompt: int | None, completion: int, cached: int, written: int) -> Usage | None:
        """The `Usage` of these counts (`None` without a prompt count)."""
        if prompt is None:
            return None
        if cached + written > prompt:
            msg = (
                f"the usage does not add up: cached ({cached}) and cache-written ({written}) "
                f"tokens exceed the prompt's {prompt}"
            )
            raise IngestError(msg, self._where)
        return Usage(
            prompt_tokens=prompt,
            completion_tokens=completion,
            cached_tokens=cached,
            cache_creation_tokens=written,
        )


def as_mapping(value: object, where: SourceLocation, what: str) -> Mapping[str, Any]:
    """`value` as a mapping, or an `IngestError` naming `what` at `where`."""
    if not isinstance(value, Mapping):
        msg = f"{what} must be an SDK object or a dict, got {type(value).__name__}"
        raise IngestError(msg, where)
    return value
