"""Dollars per session with each provider's prompt caching, from the replayed requests.

Every provider bills a request's input by what its prompt cache could serve: the leading
part equal to a recent request's. The harness records, per call, the tokens of the
leading messages equal to the previous request's (`CallRow.reused_tokens`); each price
below turns that into dollars:

- **Anthropic**, the whole prompt cached at every call (a breakpoint on the last
  message): the reused prefix is a cache read (0.1x the input price), the rest is a
  cache write (1.25x, the five-minute cache), once the prompt is long enough to be
  cached at all (1,024 tokens), else plain input.
- **OpenAI**, automatic caching: a prefix of at least 1,024 tokens is served in steps
  of 128 tokens at the cached-input price (0.1x); no write surcharge.
- **Gemini**, implicit caching: a reused prefix of at least 4,096 tokens (Gemini 3
  models) is billed at 0.1x; no write surcharge, no storage for implicit caches.

Only input is priced: every contender answers the same recorded turns, so output costs
the same for all. A refused call sends nothing and costs nothing (the refused column
says how many). The multipliers and thresholds are the providers' published rules as
of 2026; the input prices are one current model of each, per million tokens, and only
scale the totals: the ratios between contenders do not depend on them.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from benchmarks.compare.runner import CallRow, Run

__all__ = [
    "PRICES",
    "CachePrice",
    "SessionCost",
    "call_dollars",
    "cost_of",
    "dollars_section",
    "dollars_table",
]


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


def call_dollars(tokens: int, reused: int, price: CachePrice) -> tuple[float, int]:
    """The input dollars of one request of `tokens`, `reused` of them leading the previous
    request; and how many tokens the cache served."""
    cached = 0
    if reused >= price.minimum:
        cached = reused - reused % price.step
    fresh = tokens - cached
    written = fresh if tokens >= price.minimum else 0
    units = cached * price.read + written * price.write + (fresh - written)
    return units * price.input_per_million / 1e6, cached


@dataclass(frozen=True)
class SessionCost:
    """One contender's input bill over some runs, under one price."""

    dollars: float
    sent: int
    """Input tokens of every request sent."""
    cached: int
    """Of those, the tokens the cache served."""

    @property
    def hit_share(self) -> float | None:
        return self.cached / self.sent if self.sent else None


def cost_of(rows: Iterable[CallRow], price: CachePrice) -> SessionCost:
    """The bill of the calls `rows`, each request priced against the one before it."""
    dollars = 0.0
    sent = cached = 0
    for row in rows:
        if row.tokens is None:
            continue
        cost, served = call_dollars(row.tokens, row.reused_tokens, price)
        dollars += cost
        sent += row.tokens
        cached += served
    return SessionCost(dollars, sent, cached)


def _total(runs: Sequence[Run], name: str, label: str, price: CachePrice) -> SessionCost | None:
    chosen = [r for r in runs if r.contender == name and r.budget_label == label and not r.error]
    if not chosen:
        return None
    costs = [cost_of(run.rows, price) for run in chosen]
    return SessionCost(
        sum(c.dollars for c in costs), sum(c.sent for c in costs), sum(c.cached for c in costs)
    )


def dollars_table(runs: Sequence[Run], names: Sequence[str], label: str) -> str:
    """Dollars over every session at budget `label`, and the cache's share, per price."""
    header = "| contender | " + " | ".join(f"{p.provider} ({p.model})" for p in PRICES) + " |"
    rows = [header, "|---|" + "---:|" * len(PRICES)]
    for name in names:
        cells = []
        for price in PRICES:
            total = _total(runs, name, label, price)
            if total is None or total.hit_share is None:
                cells.append("-")
            else:
                cells.append(f"${total.dollars:,.2f} (cache {total.hit_share:.3f})")
        rows.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(rows)


def dollars_section(runs: Sequence[Run], names: Sequence[str], budgets: Sequence[str]) -> list[str]:
    """The page's section: what is priced and how, then a table per budget."""
    out = [
        "### Dollars, with prompt caching",
        "",
        "Input dollars over every session replayed, under each provider's prompt-caching "
        "rules, and the share of the tokens sent that the cache served (in brackets). "
        "Each request is priced against the one before it: its leading messages equal to "
        "the previous request's are what the cache can serve. Anthropic: the whole "
        "prompt cached at every call, reads at 0.1x and writes at 1.25x the input price "
        "(from 1,024 tokens). OpenAI: a reused prefix of 1,024 tokens or more, in steps of "
        "128, at 0.1x. Gemini: implicit caching of a reused prefix of 4,096 tokens or "
        "more at 0.1x. Output is the same for every contender and is not counted; a "
        "refused call costs nothing. The input prices (per million tokens: "
        + ", ".join(f"{p.model} ${p.input_per_million:.2f}" for p in PRICES)
        + ") scale the totals, not the ratios.",
        "",
    ]
    for label in budgets:
        out += [f"Budget {label}:", "", dollars_table(runs, names, label), ""]
    return out
