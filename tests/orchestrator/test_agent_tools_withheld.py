"""The agent tools are left out of a request that fits its budget only without them."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchmarks.sdk_types import sdk_problems
from context_graph.errors import BudgetExceededError
from context_graph.render import FORMATS
from context_graph.testing import Recorder, WordCounter
from context_graph.tokens.counting import ProviderFormat
from context_graph.validate import validate
from orchestrator.manager import ContextManager
from tests.orchestrator.policy_keywords import make_manager
from tests.orchestrator.test_agent_tools import tool_names

BASH = {"name": "bash", "input_schema": {"type": "object"}}
#: `context_compact` is offered from the first request on (`context_expand` only once
#: something was compacted, which this session never is).
COMPACT = ("compact",)


def _manager(fmt: ProviderFormat, budget: int | None, **options: Any) -> ContextManager:
    """A session that is all floor: the system prompt and the one request."""
    manager = make_manager(format=fmt, counter=WordCounter(), budget=budget, **options)
    manager.add_system("You are a careful coding agent.")
    manager.add_user("Fix the failing test in tests/test_io.py without touching the API.")
    return manager


def _sizes(fmt: ProviderFormat) -> tuple[int, int]:
    """The request's size without and with the agent tools (nothing of it can be compacted)."""
    plain = _manager(fmt, None, tools=[BASH]).render_sync().tokens
    tooled = _manager(fmt, None, tools=[BASH], agent_tools=COMPACT).render_sync().tokens
    return plain, tooled


def _checked(payload: dict[str, Any], fmt: ProviderFormat) -> None:
    assert validate(payload, fmt) == []
    assert sdk_problems(payload, fmt) == []


class TestWithheld:
    @pytest.mark.parametrize("fmt", FORMATS)
    def test_a_request_too_small_for_them_is_sent_without_them(self, fmt: ProviderFormat) -> None:
        """At the size of the request without them, it is sent, valid, without them."""
        plain, tooled = _sizes(fmt)
        assert tooled > plain
        manager = _manager(fmt, plain, tools=[BASH], agent_tools=COMPACT)
        with Recorder(manager.bus) as recorder:
            result = manager.render_sync()
        assert result.tokens <= plain
        assert tool_names(result.payload, fmt) == ["bash"]
        _checked(result.payload, fmt)
        (event,) = [e for e in recorder.events if e.name == "agent_tools_withheld"]
        assert event.payload["tools"] == ("context_compact",)
        assert event.payload["budget"] == plain
        assert event.payload["required"] > plain

    def test_the_next_request_with_room_carries_them_again(self) -> None:
        """Withheld for one call only: a call with room for them sends them."""
        plain, tooled = _sizes("openai")
        manager = _manager("openai", plain, tools=[BASH], agent_tools=COMPACT)
        assert tool_names(manager.render_sync().payload, "openai") == ["bash"]
        again = manager.render_sync(budget=tooled)
        assert tool_names(again.payload, "openai") == ["bash", "context_compact"]

    def test_they_stay_while_a_call_to_them_is_in_the_request(self) -> None:
        """A request holding a call to context_expand keeps the tool, or is refused."""
        manager = _manager("anthropic", None, agent_tools=True)
        manager.add_assistant(
            "Expanding.",
            tool_calls=[{"id": "c2", "name": "context_expand", "arguments": {"id": "x"}}],
        )
        manager.add_tool_result("c2", "context_expand: nothing to restore")
        with_tools = manager.render_sync().tokens
        with Recorder(manager.bus) as recorder, pytest.raises(BudgetExceededError) as refused:
            manager.render_sync(budget=with_tools - 1)
        assert refused.value.budget == with_tools - 1
        assert "agent_tools_withheld" not in recorder.names()

    def test_too_small_even_without_them_is_refused_as_before(self) -> None:
        """Below the size without them the call is refused, with the size with them."""
        plain, tooled = _sizes("openai")
        manager = _manager("openai", plain - 1, tools=[BASH], agent_tools=COMPACT)
        with pytest.raises(BudgetExceededError) as refused:
            manager.render_sync()
        assert refused.value.budget == plain - 1
        assert refused.value.required == tooled

    def test_without_agent_tools_nothing_changes(self) -> None:
        """A manager with no agent tools refuses where its request does not fit."""
        plain, _ = _sizes("openai")
        manager = _manager("openai", plain - 1, tools=[BASH])
        with pytest.raises(BudgetExceededError):
            manager.render_sync()


class TestProperties:
    @settings(max_examples=30, deadline=None)
    @given(st.sampled_from(FORMATS), st.integers(min_value=1, max_value=400))
    def test_every_budget_gets_a_valid_request_or_the_refusal(
        self, fmt: ProviderFormat, budget: int
    ) -> None:
        """Any budget: the tools when they fit, else without them when that fits, else refused."""
        plain, tooled = _sizes(fmt)
        manager = _manager(fmt, budget, tools=[BASH], agent_tools=COMPACT)
        try:
            result = manager.render_sync()
        except BudgetExceededError:
            assert budget < plain
            return
        assert result.tokens <= budget
        _checked(result.payload, fmt)
        names = tool_names(result.payload, fmt)
        assert names == (["bash", "context_compact"] if budget >= tooled else ["bash"])
