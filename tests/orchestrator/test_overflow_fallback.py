"""The overflow fallback: a request degraded step by step instead of refused.

Seed 004: when even compaction cannot bring the request under the budget, strip media,
cut tool outputs to a minimum, then shorten the pinned content with a notice; only then
fail. Before, a system prompt alone over the budget refused every call.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from context_graph.errors import BudgetExceededError
from context_graph.graph.content import ImagePart, TextPart
from orchestrator import ContextManager, Recorder
from orchestrator.compaction.overflow import MIN_HEAD_CHARS
from orchestrator.policy import Policy

HUGE_SYSTEM = "You are a careful agent. " + " ".join(f"Rule {n}: be exact." for n in range(600))
PNG = "iVBORw0KGgo" + "A" * 40_000


def _text(payload: object) -> str:
    return json.dumps(payload, ensure_ascii=False)


class TestOverflow:
    def test_a_system_prompt_over_the_budget_is_cut_with_a_notice(self) -> None:
        """The request fits with the system prompt's head and a notice, and the bus says so."""
        manager = ContextManager(budget=600, policy=Policy())
        manager.add_system(HUGE_SYSTEM)
        manager.add_user("Fix the parser.")
        with Recorder(manager.bus) as recorder:
            result = manager.render_sync()
        assert result.tokens <= 600
        body = _text(result.payload)
        assert "You are a careful agent. Rule 0: be exact." in body
        assert "over its token budget" in body
        assert "Fix the parser." in body
        (event,) = [e for e in recorder.events if e.name == "overflow_fallback"]
        assert event.payload["steps"] == ("pinned",)
        assert event.payload["required"] > 600
        # Nothing was recorded: the record and the view keep the whole prompt.
        assert manager.raw[manager.raw.transcript()[0]].text == HUGE_SYSTEM
        assert HUGE_SYSTEM in _text(manager.render_sync(budget=20_000).payload)

    def test_a_cut_request_fills_its_budget(self) -> None:
        """The pinned heads are as long as the budget allows, not halved past it.

        Several system prompts of different sizes over a 1,500-token budget: the longest
        give up the most, and the request lands within a few percent of the budget.
        """
        manager = ContextManager(budget=1_500, policy=Policy())
        for size in (2_400, 600, 40, 1_200):
            manager.add_system(" ".join(f"Rule {n}: check {size}." for n in range(size)))
        manager.add_user("Fix the parser.")
        result = manager.render_sync()
        assert 0.9 * 1_500 <= result.tokens <= 1_500
        assert "Rule 39: check 40." in _text(result.payload)  # the short one stays whole

    def test_media_goes_first(self) -> None:
        """An image the budget cannot hold is left out with a notice before any text is cut."""
        manager = ContextManager(format="anthropic", budget=700, policy=Policy())
        manager.add_system("You describe screenshots.")
        manager.add_user(
            [TextPart(text="What does this show?"), ImagePart(media_type="image/png", data=PNG)]
        )
        with Recorder(manager.bus) as recorder:
            result = manager.render_sync()
        body = _text(result.payload)
        assert PNG not in body and "[image omitted" in body
        assert "What does this show?" in body and "You describe screenshots." in body
        (event,) = [e for e in recorder.events if e.name == "overflow_fallback"]
        assert event.payload["steps"] == ("media",)

    def test_a_budget_below_the_minimum_still_refuses(self) -> None:
        """When even the shortest heads do not fit, the original refusal stands."""
        manager = ContextManager(budget=20, policy=Policy())
        manager.add_system(HUGE_SYSTEM)
        manager.add_user("Fix the parser. " * 100)
        with pytest.raises(BudgetExceededError):
            manager.render_sync()


@settings(max_examples=25, deadline=None)
@given(
    system=st.integers(min_value=0, max_value=3_000),
    user=st.integers(min_value=1, max_value=3_000),
    output=st.integers(min_value=0, max_value=6_000),
    budget=st.integers(min_value=150, max_value=2_500),
)
def test_a_degraded_request_fits_or_the_call_is_refused(
    system: int, user: int, output: int, budget: int
) -> None:
    """Any sizes: the request is under its budget, or refused; never over it, and never
    refused where the floor's text cut to its shortest heads fits with room to spare."""
    manager = ContextManager(budget=budget, policy=Policy())
    if system:
        manager.add_system("s " * system)
    manager.add_user("u " * user)
    if output:
        manager.add_assistant(
            "Reading.", tool_calls=[{"id": "c1", "name": "read", "arguments": {"p": "a"}}]
        )
        manager.add_tool_result("c1", "o " * output)
    try:
        result = manager.render_sync()
    except BudgetExceededError:
        # Three texts cut to MIN_HEAD_CHARS (about a token per two characters here), each
        # with its notice, and the request's own overhead: well under 700 tokens.
        assert budget < 700, f"refused at {budget} with heads of {MIN_HEAD_CHARS} characters"
        return
    assert result.tokens <= budget
