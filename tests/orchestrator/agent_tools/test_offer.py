"""When the agent tools are in a request, and what they cost in it (`ToolOffer`)."""

from __future__ import annotations

import json
import re
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchmarks.sdk_types import sdk_problems
from context_graph import AgentEvent, BudgetExceededError, Note, TiktokenCounter
from context_graph.render import FORMATS, Renderer
from context_graph.testing import Recorder, WordCounter
from context_graph.tokens.counting import ProviderFormat
from context_graph.validate import validate
from orchestrator import ContextManager
from orchestrator.agent_tools import AGENT_TOOLS, EXPAND_TOOL
from orchestrator.agent_tools.offer import MIN_ROOM
from orchestrator.replay import model_call_points
from processors import ObservationMasker
from processors.truncate import ToolOutputTruncator
from tests.orchestrator.policy_keywords import make_manager, open_manager
from tests.orchestrator.test_agent_tools import fill, named_ids, tool_names
from tests.orchestrator.test_manager_properties import sessions

NAMED = re.compile(r"context_expand with id ([^\s\]]+)")

pytestmark = pytest.mark.filterwarnings("ignore::hypothesis.errors.NonInteractiveExampleWarning")


def _manager(fmt: ProviderFormat = "openai", **options: Any) -> ContextManager:
    options.setdefault("counter", WordCounter())
    options.setdefault("budget", 4_000)
    options.setdefault("agent_tools", True)
    return make_manager(format=fmt, **options)


def _one_turn(manager: ContextManager, lines: int = 40) -> ContextManager:
    """A task and one large tool output after it: all of it is the request's floor."""
    manager.add_system("You are a careful coding agent.")
    manager.add_user("Fix the failing test in tests/test_io.py without touching the API.")
    manager.add_assistant(
        "Running the tests.",
        tool_calls=[{"id": "c1", "name": "bash", "arguments": {"cmd": "pytest"}}],
    )
    log = "\n".join(f"line {j}: value={j * 7} status=ok" for j in range(lines))
    manager.add_tool_result("c1", log)
    return manager


class TestDefinition:
    def test_context_expand_costs_few_tokens(self) -> None:
        """Its definition, as an OpenAI request carries it, costs under 70 tokens."""
        counter = TiktokenCounter()
        empty = _manager(counter=counter, agent_tools=False, budget=None)
        empty.add_user("hi")
        bare = Renderer(format="openai").render(empty.working).tokens
        tooled = Renderer(format="openai", tools=(AGENT_TOOLS[EXPAND_TOOL],))
        assert tooled.render(empty.working).tokens - bare < 70


class TestOffer:
    @pytest.mark.parametrize("fmt", FORMATS)
    def test_context_expand_is_offered_from_the_first_request(self, fmt: ProviderFormat) -> None:
        """With room, the first request already carries it beside the user's tools, before
        anything is compacted: the tool set never changes under the prompt cache."""
        manager = _manager(fmt, tools=[{"name": "bash", "input_schema": {"type": "object"}}])
        fill(manager, steps=1)
        result = manager.render_sync()
        assert manager.working.audit() == ()
        assert sorted(tool_names(result.payload, fmt)) == sorted(["bash", EXPAND_TOOL])
        assert validate(result.payload, fmt) == []
        assert sdk_problems(result.payload, fmt) == []

    def test_the_first_compaction_leaves_the_tool_set_as_it_was(self) -> None:
        """The request before the first compaction and the one that compacts carry the
        same tools, so a compaction that keeps the sent messages keeps the cache too."""
        manager = _manager(pipeline=[ToolOutputTruncator(max_tokens=50)])
        fill(manager, steps=1)
        before = manager.render_sync()
        assert manager.working.audit() == ()
        manager.add_assistant(
            "Once more.", tool_calls=[{"id": "c9", "name": "bash", "arguments": {}}]
        )
        manager.add_tool_result("c9", "\n".join(f"row {j}" for j in range(800)))
        result = manager.render_sync(budget=1_500)
        assert manager.working.audit() != ()
        assert tool_names(before.payload, "openai") == [EXPAND_TOOL]
        assert tool_names(result.payload, "openai") == [EXPAND_TOOL]

    def test_once_offered_it_stays_even_when_all_is_restored(self) -> None:
        """A restore that brings everything back does not take the tool away again."""
        manager = _manager(pipeline=[ToolOutputTruncator(max_tokens=50)])
        fill(manager, steps=2)
        first = manager.render_sync()
        assert tool_names(first.payload, "openai") == [EXPAND_TOOL]
        for node_id in NAMED.findall(json.dumps(first.payload)):
            assert "restored" in manager.handle_tool_call_sync(EXPAND_TOOL, {"id": node_id})
        again = manager.render_sync(budget=100_000)
        assert NAMED.findall(json.dumps(again.payload)) == []
        assert tool_names(again.payload, "openai") == [EXPAND_TOOL]

    def test_a_call_to_it_in_the_history_brings_it(self) -> None:
        """A request holding a call to context_expand defines the tool, compacted or not."""
        manager = _manager("anthropic")
        manager.add_user("Go on.")
        manager.add_assistant(
            "Expanding.",
            tool_calls=[{"id": "c2", "name": EXPAND_TOOL, "arguments": {"id": "x"}}],
        )
        manager.add_tool_result("c2", "context_expand: nothing to restore")
        assert tool_names(manager.render_sync().payload, "anthropic") == [EXPAND_TOOL]

    def test_both_tools_are_offered_from_the_first_request(self) -> None:
        """Asking for a compaction needs nothing compacted, and with room expanding is
        offered from the start too."""
        manager = _manager(agent_tools=("expand", "compact"))
        fill(manager, steps=1)
        names = tool_names(manager.render_sync().payload, "openai")
        assert sorted(names) == sorted([EXPAND_TOOL, "context_compact"])

    def test_without_room_context_compact_is_offered_alone(self) -> None:
        """Where the budget leaves no room for a restore, only context_compact is offered."""
        manager = _manager(agent_tools=("expand", "compact"), budget=None)
        kept = _long_task(manager, 1_500)
        _steps(manager, 0, 1)
        names = tool_names(manager.render_sync(budget=kept + MIN_ROOM // 2).payload, "openai")
        assert names == ["context_compact"]


def _long_task(manager: ContextManager, system_words: int) -> int:
    """A system prompt of `system_words` words and a first request; their tokens (words)."""
    manager.add_system(" ".join(["rule"] * system_words))
    request = "Fix the failing test in tests/test_io.py without touching the API."
    manager.add_user(request)
    return system_words + len(request.split())


def _steps(manager: ContextManager, first: int, count: int, lines: int = 40) -> None:
    """`count` more tool steps, each a user turn after a large output."""
    for step in range(first, first + count):
        manager.add_assistant(
            f"Step {step}.", tool_calls=[{"id": f"s{step}", "name": "bash", "arguments": {}}]
        )
        log = "\n".join(f"line {j} of run {step}: value={j * step} status=ok" for j in range(lines))
        manager.add_tool_result(f"s{step}", log)
        manager.add_user(f"Go on with step {step + 1}.")


class TestRoom:
    """No `context_expand` where the budget leaves no room beside the task (`MIN_ROOM`)."""

    @pytest.mark.parametrize("spare", [MIN_ROOM - 100, MIN_ROOM + 100])
    def test_offered_only_with_room_beside_the_task(self, spare: int) -> None:
        """Compacted, the request offers the tool and names ids only if the room is there."""
        manager = _manager(pipeline=[ObservationMasker(keep_turns=1)], budget=None)
        kept = _long_task(manager, 1_500)
        _steps(manager, 0, 4)
        result = manager.render_sync(budget=kept + spare)
        assert manager.working.audit() != ()
        roomy = spare >= MIN_ROOM
        assert tool_names(result.payload, "openai") == ([EXPAND_TOOL] if roomy else [])
        assert bool(named_ids(result.payload)) is roomy
        assert validate(result.payload, "openai") == []

    @pytest.mark.parametrize("spare", [MIN_ROOM - 100, MIN_ROOM + 100])
    def test_a_pinned_note_counts_and_later_requests_do_not(self, spare: int) -> None:
        """A pinned note, kept in every request, takes room; a later request does not."""
        manager = _manager(pipeline=[ObservationMasker(keep_turns=1)], budget=None)
        kept = _long_task(manager, 500)
        manager.ingest([Note(content=" ".join(["fact"] * 800))])
        manager.add_user(" ".join(["detail"] * 800))
        _steps(manager, 0, 4)
        result = manager.render_sync(budget=kept + 800 + spare)
        assert manager.working.audit() != ()
        roomy = spare >= MIN_ROOM
        assert tool_names(result.payload, "openai") == ([EXPAND_TOOL] if roomy else [])

    def test_a_session_without_a_request_counts_its_system_prompt(self) -> None:
        """A session that opens with imported history has room beside its system prompt."""
        manager = _manager(pipeline=[ObservationMasker(keep_turns=1)], budget=None)
        manager.add_system("You are a careful coding agent.")
        _steps(manager, 0, 6)
        result = manager.render_sync(budget=MIN_ROOM + 200)
        assert manager.working.audit() != ()
        assert tool_names(result.payload, "openai") == [EXPAND_TOOL]

    def test_no_room_compacts_like_without_the_tool(self) -> None:
        """Without room, every request is the one a manager without agent tools sends."""
        bodies = []
        for agent_tools in (True, False):
            manager = _manager(pipeline=[ObservationMasker(keep_turns=1)], agent_tools=agent_tools)
            kept = _long_task(manager, 1_500)
            sent = []
            for step in range(5):
                _steps(manager, step, 1)
                sent.append(manager.render_sync(budget=kept + MIN_ROOM // 2).payload)
            bodies.append(sent)
        assert bodies[0] == bodies[1]


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    system_words=st.integers(min_value=10, max_value=2_500),
    spare=st.integers(min_value=200, max_value=3 * MIN_ROOM),
    steps=st.integers(min_value=2, max_value=6),
)
def test_the_offer_is_the_same_at_every_render_and_after_reopening(
    system_words: int, spare: int, steps: int
) -> None:
    """Every request carries the same tools, also from the reopened store.

    The tool is there exactly when the budget leaves `MIN_ROOM` beside the task, and
    ids are named only in a request that carries it.
    """
    options: dict[str, Any] = {
        "counter": WordCounter(),
        "agent_tools": True,
        "pipeline": [ObservationMasker(keep_turns=1)],
        "format": "openai",
    }
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "session.db"
        manager = open_manager(path, **options)
        kept = _long_task(manager, system_words)
        options["budget"] = kept + spare
        sets: list[list[str]] = []
        try:
            for step in range(steps):
                _steps(manager, step, 1, lines=60)
                payload = manager.render_sync(budget=kept + spare).payload
                sets.append(tool_names(payload, "openai"))
                if named_ids(payload):
                    assert EXPAND_TOOL in tool_names(payload, "openai")
        finally:
            manager.close()
        again = open_manager(path, **options)
        try:
            _steps(again, steps, 1, lines=60)
            payload = again.render_sync(budget=kept + spare).payload
            sets.append(tool_names(payload, "openai"))
        finally:
            again.close()
    assert sets == [[EXPAND_TOOL] if spare >= MIN_ROOM else []] * len(sets)


class TestFloor:
    def test_the_floor_is_never_cut_for_their_definitions(self) -> None:
        """Every budget a manager without agent tools answers is answered with them too.

        The floor's only output must be cut to fit; where it fits cut only without the
        tools' definitions, the request goes without them, cut as far as that needs.
        """
        refused: list[int] = []
        for budget in range(100, 400, 2):
            try:
                _one_turn(_manager(agent_tools=False, budget=budget)).render_sync()
            except BudgetExceededError:
                continue
            try:
                result = _one_turn(_manager(budget=budget)).render_sync()
            except BudgetExceededError:
                refused.append(budget)
                continue
            assert result.tokens <= budget
            assert validate(result.payload, "openai") == []
        assert refused == []


def _named_ids_expand(manager: ContextManager, text: str) -> None:
    for node_id in NAMED.findall(text):
        assert manager.expand(node_id)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(events=sessions(), fmt=st.sampled_from(FORMATS), budget=st.integers(150, 3_000))
def test_every_request_is_valid_and_offers_what_it_names(
    events: list[AgentEvent], fmt: ProviderFormat, budget: int
) -> None:
    """Each request is valid and in budget, every id it names expands, and once a request
    carried context_expand every later one does, but for a call that withheld it."""
    manager = _manager(fmt, budget=budget)
    points = model_call_points(events)
    offered = False
    with Recorder(manager.bus) as recorder:
        for fed, agent_event in enumerate(events, start=1):
            manager.ingest([agent_event])
            if fed not in points:
                continue
            seen = len(recorder.events)
            try:
                result = manager.render_sync()
            except BudgetExceededError as exc:
                assert exc.budget == budget < exc.required
                continue
            withheld = "agent_tools_withheld" in [e.name for e in recorder.events[seen:]]
            assert result.tokens <= budget
            assert validate(result.payload, fmt) == []
            text = json.dumps(result.payload, ensure_ascii=False)
            _named_ids_expand(manager, text)
            carries = EXPAND_TOOL in tool_names(result.payload, fmt)
            if NAMED.search(text) or offered:
                assert carries or withheld
            offered = offered or carries
