"""The cost guard through `ContextManager`: a compaction that waits, one that runs, none over."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from context_graph import AgentEvent, AssistantTurn, SystemPrompt, ToolCall, ToolResult, UserTurn
from context_graph.errors import BudgetExceededError
from context_graph.render import RenderResult
from context_graph.testing import WordCounter
from orchestrator import ContextManager, GuardConfig, TriggerConfig
from orchestrator.bus import Recorder
from orchestrator.policy import Policy
from processors import ObservationMasker, ToolOutputTruncator
from tests.orchestrator.policy_keywords import make_manager

BUDGET = 40_000


def _output(step: int, lines: int) -> str:
    return "\n".join(f"line {step}-{k}: value_{step}_{k}" for k in range(lines))


def _events(first_lines: int, steps: int = 12, lines: int = 40) -> list[AgentEvent]:
    """A first task with one output of `first_lines` lines, then a tool loop on a second."""
    events: list[AgentEvent] = [
        SystemPrompt(content="You fix bugs."),
        UserTurn(content="Read the config."),
        AssistantTurn(content="Reading.", tool_calls=[ToolCall(id="c0", name="read")]),
        ToolResult(call_id="c0", content=_output(0, first_lines)),
        UserTurn(content="Now fix the parser."),
    ]
    for i in range(1, steps):
        events.append(
            AssistantTurn(content=f"Step {i}.", tool_calls=[ToolCall(id=f"c{i}", name="bash")])
        )
        events.append(ToolResult(call_id=f"c{i}", content=_output(i, lines)))
    return events


def _manager(guards: GuardConfig, budget: int = BUDGET, **options: Any) -> ContextManager:
    """An Anthropic manager that masks outputs one user turn old, at a task boundary."""
    options.setdefault("pipeline", [ObservationMasker(keep_turns=1)])
    return make_manager(format="anthropic", budget=budget, **options, policy=Policy(guards=guards))


async def _at_boundary(manager: ContextManager, events: list[AgentEvent]) -> Recorder:
    """Replay `events` rendering after each output, then end the task and render again."""
    for event in events:
        manager.ingest([event])
        if isinstance(event, ToolResult):
            await manager.render()
    with Recorder(manager.bus) as recorder:
        manager.mark_boundary("task")  # a whole-view run in the foreground, optional
        await manager.render()
    return recorder


class TestThroughTheManager:
    """A boundary's compaction, weighed in dollars at Anthropic's prices."""

    async def test_a_compaction_that_does_not_pay_waits(self) -> None:
        """Masking a small early output would rewrite the whole prompt: it waits, and says why."""
        manager = _manager(GuardConfig(cost_aware=True))
        recorder = await _at_boundary(manager, _events(first_lines=20))
        waited = recorder.of("proposal_waited")
        assert len(waited) == 1 and recorder.of("proposal_applied") == []
        payload = waited[0]
        assert payload["cost"] > payload["saving"] > 0 and payload["calls"] == 12
        assert payload["reason"].startswith("guard: the proposal waits")
        assert "Anthropic prices" in payload["reason"]
        assert manager.working.audit() == ()
        run = recorder.of("compaction_done")[0]["run"]
        assert run.applied == 0 and run.skipped == [("mask", payload["reason"])]

    async def test_without_the_guard_the_same_compaction_runs(self) -> None:
        """Off (the default), the boundary masks the early output as before."""
        manager = _manager(GuardConfig())
        recorder = await _at_boundary(manager, _events(first_lines=20))
        assert recorder.of("proposal_waited") == []
        assert len(recorder.of("proposal_applied")) == 1

    async def test_a_compaction_that_pays_runs(self) -> None:
        """Masking a large early output frees more than the rewrite costs: it is applied."""
        manager = _manager(GuardConfig(cost_aware=True))
        recorder = await _at_boundary(manager, _events(first_lines=1_000))
        assert recorder.of("proposal_waited") == []
        assert len(recorder.of("proposal_applied")) == 1

    async def test_more_expected_calls_make_it_pay(self) -> None:
        """The small edit that waits over the calls so far runs over 1,000 calls ahead."""
        manager = _manager(GuardConfig(cost_aware=True, expected_calls=1_000))
        recorder = await _at_boundary(manager, _events(first_lines=20))
        assert recorder.of("proposal_waited") == []
        assert len(recorder.of("proposal_applied")) == 1

    async def test_a_waited_stage_stalls_until_the_view_grows(self) -> None:
        """The next boundary does not run the masker again just to wait once more."""
        manager = _manager(GuardConfig(cost_aware=True))
        await _at_boundary(manager, _events(first_lines=20))
        with Recorder(manager.bus) as recorder:
            manager.mark_boundary("again")
            await manager.render()
        run = recorder.of("compaction_done")[0]["run"]
        assert recorder.of("proposal_made") == []
        assert run.skipped and "freed 0.0%" in run.skipped[0][1]

    async def test_a_request_that_does_not_fit_compacts_anyway(self) -> None:
        """Over the budget the run must compact: the guard lets the same edit through."""
        triggers = TriggerConfig(soft_ratio=None, hard_ratio=None)
        events = _events(first_lines=300)
        manager = _manager(GuardConfig(cost_aware=True), budget=8_000, triggers=triggers)
        with Recorder(manager.bus) as recorder:
            for event in events:
                manager.ingest([event])
                if isinstance(event, ToolResult):
                    result = await manager.render()
                    assert result.tokens <= 8_000
        assert recorder.of("proposal_waited") == []
        assert recorder.of("proposal_applied")


@st.composite
def sessions(draw: st.DrawFn) -> tuple[list[AgentEvent], int]:
    """A session of a few tasks with outputs of random sizes, and a budget."""
    events: list[AgentEvent] = [SystemPrompt(content="You fix bugs.")]
    step = 0
    for task in range(draw(st.integers(1, 3))):
        events.append(UserTurn(content=f"Task {task}."))
        for _ in range(draw(st.integers(1, 6))):
            step += 1
            events.append(
                AssistantTurn(
                    content=f"Step {step}.", tool_calls=[ToolCall(id=f"c{step}", name="bash")]
                )
            )
            events.append(
                ToolResult(call_id=f"c{step}", content=_output(step, draw(st.integers(5, 200))))
            )
    return events, draw(st.integers(1_500, 12_000))


class TestNeverOverBudget:
    """Whatever waits, no request goes over its budget."""

    @settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(session=sessions(), calls=st.none() | st.integers(1, 5))
    async def test_every_render_fits_as_without_the_guard(
        self, session: tuple[list[AgentEvent], int], calls: int | None
    ) -> None:
        """With the guard on each render fits its budget whenever it does with the guard off."""
        events, budget = session
        guarded = _manager(GuardConfig(cost_aware=True, expected_calls=calls), budget=budget)
        plain = _manager(GuardConfig(), budget=budget)
        await _fits_where_plain_fits(guarded, plain, events, budget)

    @settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(session=sessions(), cap=st.integers(40, 400))
    async def test_a_deeper_relief_fits_as_without_the_guard(
        self, session: tuple[list[AgentEvent], int], cap: int
    ) -> None:
        """With truncating stages the relief pass runs deeper with the guard; still in budget."""
        events, budget = session

        def manager(guards: GuardConfig) -> ContextManager:
            return _manager(
                guards,
                budget=budget,
                pipeline=[
                    ToolOutputTruncator(max_tokens=cap * 2),
                    ToolOutputTruncator(max_tokens=cap),
                ],
                triggers=TriggerConfig(soft_ratio=None, hard_ratio=0.9, hysteresis=0.1),
            )

        guarded, plain = manager(GuardConfig(cost_aware=True)), manager(GuardConfig())
        await _fits_where_plain_fits(guarded, plain, events, budget)


class TestOneRun:
    """Within one run, what an earlier stage rewrote is not charged to a later one."""

    @staticmethod
    def _session() -> list[AgentEvent]:
        """A large early read, a small early bash output, then a second task's tool loop."""
        events = _events(first_lines=1_000)
        small: list[AgentEvent] = [
            AssistantTurn(content="Checking.", tool_calls=[ToolCall(id="cx", name="bash")]),
            ToolResult(call_id="cx", content=_output(99, 20)),
        ]
        return events[:4] + small + events[4:]

    async def test_a_later_small_edit_rides_on_an_earlier_rewrite(self) -> None:
        """Masking the bash output waits alone, and is applied after the read was masked."""
        reads = ObservationMasker(keep_turns=1, exclude_tools=("bash",))
        shells = ObservationMasker(keep_turns=1, exclude_tools=("read",))
        # A low target, so that the run goes on to the second stage after the first.
        alone = _manager(GuardConfig(cost_aware=True), pipeline=[shells], compact_to=0.05)
        recorder = await _at_boundary(alone, self._session())
        assert len(recorder.of("proposal_waited")) == 1
        both = _manager(GuardConfig(cost_aware=True), pipeline=[reads, shells], compact_to=0.05)
        recorder = await _at_boundary(both, self._session())
        assert recorder.of("proposal_waited") == []
        assert len(recorder.of("proposal_applied")) == 2


class TestDeeperRelief:
    """A run that shrinks only the unsent outputs goes on to the low-water mark."""

    @staticmethod
    async def _relieved(guards: GuardConfig) -> tuple[list[str], list[str], int]:
        """The messages before the large output and after its render, and its tokens sent."""
        manager = ContextManager(
            counter=WordCounter(),
            budget=20_000,
            policy=Policy(
                guards=guards,
                triggers=TriggerConfig(soft_ratio=None, hard_ratio=0.9, hysteresis=0.1),
                pipeline=[
                    ToolOutputTruncator(max_tokens=4_000),
                    ToolOutputTruncator(max_tokens=1_000),
                ],
                compact_to=0.4,
            ),
        )
        manager.add_system("You are a careful coding agent.")
        manager.add_user("Find why the export of report 42 fails.")
        before: list[str] = []
        for step in range(8):
            manager.add_assistant(f"Step {step}.", [{"id": f"c{step}", "name": "read"}])
            manager.add_tool_result(f"c{step}", _words(950, step))
            before = _messages(await manager.render())
        manager.add_assistant("Reading the log.", [{"id": "big", "name": "read"}])
        manager.add_tool_result("big", _words(11_000, 99))  # over the hard level, within budget
        result = await manager.render()
        assert result.tokens <= 20_000
        view = manager.working.view
        (newest,) = [view[i] for i in view.current_ids() if view[i].meta.get("truncated")]
        return before, _messages(result), manager.working.token_cache.count_node(newest)

    async def test_the_guard_cuts_the_new_output_further_and_keeps_the_cache(self) -> None:
        """Off, the first cut (under the hard level) ends the pass; on, the second runs too."""
        sent, plain, plain_tokens = await self._relieved(GuardConfig())
        sent_guarded, guarded, guarded_tokens = await self._relieved(GuardConfig(cost_aware=True))
        assert plain[: len(sent)] == sent and guarded[: len(sent_guarded)] == sent_guarded
        assert guarded_tokens < 1_500 < 3_500 < plain_tokens
        assert len(guarded) == len(plain) == len(sent) + 2


def _words(count: int, step: int) -> str:
    return " ".join(f"w{step}x{k}" for k in range(count))


def _messages(result: RenderResult) -> list[str]:
    return [json.dumps(m, sort_keys=True) for m in result.payload["messages"]]


async def _fits_where_plain_fits(
    guarded: ContextManager, plain: ContextManager, events: list[AgentEvent], budget: int
) -> None:
    """Feed both the events; after each tool result, whenever `plain` renders within
    `budget`, `guarded` must too."""
    for event in events:
        guarded.ingest([event])
        plain.ingest([event])
        if not isinstance(event, ToolResult):
            continue
        try:
            await plain.render()
        except BudgetExceededError:
            continue
        result = await guarded.render()
        assert result.tokens <= budget
