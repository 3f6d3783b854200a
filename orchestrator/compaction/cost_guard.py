"""The cost guard: a compaction waits when rewriting the cached prompt costs more than it saves.

A provider's prompt cache serves the part of a request that leads the previous one. A
compaction changes the history from its first edited node on, so at the next call that
rewritten suffix is written to the cache (at a surcharge where the provider charges
one, 1.25x the input price) or sent as plain input instead of read from it at 0.1x.
What it buys is smaller requests: every call from the next one on reads the freed
tokens no more.

With `P` the view's tokens, `k` those before the first node the proposal changes, `F`
the tokens it frees and `N` the calls expected from here on (the next one included),
priced with `orchestrator.pricing.call_dollars` (so each provider's minimum and steps
hold):

- **cost**: the next call with the proposal, less the same compacted request read whole
  from the cache; less the same difference without the proposal (zero when the cache
  held the whole view; an earlier stage of the run that rewrote from further up already
  paid for the rest, and what no request carried yet is written anyway, see
  `Rewrite.cached_tokens`). Roughly `(P - k - F) * (write - read)`.
- **saving**: `N` times a fully cached call of `P` tokens less one of `P - F`: roughly
  `N * F * read`.

Over the `N` calls the proposal changes the bill by exactly `saving - cost`, so it
applies when `saving >= cost` and waits otherwise. It never waits when waiting could
leave a request over its budget: in a run that must compact (a request that does not
fit, `RunMode.OVERFLOW`; a manual `compact()`) and whenever the view is over the budget.

The guard also goes the other way, where that pays: a run that edits only what no
request has carried yet (the compactor's relief pass on the new outputs) rewrites
nothing cached (its `cost` is at most zero; the weighing still runs, so an edit that
drops the view under the provider's minimum cached prefix can still wait), so with
`cost_aware` that pass goes on to the run's low-water mark (`compact_to`) instead of
stopping just under the level that fired: the freed tokens are never written nor read,
and the next compaction, which rewrites the cached history, comes later. On the shared
coding sessions that is where the guard saves: the named policies compact only when
a request (nearly) no longer fits, so a proposal that waits runs a call or two later
anyway while every call in between reads more (weighing an overflow run's proposals
once the request fits, tried, made the bill larger, not smaller).

`N` is `GuardConfig.expected_calls` when set; by default it is the number of calls the
session has made so far (its assistant turns), at least 1. A session that has run `n`
calls is as likely to stop before `2n` as after it, when nothing else is known about
its length (the same estimate as the "Lindy" rule): early in a session a compaction has
to pay for itself quickly, late in a long one a smaller saving is worth a rewrite.

The counts are the view's content tokens: what a format adds (tool definitions, its
framing) leads the request and stays cached, so leaving it out moves only where a
provider's minimum prefix is reached.

`weigh_rewrite` is the decision, pure; `measure_rewrite` reads a proposal's figures off
a view; `weigh_proposal` does both against a working graph, and `hold_back` is what the
pipeline (`orchestrator.compaction.pipeline`) calls between a stage's proposal and its
apply.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

from context_graph.errors import InvariantViolation
from context_graph.formats.wires import DEFAULT_FORMAT
from orchestrator.bus import EventBus
from orchestrator.compaction.guards import GuardConfig
from orchestrator.pricing import CachePrice, call_dollars, price_for
from orchestrator.working import WorkingGraph, WorkingView, enforce
from processors.base import Proposal

__all__ = [
    "CostVerdict",
    "Rewrite",
    "expected_calls",
    "hold_back",
    "measure_rewrite",
    "weigh_proposal",
    "weigh_rewrite",
]


@dataclass(frozen=True, slots=True)
class Rewrite:
    """What applying one proposal does to the next request, in content tokens.

    Raises:
        ValueError: a negative count, a prefix longer than the view, or more freed
            tokens than the suffix after the prefix holds.
    """

    view_tokens: int
    """The view's tokens before the proposal (`P`)."""
    prefix_tokens: int
    """The tokens before the first node the proposal changes (`k`): they stay cached."""
    freed: int
    """The tokens the proposal frees (`F`)."""
    cached_tokens: int | None = None
    """The leading tokens of the view the cache still holds; `None`: all of them (the
    view as last sent). Less after an earlier stage of the same run rewrote from there."""

    def __post_init__(self) -> None:
        if self.prefix_tokens < 0 or self.freed < 0 or self.view_tokens < 0:
            msg = f"Rewrite: counts must not be negative, got {self}"
            raise ValueError(msg)
        if self.prefix_tokens + self.freed > self.view_tokens:
            msg = (
                f"Rewrite: prefix_tokens ({self.prefix_tokens}) plus freed ({self.freed}) "
                f"exceed the view's {self.view_tokens} tokens"
            )
            raise ValueError(msg)
        if self.cached_tokens is not None and self.cached_tokens < 0:
            msg = f"Rewrite: cached_tokens must not be negative, got {self.cached_tokens}"
            raise ValueError(msg)


@dataclass(frozen=True, slots=True)
class CostVerdict:
    """The cost guard's answer for one proposal."""

    apply: bool
    """Whether the proposal is applied now (`False`: it waits)."""
    cost: float
    """Dollars the rewrite adds at the next call (negative: it saves there already)."""
    saving: float
    """Dollars the freed tokens save over the `calls` expected."""
    calls: int
    """The calls ahead the saving was counted over."""
    reason: str
    """Why, with both figures; starts with "guard: " when the proposal waits."""


def weigh_rewrite(
    rewrite: Rewrite,
    price: CachePrice,
    calls: int,
    *,
    budget: int | None = None,
    must: bool = False,
) -> CostVerdict:
    """Whether a compaction pays for its cache rewrite over the `calls` ahead (pure).

    Args:
        rewrite: The proposal's figures.
        price: The provider's caching prices.
        calls: The calls expected from here on, the next one included (at least 1).
        budget: The request's token budget; over it the proposal always applies.
        must: The run has to compact (the request does not fit, or a manual run): the
            proposal always applies.

    Raises:
        ValueError: `calls` below 1.
    """
    if calls < 1:
        msg = f"weigh_rewrite: calls must be at least 1, got {calls}"
        raise ValueError(msg)
    total, after = rewrite.view_tokens, rewrite.view_tokens - rewrite.freed
    held = total if rewrite.cached_tokens is None else min(rewrite.cached_tokens, total)
    kept = min(held, rewrite.prefix_tokens)
    steady_before = call_dollars(total, total, price)[0]
    steady_after = call_dollars(after, after, price)[0]
    premium_after = call_dollars(after, kept, price)[0] - steady_after
    premium_before = call_dollars(total, held, price)[0] - steady_before
    cost = premium_after - premium_before
    saving = calls * (steady_before - steady_after)
    figures = (
        f"rewriting the cached prompt from token {rewrite.prefix_tokens:,} of "
        f"{total:,} costs ${cost:.6f} at the next call; freeing {rewrite.freed:,} tokens "
        f"saves ${saving:.6f} over {calls} expected calls ({price.provider} prices)"
    )
    if must:
        return CostVerdict(True, cost, saving, calls, f"the run must compact; {figures}")
    if budget is not None and total > budget:
        return CostVerdict(
            True, cost, saving, calls, f"the view is over the budget of {budget:,}; {figures}"
        )
    if saving >= cost:
        return CostVerdict(True, cost, saving, calls, figures)
    return CostVerdict(False, cost, saving, calls, f"guard: the proposal waits: {figures}")


def measure_rewrite(
    before: WorkingView,
    after: WorkingView,
    cached_tokens: int | None = None,
    unsent: Collection[str] = (),
) -> Rewrite:
    """The figures of the edit that turns view `before` into view `after`.

    The prefix is the run of leading nodes both views share (a replaced node has a new
    id, a summary stands where its first target stood, a dropped node is gone). The
    cache holds at most the view up to its first `unsent` node (none was sent yet), and
    at most `cached_tokens`.
    """
    ids = before.current_ids()
    prefix = 0
    for old, new in zip(ids, after.current_ids(), strict=False):
        if old != new:
            break
        prefix += before.tokens(old)
    total = before.total_tokens
    freed = min(max(0, total - after.total_tokens), total - prefix)
    if unsent:
        sent = 0
        for node_id in ids:
            if node_id in unsent:
                cached_tokens = sent if cached_tokens is None else min(cached_tokens, sent)
                break
            sent += before.tokens(node_id)
    return Rewrite(total, prefix, freed, cached_tokens)


def expected_calls(working: WorkingGraph, config: GuardConfig) -> int:
    """The calls ahead: `config.expected_calls`, else the calls made so far (at least 1)."""
    if config.expected_calls is not None:
        return config.expected_calls
    return max(1, len(working.pristine.by_kind("assistant")))


def weigh_proposal(
    proposal: Proposal,
    working: WorkingGraph,
    config: GuardConfig,
    *,
    budget: int | None,
    must: bool,
    cached_tokens: int | None = None,
    protected: Collection[str] = (),
    unsent: Collection[str] = (),
) -> tuple[CostVerdict, Rewrite] | None:
    """The verdict on `proposal` against the working graph now, with its figures.

    `None` when the guard is off (`config.cost_aware`) or the proposal breaks an
    invariant (applying it reports that, as without the guard). The price is
    `config.price`, the default format's when unset (the manager sets its format's).
    """
    if not config.cost_aware:
        return None
    view = working.view
    try:
        after = enforce(proposal, view, protected=protected)
    except InvariantViolation:
        return None
    rewrite = measure_rewrite(view, after, cached_tokens, unsent)
    price = config.price if config.price is not None else price_for(DEFAULT_FORMAT)
    calls = expected_calls(working, config)
    return weigh_rewrite(rewrite, price, calls, budget=budget, must=must), rewrite


def hold_back(
    proposal: Proposal,
    working: WorkingGraph,
    bus: EventBus,
    config: GuardConfig,
    *,
    budget: int | None,
    must: bool,
    rewritten_from: int | None,
    protected: Collection[str] = (),
    unsent: Collection[str] = (),
) -> tuple[str | None, int | None]:
    """Weigh a stage's proposal; why it waits (`None`: it goes on), and where the run rewrote.

    A proposal that waits is sent on the bus as `proposal_waited` (with `reason`, `cost`,
    `saving` and `calls`). One that goes on moves `rewritten_from` (the view's tokens
    before the first node the run's applied proposals change) up to its own first change.

    Args:
        proposal: What the stage proposed.
        working: The working graph it is applied to.
        bus: Where a wait is reported.
        config: The guards (`cost_aware`, `price`, `expected_calls`).
        budget: The run's token budget.
        must: The run has to compact (nothing waits).
        rewritten_from: Where the run rewrote from so far (`None`: nowhere yet).
        protected: The nodes no stage may take (as on apply).
        unsent: The nodes no request has carried yet (the cache cannot hold them).
    """
    weighed = weigh_proposal(
        proposal,
        working,
        config,
        budget=budget,
        must=must,
        cached_tokens=rewritten_from,
        protected=protected,
        unsent=unsent,
    )
    if weighed is None:
        return None, rewritten_from
    verdict, rewrite = weighed
    if verdict.apply:
        start = rewrite.prefix_tokens
        return None, start if rewritten_from is None else min(rewritten_from, start)
    bus.emit(
        "proposal_waited",
        proposal=proposal,
        reason=verdict.reason,
        cost=verdict.cost,
        saving=verdict.saving,
        calls=verdict.calls,
    )
    return verdict.reason, rewritten_from
