"""Input dollars of a request under its provider's prompt caching.

The price rules live here, apart from their users: the HTML replay report
(`orchestrator.report`) and the benchmarks bill requests with them, and the cost guard
(`orchestrator.compaction.cost_guard`) weighs a compaction with them before it lands.

Every provider bills a request's input by what its prompt cache can serve: the leading
part equal to a recent request's. Given a request's tokens and how many of them lead
the previous request too, `call_dollars` applies the provider's rule:

- **Anthropic**, the whole prompt cached at every call (a breakpoint on the last
  message): the reused prefix is a cache read (0.1x the input price), the rest a cache
  write (1.25x, the five-minute cache), once the prompt is long enough to be cached at
  all (1,024 tokens); shorter prompts are plain input.
- **OpenAI** (Chat Completions and Responses), automatic caching: a reused prefix of at
  least 1,024 tokens is served in steps of 128 tokens at the cached-input price (0.1x);
  no write surcharge.
- **Gemini**, implicit caching: a reused prefix of at least 4,096 tokens (Gemini 3
  models) is billed at 0.1x; no write surcharge and no storage for implicit caches.

The multipliers and thresholds are the providers' published rules as of 2026; the input
prices are one current model of each, per million tokens. They scale totals; the ratio
between two ways of sending the same session does not depend on them.
"""

from __future__ import annotations

from dataclasses import dataclass

from context_graph.tokens.counting import ProviderFormat

__all__ = ["PRICES", "CachePrice", "call_dollars", "price_for"]


@dataclass(frozen=True)
class CachePrice:
    """How one provider bills a request's input with its prompt cache."""

    provider: str
    model: str
    input_per_million: float
    read: float
    """Price of a cached token, as a multiple of the input price."""
    write: float
    """Price of a token written to the cache, as a multiple (1.0: no surcharge)."""
    minimum: int
    """The shortest prefix the cache serves (and, with a surcharge, writes)."""
    step: int = 1
    """Cached prefixes are served in multiples of this many tokens."""


PRICES: tuple[CachePrice, ...] = (
    CachePrice("Anthropic", "Claude Sonnet 4.5", 3.00, read=0.1, write=1.25, minimum=1024),
    CachePrice("OpenAI", "GPT-5.4", 2.50, read=0.1, write=1.0, minimum=1024, step=128),
    CachePrice("Gemini", "Gemini 3 Pro", 2.00, read=0.1, write=1.0, minimum=4096),
)

_BY_FORMAT: dict[str, str] = {
    "anthropic": "Anthropic",
    "openai": "OpenAI",
    "responses": "OpenAI",
    "gemini": "Gemini",
}


def price_for(format: ProviderFormat) -> CachePrice:
    """The price of the provider that reads `format`."""
    provider = _BY_FORMAT[format]
    return next(price for price in PRICES if price.provider == provider)


def call_dollars(tokens: int, reused: int, price: CachePrice) -> tuple[float, int]:
    """The input dollars of a request, and how many of its tokens the cache served.

    `reused` of the request's `tokens` lead the previous request too.

    Raises:
        ValueError: a negative count, or more reused tokens than the request holds.
    """
    if tokens < 0 or reused < 0 or reused > tokens:
        msg = f"need 0 <= reused <= tokens, got reused={reused}, tokens={tokens}"
        raise ValueError(msg)
    cached = 0
    if reused >= price.minimum:
        cached = reused - reused % price.step
    fresh = tokens - cached
    written = fresh if tokens >= price.minimum else 0
    units = cached * price.read + written * price.write + (fresh - written)
    return units * price.input_per_million / 1e6, cached
