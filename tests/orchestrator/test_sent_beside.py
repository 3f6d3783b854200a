"""`render(sent_beside=)`: tokens a request carries beside the render, at the provider's count.

A proxy forwards an agent's tool definitions as the agent sent them (OpenAI Chat,
Responses, Gemini), beside the body the manager renders; the provider's prompt count
covers both. Before, the gateway took the tools off the budget by the engine's count
and the calibrator learned the provider's count of the whole request as a count of the
render alone: the factor grew by the tools' share (1.75 for Qwen Code's 8,000 tokens of
tools at 30,000, tests/orchestrator/gateway/test_qwen_code.py), and every later budget
shrank with it, so the gateway compacted at every call.
"""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from context_graph.errors import BudgetExceededError, ConfigurationError
from orchestrator import ContextManager
from orchestrator.policy import Policy


def _session(manager: ContextManager, steps: int, size: int = 60) -> None:
    manager.add_system("You run steps.")
    manager.add_user("Run the steps.")
    for step in range(steps):
        manager.add_assistant(
            f"Step {step}.", tool_calls=[{"id": f"c{step}", "name": "run", "arguments": {}}]
        )
        manager.add_tool_result(f"c{step}", f"step {step} output " * size)


def test_the_provider_count_of_the_whole_request_calibrates_the_render() -> None:
    """The provider counts as the engine does (its prompt tokens are the render's and the
    tools'): the factor stays 1.0. Without `sent_beside` it is the whole over the render."""
    beside = 3_000
    manager = ContextManager(budget=20_000)
    _session(manager, 4)
    result = manager.render_sync(sent_beside=beside)
    assert manager.report_usage(result.tokens + beside) == pytest.approx(1.0)
    alone = ContextManager(budget=20_000)
    _session(alone, 4)
    rendered = alone.render_sync()
    assert alone.report_usage(rendered.tokens + beside) > 1.0


def test_what_is_sent_beside_takes_its_share_of_the_budget() -> None:
    """The render fits what the budget leaves beside them, at the provider's count."""
    manager = ContextManager(budget=6_000, policy=Policy(pipeline=[]))
    _session(manager, 30)
    first = manager.render_sync(sent_beside=2_000)
    assert first.tokens + 2_000 <= 6_000
    # A provider that counts 20% more: the render and the tools are scaled alike.
    for _ in range(20):
        result = manager.render_sync(sent_beside=2_000)
        manager.report_usage(math.ceil((result.tokens + 2_000) * 1.2))
    factor = manager.report_usage(math.ceil((result.tokens + 2_000) * 1.2))
    assert factor == pytest.approx(1.2, rel=0.02)
    result = manager.render_sync(sent_beside=2_000)
    assert (result.tokens + 2_000) * 1.2 <= 6_000 * 1.01


@pytest.mark.parametrize("value", [-1, 1.5, True, "100", None])
def test_a_sent_beside_that_is_no_count_is_refused(value: object) -> None:
    manager = ContextManager(budget=6_000)
    _session(manager, 2)
    with pytest.raises(ConfigurationError, match="sent_beside"):
        manager.render_sync(sent_beside=value)  # type: ignore[arg-type]


def test_a_sent_beside_over_the_budget_refuses_the_call() -> None:
    manager = ContextManager(budget=6_000)
    _session(manager, 2)
    with pytest.raises(BudgetExceededError) as info:
        manager.render_sync(sent_beside=6_000)
    assert info.value.budget == 6_000 and info.value.required == 6_000


@settings(max_examples=40, deadline=None)
@given(
    beside=st.integers(min_value=0, max_value=4_000),
    ratio=st.floats(min_value=0.7, max_value=1.5),
    steps=st.integers(min_value=1, max_value=30),
)
def test_the_factor_learns_the_providers_count_whatever_is_sent_beside(
    beside: int, ratio: float, steps: int
) -> None:
    """A provider that counts `ratio` times the engine's count, over render and tools
    alike: the factor comes to `ratio` (not to the whole over the render), and the
    whole request, counted as the provider counts, fits the budget."""
    budget = 10_000
    manager = ContextManager(budget=budget)
    _session(manager, steps)
    for _ in range(25):
        result = manager.render_sync(sent_beside=beside)
        factor = manager.report_usage(round((result.tokens + beside) * ratio))
    assert factor == pytest.approx(ratio, rel=0.03)
    result = manager.render_sync(sent_beside=beside)
    assert (result.tokens + beside) * ratio <= budget * 1.03
