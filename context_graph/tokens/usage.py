"""What a provider says a call used (`Usage`), and a session's sum of it (`UsageTotals`).

`read_usage(usage, shape)` reads one call's usage object, as the SDK's object or its dict
(the JSON the API sent), for each provider's shape:

- `openai` (chat, `CompletionUsage`): `prompt_tokens`, `completion_tokens`; cached from
  `prompt_tokens_details.cached_tokens`, cache writes from
  `prompt_tokens_details.cache_write_tokens`. The prompt count includes both.
- `responses` (`ResponseUsage`): `input_tokens`, `output_tokens`,
  `input_tokens_details.cached_tokens` and `.cache_write_tokens`; the input count
  includes both.
- `anthropic` (`Usage`, and a stream's `MessageDeltaUsage`): `input_tokens` leaves the
  cache reads (`cache_read_input_tokens`) and writes (`cache_creation_input_tokens`)
  out, so the prompt is the three summed; `output_tokens` is the completion.
- `gemini` (`GenerateContentResponseUsageMetadata`, snake_case or the API's camelCase):
  `prompt_token_count` (the cached content included), `cached_content_token_count`;
  the completion is `candidates_token_count` plus `thoughts_token_count` (thoughts are
  output the call is billed for). `tool_use_prompt_token_count` (what a server-side
  tool fed back) is not the prompt the caller sent and is left out.

No usage (`None`), or a usage without its prompt count, reads as `None`: the call says
nothing about its input. A count missing beside the prompt count reads as 0 (the APIs
leave zero counts out). A count that is not an int >= 0 (a bool, a float, a string, a
negative number), or cached tokens beyond the prompt, is an `IngestError` naming the
field: a wrong figure is never added to a session's totals.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, Self, TypeAlias

from pydantic import BaseModel, ConfigDict, Field, model_validator

from context_graph.errors import IngestError, SourceLocation

__all__ = ["Usage", "UsageShape", "UsageTotals", "read_usage"]

UsageShape: TypeAlias = Literal["openai", "responses", "anthropic", "gemini"]
"""Whose usage object it is (the Responses API's differs from chat's)."""

_COUNT = Field(default=0, ge=0, strict=True)


class Usage(BaseModel):
    """What one call used, as the provider reported it (`read_usage`)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    prompt_tokens: int = _COUNT
    """The whole input the provider counted, cached and cache-written tokens included."""
    completion_tokens: int = _COUNT
    """The output (reasoning and thoughts included)."""
    cached_tokens: int = _COUNT
    """Input tokens read from the provider's prompt cache."""
    cache_creation_tokens: int = _COUNT
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


class UsageTotals(Usage):
    """The usage of a session's calls, summed; the hit rate is over the whole session."""

    calls: int = _COUNT
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
    counts = _Counts(_mapping(data, where, "the usage"), where)
    if shape == "gemini":
        return _gemini(counts)
    if shape == "anthropic":
        return _anthropic(counts)
    if shape == "openai":
        return _openai(counts, "prompt_tokens", "completion_tokens", "prompt_tokens_details")
    return _openai(counts, "input_tokens", "output_tokens", "input_tokens_details")


class _Counts:
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

    def inner(self, key: str) -> _Counts:
        """The counts of a nested details object (none when it is absent)."""
        at = self._where.with_path(key)
        value = self._data.get(key)
        return _Counts({} if value is None else _mapping(value, at, f"`{at.path}`"), at)

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


def _openai(counts: _Counts, prompt: str, completion: str, details: str) -> Usage | None:
    """Chat's and the Responses API's usage: the prompt count includes the cache's."""
    inner = counts.inner(details)
    return counts.usage(
        counts.get(prompt),
        counts.get(completion) or 0,
        inner.get("cached_tokens") or 0,
        inner.get("cache_write_tokens") or 0,
    )


def _anthropic(counts: _Counts) -> Usage | None:
    """Anthropic's usage: `input_tokens` is only what the cache neither read nor wrote."""
    fresh = counts.get("input_tokens")
    read = counts.get("cache_read_input_tokens") or 0
    written = counts.get("cache_creation_input_tokens") or 0
    prompt = None if fresh is None else fresh + read + written
    return counts.usage(prompt, counts.get("output_tokens") or 0, read, written)


def _gemini(counts: _Counts) -> Usage | None:
    """Gemini's usage metadata, in either spelling: thoughts are output too."""
    candidates = counts.get("candidates_token_count", "candidatesTokenCount") or 0
    thoughts = counts.get("thoughts_token_count", "thoughtsTokenCount") or 0
    return counts.usage(
        counts.get("prompt_token_count", "promptTokenCount"),
        candidates + thoughts,
        counts.get("cached_content_token_count", "cachedContentTokenCount") or 0,
        0,  # Gemini's caches are made ahead of the call (`caches.create`), not by it
    )


def _mapping(value: object, where: SourceLocation, what: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        msg = f"{what} must be an SDK object or a dict, got {type(value).__name__}"
        raise IngestError(msg, where)
    return value
