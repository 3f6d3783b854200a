"""Property test: random sessions in which the model calls context_expand at random.

Fed event by event and rendered at every model call, with a random id from the request
expanded now and then (sometimes one it never named), the manager keeps every promise:
each request is provider-valid and within the budget (or refused with
`BudgetExceededError`), a redacted secret never comes back, the pristine record stays as
ingested, and the view projects as it would from scratch.
"""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from context_graph import AgentEvent, BudgetExceededError
from context_graph.render import FORMATS
from context_graph.testing import WordCounter, graph_snapshot
from context_graph.tokens.counting import ProviderFormat
from context_graph.validate.request import validate
from orchestrator import ContextManager
from orchestrator.policy import Policy
from orchestrator.replay import model_call_points
from tests.orchestrator.test_manager_properties import SECRET, sessions

NAMED = re.compile(r"call context_expand with id ([^\s\]]+) to restore")

pytestmark = pytest.mark.filterwarnings("ignore::hypothesis.errors.NonInteractiveExampleWarning")


def _render(manager: ContextManager, fmt: ProviderFormat, budget: int, redact: bool) -> str:
    """Render and check the promises; the request as text ("" when refused)."""
    try:
        result = manager.render_sync()
    except BudgetExceededError as exc:
        assert exc.budget == budget < exc.required
        return ""
    assert validate(result.payload, fmt) == []
    assert result.tokens <= budget
    text = json.dumps(result.payload)
    assert not redact or SECRET not in text
    return text


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    events=sessions(),
    fmt=st.sampled_from(FORMATS),
    budget=st.integers(300, 4_000),
    redact=st.booleans(),
    pins=st.integers(0, 2),
    data=st.data(),
)
def test_expanding_at_random_keeps_every_promise(
    events: list[AgentEvent],
    fmt: ProviderFormat,
    budget: int,
    redact: bool,
    pins: int,
    data: st.DataObject,
) -> None:
    """Whatever the model expands, every request is valid, in budget and secret-free."""
    manager = ContextManager(
        format=fmt,
        budget=budget,
        counter=WordCounter(),
        agent_tools=True,
        policy=Policy(redact_secrets=redact, expand_pin_turns=pins),
    )
    points = model_call_points(events)
    for fed, agent_event in enumerate(events, start=1):
        manager.ingest([agent_event])
        if fed not in points:
            continue
        text = _render(manager, fmt, budget, redact)
        named = NAMED.findall(text)
        choices = named or [node.id for node in manager.raw]
        if data.draw(st.booleans()):
            before = graph_snapshot(manager.raw)
            audit = manager.working.audit()
            result = manager.handle_tool_call_sync(
                "context_expand", {"id": data.draw(st.sampled_from(choices))}
            )
            event(result.split(":")[0] + (" restored" if "restored" in result else ""))
            assert graph_snapshot(manager.raw) == before
            if not result.startswith("context_expand: restored"):
                assert manager.working.audit() == audit  # a refusal changes nothing
            assert manager.working.units() == manager.working.view.fresh_copy().units()
            _render(manager, fmt, budget, redact)
