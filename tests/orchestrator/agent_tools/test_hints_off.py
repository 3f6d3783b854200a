"""Without `context_expand` in the request, nothing compacted points at it or at a node id.

A placeholder, a truncation, a distillate or a summary says how to get the original back
only when the model has the tool to do it (`ProcessorContext.expand_hints`, which the
manager sets from `ToolOffer.hints`): `agent_tools` on, and the budget leaving `MIN_ROOM`.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from context_graph import AgentEvent, BudgetExceededError
from context_graph.testing import WordCounter
from orchestrator import ContextManager
from orchestrator.agent_tools import EXPAND_TOOL
from orchestrator.agent_tools.offer import MIN_ROOM
from orchestrator.policy import POLICIES, Policy
from orchestrator.replay import model_call_points
from processors import (
    Distiller,
    HistorySummarizer,
    ObservationMasker,
    Processor,
    ToolOutputTruncator,
)
from tests.orchestrator.test_agent_tools import fill, tool_names
from tests.orchestrator.test_manager_properties import sessions

NODE_ID = re.compile(r"\d{6}-[a-z_]+-[0-9a-f]{16}")
"""A node id as the engine writes it (`000005-file-b0b636b87d0d2c2f`)."""

pytestmark = pytest.mark.filterwarnings("ignore::hypothesis.errors.NonInteractiveExampleWarning")

STAGES: dict[str, Processor] = {
    "mask": ObservationMasker(keep_turns=1),
    "truncate": ToolOutputTruncator(max_tokens=200),
    "distill": Distiller(level="heavy"),
    "summarize": HistorySummarizer(),
}


def _pointers(payload: dict[str, Any]) -> list[str]:
    """What in a request points the model at a tool or a node: `expand` and node ids."""
    text = json.dumps(payload, ensure_ascii=False)
    return re.findall(r"(?i)expand", text) + NODE_ID.findall(text)


class TestWithoutTheTool:
    """`agent_tools` off (the default): compacted pieces name no tool and no id."""

    @pytest.mark.parametrize("stage", sorted(STAGES))
    async def test_a_compacted_piece_points_nowhere(self, stage: str) -> None:
        """Masked, truncated, distilled or summarized, the request says nothing of expanding."""
        manager = ContextManager(
            counter=WordCounter(), budget=None, policy=Policy(pipeline=[STAGES[stage]])
        )
        fill(manager, steps=4, lines=300 if stage != "summarize" else 20)
        await manager.compact()
        assert manager.working.audit() != ()
        payload = (await manager.render()).payload
        assert _pointers(payload) == []
        assert tool_names(payload, "openai") == []

    @pytest.mark.parametrize("profile", sorted(POLICIES))
    def test_every_profile_sends_no_pointer(self, profile: str) -> None:
        """Each built-in profile, made to compact, names no tool the request lacks."""
        manager = ContextManager(counter=WordCounter(), budget=3_000, policy=profile)
        fill(manager, steps=8)
        payload = manager.render_sync().payload
        assert manager.working.audit() != ()
        assert _pointers(payload) == []

    def test_with_the_tool_the_same_piece_names_its_id(self) -> None:
        """The control: with `context_expand` offered, the placeholder names the id to pass."""
        manager = ContextManager(
            counter=WordCounter(), budget=4_000, agent_tools=True, policy=Policy()
        )
        outputs = fill(manager)
        payload = manager.render_sync().payload
        copy, _ = manager.working.view.overlay.resolve(outputs[0])
        assert manager.working[copy].text.endswith(
            f" — call context_expand with id {outputs[0]} to restore]"
        )
        assert EXPAND_TOOL in tool_names(payload, "openai")

    def test_with_the_tool_but_no_room_nothing_names_an_id(self) -> None:
        """`agent_tools` on, but a budget without `MIN_ROOM` beside the task: no pointer."""
        manager = ContextManager(
            counter=WordCounter(),
            budget=None,
            agent_tools=True,
            policy=Policy(pipeline=[ObservationMasker(keep_turns=1)]),
        )
        fill(manager, steps=4, lines=30)
        # What every request keeps: the system prompt and the first request.
        kept = sum(manager.raw.token_cache.count_node(node) for node in list(manager.raw)[:2])
        payload = manager.render_sync(budget=kept + MIN_ROOM // 2).payload
        assert manager.working.audit() != ()
        assert _pointers(payload) == []


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    events=sessions(),
    profile=st.sampled_from(sorted(POLICIES)),
    budget=st.integers(150, 3_000),
)
def test_no_request_without_the_tool_points_at_it(
    events: list[AgentEvent], profile: str, budget: int
) -> None:
    """Whatever the session, profile and budget, a manager without agent tools sends no
    request that names `context_expand`, expanding, or a node id."""
    manager = ContextManager(counter=WordCounter(), budget=budget, policy=profile)
    points = model_call_points(events)
    for fed, event in enumerate(events, start=1):
        manager.ingest([event])
        if fed not in points:
            continue
        try:
            payload = manager.render_sync().payload
        except BudgetExceededError:
            continue
        assert _pointers(payload) == []
