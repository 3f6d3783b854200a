"""Dollars per session with each provider's prompt caching, from the replayed requests.

The harness records, per call, the tokens of the leading messages equal to the previous
request's (`CallRow.reused_tokens`); `orchestrator.pricing` prices a request from
that under each provider's caching rules (Anthropic's reads and writes, OpenAI's cached
input, Gemini's implicit caching; see there). Only input is priced: every contender
answers the same recorded turns, so output costs the same for all. A refused call sends
nothing and costs nothing (the refused column says how many). Each table has the
within-budget retention beside the dollars (what a cheaper request may have cost), and
`guard_lines` sets the coding profile with the cost guard against it without.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from benchmarks.compare.contenders import GUARD_PAIR
from benchmarks.compare.runner import CallRow, Run
from benchmarks.compare.stats import summarize
from orchestrator.pricing import PRICES, CachePrice, call_dollars

__all__ = [
    "PRICES",
    "CachePrice",
    "SessionCost",
    "call_dollars",
    "cost_of",
    "dollars_section",
    "dollars_table",
    "guard_lines",
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


def _retention(runs: Sequence[Run], name: str, label: str) -> str:
    value = summarize(runs, name, label).retention_within
    return "-" if value is None else f"{value:.3f}"


def dollars_table(runs: Sequence[Run], names: Sequence[str], label: str) -> str:
    """Dollars over every session at budget `label`, the cache's share, per price; retention."""
    header = "| contender | " + " | ".join(f"{p.provider} ({p.model})" for p in PRICES)
    rows = [header + " | retention |", "|---|" + "---:|" * (len(PRICES) + 1)]
    for name in names:
        cells = []
        for price in PRICES:
            total = _total(runs, name, label, price)
            if total is None or total.hit_share is None:
                cells.append("-")
            else:
                cells.append(f"${total.dollars:,.2f} (cache {total.hit_share:.3f})")
        cells.append(_retention(runs, name, label))
        rows.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(rows)


def guard_lines(runs: Sequence[Run], label: str, pair: tuple[str, str] = GUARD_PAIR) -> list[str]:
    """What the cost guard changed at budget `label`: dollars, cache share and retention.

    Nothing when either contender of `pair` (without the guard, with it) has no run there.
    """
    without, with_guard = pair
    parts = []
    for price in PRICES:
        before = _total(runs, without, label, price)
        after = _total(runs, with_guard, label, price)
        if before is None or after is None or not before.dollars:
            return []
        change = after.dollars / before.dollars - 1
        parts.append(
            f"{price.provider} ${before.dollars:,.2f} -> ${after.dollars:,.2f} ({change:+.1%}, "
            f"cache {before.hit_share or 0:.3f} -> {after.hit_share or 0:.3f})"
        )
    retention = f"{_retention(runs, without, label)} -> {_retention(runs, with_guard, label)}"
    return [f"The cost guard at {label}: " + "; ".join(parts) + f"; retention {retention}."]


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
        + ") scale the totals, not the ratios. Retention (within budget, as above) is "
        "beside the dollars: a cheaper bill that kept less is not a saving.",
        "",
        f"`{GUARD_PAIR[1]}` is `{GUARD_PAIR[0]}` with the cost guard "
        "(`GuardConfig(cost_aware=True)`, weighing at Anthropic's prices): a compaction "
        "whose cache rewrite costs more at the next call than the tokens it frees save "
        "over the calls expected (as many as the session has made so far) waits, unless "
        "the request does not fit; and a run that shrinks only the new outputs (which no "
        "request carried yet, so the cached prefix stays whole) goes on down to the "
        "low-water mark instead of stopping just under the level that fired, which puts "
        "off the next compaction that rewrites the history. The coding profile compacts "
        "only when a request (nearly) no longer fits, so there is little to wait for; "
        "what it changes comes from the second rule. The line under each table sets the "
        "two side by side.",
        "",
    ]
    for label in budgets:
        out += [f"Budget {label}:", "", dollars_table(runs, names, label), ""]
        guard = guard_lines(runs, label)
        if guard:
            out += [*guard, ""]
    return out
