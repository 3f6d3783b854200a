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

from context_graph.formats.wire import CachePrice
from context_graph.formats.wires import WIRES
from context_graph.tokens.counting import ProviderFormat

__all__ = ["PRICES", "CachePrice", "call_dollars", "price_for"]


#: Each provider's caching price, once (formats one provider reads share it), dearest
#: input first; each format's folder holds its own (`context_graph.formats.<folder>.wire`).
PRICES: tuple[CachePrice, ...] = tuple(
    sorted(
        dict.fromkeys(wire.price for wire in WIRES.values()),
        key=lambda price: price.input_per_million,
        reverse=True,
    )
)


def price_for(format: ProviderFormat) -> CachePrice:
    """The price of the provider that reads `format`."""
    return WIRES[format].price


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
