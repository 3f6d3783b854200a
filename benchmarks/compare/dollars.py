"""Dollars per session with each provider's prompt caching, from the replayed requests.

The harness records, per call, the tokens of the leading messages equal to the previous
request's (`CallRow.reused_tokens`); `orchestrator.pricing` prices a request from
that under each provider's caching rules (Anthropic's reads and writes, OpenAI's cached
input, Gemini's implicit caching; see there). Only input is priced: every contender
answers the same recorded turns, so output costs the same for all. A refused call sends
nothing and costs nothing (the refused column says how many).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from benchmarks.compare.runner import CallRow, Run
from orchestrator.pricing import PRICES, CachePrice, call_dollars

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
