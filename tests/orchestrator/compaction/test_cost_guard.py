"""The cost guard: the pure decision, the figures it reads off a view, and its option."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from context_graph.errors import ConfigurationError
from orchestrator import ContextManager, GuardConfig
from orchestrator.compaction.cost_guard import (
    Rewrite,
    expected_calls,
    measure_rewrite,
    weigh_rewrite,
)
from orchestrator.policy import Policy
from orchestrator.pricing import PRICES, CachePrice, call_dollars, price_for
from processors import ObservationMasker, ProcessorContext
from processors.base import run_processor

ANTHROPIC, OPENAI, GEMINI = PRICES
PER_TOKEN = ANTHROPIC.input_per_million / 1e6


@st.composite
def rewrites(draw: st.DrawFn) -> Rewrite:
    """Any consistent rewrite: a prefix and freed tokens that fit inside the view."""
    total = draw(st.integers(0, 400_000))
    prefix = draw(st.integers(0, total))
    freed = draw(st.integers(0, total - prefix))
    cached = draw(st.none() | st.integers(0, total))
    return Rewrite(total, prefix, freed, cached)


class TestWeighRewrite:
    """The decision: apply when the saving over the calls ahead covers the rewrite."""

    def test_a_small_edit_deep_in_a_long_prompt_waits(self) -> None:
        """Masking 5k tokens near the start of a 100k prompt does not pay in 10 calls."""
        verdict = weigh_rewrite(Rewrite(100_000, 20_000, 5_000), ANTHROPIC, 10)
        assert not verdict.apply
        # The suffix after the edit is written at 1.25x instead of read at 0.1x...
        assert verdict.cost == pytest.approx(75_000 * (1.25 - 0.1) * PER_TOKEN)
        # ...and each of the 10 calls reads 5k fewer cached tokens.
        assert verdict.saving == pytest.approx(10 * 5_000 * 0.1 * PER_TOKEN)
        assert verdict.reason.startswith("guard: the proposal waits")
        assert "$0.258750" in verdict.reason and "$0.015000" in verdict.reason

    def test_a_summary_of_most_of_the_prompt_applies(self) -> None:
        """Freeing 70k of 100k pays for rewriting the 10k left after it."""
        verdict = weigh_rewrite(Rewrite(100_000, 20_000, 70_000), ANTHROPIC, 10)
        assert verdict.apply
        assert verdict.cost == pytest.approx(10_000 * 1.15 * PER_TOKEN)
        assert not verdict.reason.startswith("guard:")

    def test_more_calls_ahead_turn_a_wait_into_an_apply(self) -> None:
        """The same edit pays once enough calls read the smaller prompt."""
        rewrite = Rewrite(100_000, 20_000, 5_000)
        assert not weigh_rewrite(rewrite, OPENAI, 10).apply
        assert weigh_rewrite(rewrite, OPENAI, 200).apply

    def test_openai_has_no_write_surcharge(self) -> None:
        """OpenAI's rewritten suffix costs plain input less the cached price it had."""
        verdict = weigh_rewrite(Rewrite(100_000, 20_000, 5_000), OPENAI, 1)
        per = OPENAI.input_per_million / 1e6
        # Served in steps of 128 tokens: 19,968 of the 20,000 kept, and 94,976 of the
        # 95,000 left when the compacted prompt is read whole from the cache.
        with_it = 19_968 * 0.1 + 75_032
        cached_whole = 94_976 * 0.1 + 24
        assert verdict.cost == pytest.approx((with_it - cached_whole) * per)

    def test_gemini_under_its_minimum_caches_nothing(self) -> None:
        """Under 4,096 tokens nothing is cached, so a rewrite costs nothing and saves input."""
        verdict = weigh_rewrite(Rewrite(4_000, 100, 200), GEMINI, 1)
        assert verdict.cost == pytest.approx(0.0)
        assert verdict.saving == pytest.approx(200 * GEMINI.input_per_million / 1e6)
        assert verdict.apply

    def test_what_an_earlier_stage_rewrote_is_not_counted_again(self) -> None:
        """When the run already rewrote from token 10k, an edit at 60k adds no rewrite."""
        fresh = weigh_rewrite(Rewrite(100_000, 60_000, 2_000), ANTHROPIC, 5)
        after_earlier = weigh_rewrite(Rewrite(100_000, 60_000, 2_000, 10_000), ANTHROPIC, 5)
        assert not fresh.apply
        assert after_earlier.apply and after_earlier.cost < 0

    def test_what_no_request_carried_is_no_rewrite(self) -> None:
        """An edit inside the part not sent yet costs nothing extra: it is written anyway."""
        sent_all = weigh_rewrite(Rewrite(100_000, 95_000, 3_000), ANTHROPIC, 1)
        sent_before = weigh_rewrite(Rewrite(100_000, 95_000, 3_000, 95_000), ANTHROPIC, 1)
        assert not sent_all.apply
        assert sent_before.apply and sent_before.cost == pytest.approx(-3_000 * 1.15 * PER_TOKEN)

    def test_the_budget_and_a_must_run_lift_the_guard(self) -> None:
        """Over the budget, or in a run that must compact, even a losing edit applies."""
        rewrite = Rewrite(100_000, 20_000, 5_000)
        assert weigh_rewrite(rewrite, ANTHROPIC, 1, budget=90_000).apply
        assert not weigh_rewrite(rewrite, ANTHROPIC, 1, budget=100_000).apply
        must = weigh_rewrite(rewrite, ANTHROPIC, 1, must=True)
        assert must.apply and must.reason.startswith("the run must compact")

    def test_bad_figures_raise(self) -> None:
        """Inconsistent counts and fewer than one call are refused, naming the problem."""
        with pytest.raises(ValueError, match="exceed the view"):
            Rewrite(1_000, 600, 500)
        with pytest.raises(ValueError, match="must not be negative"):
            Rewrite(1_000, -1, 0)
        with pytest.raises(ValueError, match="calls must be at least 1"):
            weigh_rewrite(Rewrite(1_000, 0, 10), ANTHROPIC, 0)

    @given(
        rewrite=rewrites(),
        price=st.sampled_from(PRICES),
        calls=st.integers(1, 10_000),
        budget=st.none() | st.integers(1, 500_000),
        must=st.booleans(),
    )
    def test_a_wait_never_leaves_a_request_over_budget(
        self, rewrite: Rewrite, price: CachePrice, calls: int, budget: int | None, must: bool
    ) -> None:
        """A proposal waits only in an optional run whose view fits the budget."""
        verdict = weigh_rewrite(rewrite, price, calls, budget=budget, must=must)
        if not verdict.apply:
            assert not must
            assert budget is None or rewrite.view_tokens <= budget
            assert verdict.cost > verdict.saving

    @given(rewrite=rewrites(), price=st.sampled_from(PRICES), calls=st.integers(1, 10_000))
    def test_savings_over_cost_always_apply(
        self, rewrite: Rewrite, price: CachePrice, calls: int
    ) -> None:
        """Whenever the saving is at least the cost the proposal applies; the gap is the bill."""
        verdict = weigh_rewrite(rewrite, price, calls)
        assert verdict.apply == (verdict.saving >= verdict.cost)
        total, after = rewrite.view_tokens, rewrite.view_tokens - rewrite.freed
        held = total if rewrite.cached_tokens is None else min(rewrite.cached_tokens, total)
        kept = min(held, rewrite.prefix_tokens)
        without = (
            call_dollars(total, held, price)[0] + (calls - 1) * call_dollars(total, total, price)[0]
        )
        with_it = (
            call_dollars(after, kept, price)[0] + (calls - 1) * call_dollars(after, after, price)[0]
        )
        assert without - with_it == pytest.approx(verdict.saving - verdict.cost, abs=1e-9)


class TestOption:
    """`GuardConfig(cost_aware=...)`: off by default, priced by the manager's format."""

    def test_off_by_default(self) -> None:
        """A default config has the cost guard off, with no price and no fixed call count."""
        config = GuardConfig()
        assert (config.cost_aware, config.price, config.expected_calls) == (False, None, None)

    def test_the_manager_fills_in_its_formats_price(self) -> None:
        """With no price given, the manager weighs with its own provider's prices."""
        manager = ContextManager(
            format="gemini", policy=Policy(guards=GuardConfig(cost_aware=True))
        )
        assert manager._options.guards.price == price_for("gemini")

    def test_a_given_price_is_kept(self) -> None:
        """A price given explicitly (another model) is the one used."""
        mine = CachePrice("Anthropic", "Haiku", 1.0, read=0.1, write=1.25, minimum=2048)
        manager = ContextManager(
            format="openai", policy=Policy(guards=GuardConfig(cost_aware=True, price=mine))
        )
        assert manager._options.guards.price == mine

    def test_bad_values_raise(self) -> None:
        """A non-positive call count or a price of the wrong type is a ConfigurationError."""
        with pytest.raises(ConfigurationError, match="expected_calls"):
            GuardConfig(expected_calls=0)
        with pytest.raises(ConfigurationError, match="price"):
            GuardConfig(price="anthropic")

    def test_calls_ahead_default_to_the_calls_so_far(self) -> None:
        """Without `expected_calls` the guard counts the session's assistant turns."""
        manager = ContextManager(format="openai", policy=Policy())
        manager.add_user("Go.")
        for i in range(3):
            manager.add_assistant(f"Step {i}.")
        assert expected_calls(manager.working, GuardConfig()) == 3
        assert expected_calls(manager.working, GuardConfig(expected_calls=40)) == 40
        assert expected_calls(ContextManager(policy=Policy()).working, GuardConfig()) == 1


class TestMeasureRewrite:
    """The figures of a proposal, read off the views before and after it."""

    async def test_the_prefix_ends_at_the_first_changed_node(self) -> None:
        """A masked tool result keeps the nodes before it as the cached prefix."""
        manager = ContextManager(format="openai", policy=Policy())
        manager.add_system("You fix bugs.")
        manager.add_user("Read it.")
        manager.add_assistant("Reading.", tool_calls=[{"id": "c1", "name": "read"}])
        output = manager.add_tool_result("c1", "\n".join(f"row {k}: {k * k}" for k in range(200)))
        manager.add_user("Now fix it.")
        manager.add_assistant("Done.")
        working = manager.working
        view = working.snapshot()
        ctx = ProcessorContext(graph=view, tokens=working.token_cache)
        proposal = await run_processor(ObservationMasker(keep_turns=1), [view[output]], ctx)
        after = working.view.with_proposal(proposal)
        rewrite = measure_rewrite(working.view, after)
        ids = view.current_ids()
        assert rewrite.prefix_tokens == sum(view.tokens(i) for i in ids[: ids.index(output)])
        assert rewrite.freed == view.total_tokens - after.total_tokens > 0
        assert rewrite.cached_tokens is None
        assert measure_rewrite(working.view, working.view).freed == 0
        # Sent up to the output: the cache holds no more than what came before it.
        later = frozenset(ids[ids.index(output) :])
        assert measure_rewrite(working.view, after, None, later).cached_tokens == (
            rewrite.prefix_tokens
        )
        assert measure_rewrite(working.view, after, 5, later).cached_tokens == 5


class TestUnsentEdits:
    """An edit of what the cache does not hold costs nothing at the next call."""

    @given(rewrite=rewrites(), price=st.sampled_from(PRICES), calls=st.integers(1, 10_000))
    def test_an_edit_after_the_cached_part_never_costs(
        self, rewrite: Rewrite, price: CachePrice, calls: int
    ) -> None:
        """From the first uncached token on, a rewrite adds no dollars at the next call."""
        held = rewrite.view_tokens if rewrite.cached_tokens is None else rewrite.cached_tokens
        if rewrite.prefix_tokens < held:
            rewrite = Rewrite(
                rewrite.view_tokens, held, min(rewrite.freed, rewrite.view_tokens - held), held
            )
        verdict = weigh_rewrite(rewrite, price, calls)
        assert verdict.cost <= 1e-12
        assert verdict.apply == (verdict.saving >= verdict.cost)
