"""The `ContextManager`: ingest, trigger-driven compaction, render, replay of real traces."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import anyio
import pytest

from context_graph.errors import BudgetExceededError, ConfigurationError, IngestError
from context_graph.graph.context_graph import ContextGraph
from context_graph.graph.nodes import Node
from context_graph.importers import load_sessions
from context_graph.render import FORMATS, Renderer
from context_graph.testing import ScriptedSummarizer, WordCounter, graph_snapshot
from context_graph.validate.request import validate
from orchestrator.bus import Recorder
from orchestrator.manager import ContextManager, ManagerStats
from orchestrator.policy import Policy
from processors import HistorySummarizer, ObservationMasker, ProcessorContext, Proposal
from processors.base import Processor
from tests.orchestrator.policy_keywords import make_manager

ROOT = Path(__file__).resolve().parents[2]
TRACES = ROOT.parent / "shared" / "traces"
QUICKSTART = ROOT / "docs" / "quickstart.md"
REPLAYED = [
    TRACES / "claude_code" / "marot_spotter" / "tool_heavy.jsonl",
    TRACES
    / "mini_swe_agent_deepseek"
    / "deepseek_chat_test_1-100"
    / "django__django-12453"
    / "django__django-12453.traj.json",
]


def _log(step: int) -> str:
    return "\n".join(f"line {j} of run {step}: value={j * step} status=ok" for j in range(300))


def fill(manager: ContextManager, steps: int = 4) -> None:
    """A coding session with large tool outputs, through the event API."""
    manager.add_system("You are a careful coding agent.")
    manager.add_user("Fix the failing test in tests/test_io.py without touching the API.")
    for step in range(steps):
        manager.add_assistant(
            f"Running the tests, step {step}.",
            tool_calls=[{"id": f"call_{step}", "name": "bash", "arguments": {"cmd": "pytest"}}],
        )
        manager.add_tool_result(f"call_{step}", _log(step))
        manager.add_user(f"Go on with step {step + 1}.")


class FailingProcessor:
    """A processor that always raises."""

    name = "failing"

    def propose(self, targets: Sequence[Node], ctx: ProcessorContext) -> Proposal:
        """Raise, whatever the input."""
        msg = "boom"
        raise RuntimeError(msg)


@pytest.fixture(name="make_manager")
def fixture_make_manager() -> Callable[..., ContextManager]:
    """A factory of managers that count words (so sizes are easy to reason about)."""

    def make(**options: Any) -> ContextManager:
        options.setdefault("counter", WordCounter())
        return make_manager(**options)

    return make


@pytest.fixture(name="manager")
def fixture_manager(make_manager: Callable[..., ContextManager]) -> Iterator[ContextManager]:
    """A filled manager with a budget well under the raw session's size."""
    manager = make_manager(budget=4_000)
    fill(manager)
    yield manager


class TestCompaction:
    """Rendering compacts an over-budget session until it fits."""

    async def test_over_budget_session_renders_under_budget_in_every_format(
        self, manager: ContextManager
    ) -> None:
        """An over-budget session is compacted and renders valid and under budget."""
        assert Renderer().render(manager.raw).tokens > 4_000
        for fmt in FORMATS:
            result = await manager.render(format=fmt)
            assert result.tokens <= 4_000
            assert validate(result.payload, fmt) == []
        assert manager.stats().proposals_applied > 0

    async def test_pristine_record_never_changes(self, manager: ContextManager) -> None:
        """The raw record stays as ingested while the working view shrinks."""
        before = graph_snapshot(manager.raw)
        await manager.render()
        assert graph_snapshot(manager.raw) == before
        stats = manager.stats()
        assert stats.working_tokens < stats.raw_tokens
        assert isinstance(stats, ManagerStats)
        assert stats.last_render_tokens is not None

    async def test_expand_returns_the_originals(self, manager: ContextManager) -> None:
        """Every compacted node expands to the pristine nodes it stands for."""
        await manager.render()
        entries = manager.working.audit()
        assert entries
        for entry in entries:
            for added in entry.added:
                originals = manager.expand(added)
                assert originals
                assert all(manager.raw[node.id] == node for node in originals)

    async def test_under_budget_nothing_is_compacted(
        self, make_manager: Callable[..., ContextManager]
    ) -> None:
        """A session well under budget renders unchanged."""
        manager = make_manager(budget=100_000)
        fill(manager, steps=1)
        await manager.render()
        assert manager.working.audit() == ()


class TestManualCompact:
    """`compact()` runs the whole pipeline now."""

    async def test_instructions_reach_the_summarizer(
        self, make_manager: Callable[..., ContextManager]
    ) -> None:
        """Manual compact passes its instructions to the summarizer."""
        summarizer = ScriptedSummarizer(["Ran the tests four times; all lines were ok."] * 4)
        manager = make_manager(summarizer=summarizer, pipeline=[HistorySummarizer()])
        fill(manager)
        run = await manager.compact("keep the test names")
        assert summarizer.calls
        # Followed by the user's sentences the summary must quote ("Go on with step 1.").
        given = [instructions or "" for _, _, instructions in summarizer.calls]
        assert all(text.split("\n")[0] == "keep the test names" for text in given)
        assert run.applied == 1

    async def test_first_request_and_latest_turn_are_not_summarized(
        self, make_manager: Callable[..., ContextManager]
    ) -> None:
        """The summarizer is never given the first request or the latest user turn."""
        summarizer = ScriptedSummarizer(["Ran the tests; all lines were ok."] * 4)
        manager = make_manager(summarizer=summarizer, pipeline=[HistorySummarizer()])
        fill(manager)
        users = manager.raw.by_kind("user")
        await manager.compact()
        given = {node.id for nodes, _, _ in summarizer.calls for node in nodes}
        assert users[0] not in given
        assert users[-1] not in given

    async def test_a_long_tool_loop_under_one_request_is_summarized(
        self, make_manager: Callable[..., ContextManager]
    ) -> None:
        """One request, many steps: the finished steps are summarized, the last two kept."""
        summarizer = ScriptedSummarizer(["Steps 0-3 ran pytest; every line was ok."] * 4)
        manager = make_manager(summarizer=summarizer, pipeline=[HistorySummarizer()])
        manager.add_system("You are a careful coding agent.")
        manager.add_user("Fix the failing test in tests/test_io.py.")
        for step in range(6):
            manager.add_assistant(
                f"Step {step}.", [{"id": f"call_{step}", "name": "bash", "arguments": {}}]
            )
            manager.add_tool_result(f"call_{step}", _log(step))
        run = await manager.compact()
        assert run.applied == 1
        given = [node for nodes, _, _ in summarizer.calls for node in nodes]
        calls = sorted({n.tool_call_id for n in given if n.kind == "tool_call"})
        assert calls == [f"call_{step}" for step in range(4)]  # steps 4 and 5 kept
        assert not any(n.kind in {"user", "system"} for n in given)
        result = await manager.render()
        text = str(result.payload)
        assert "Steps 0-3 ran pytest" in text
        assert "call_0" not in text
        assert "call_4" in text and "call_5" in text
        assert validate(result.payload, "openai") == []

    async def test_a_session_resumed_from_a_compaction_summarizes_its_loop(
        self, make_manager: Callable[..., ContextManager]
    ) -> None:
        """With no user turn, the other tool's summary leads the loop's span: one summary
        of ours takes both (it was carried whole at every call before)."""
        summarizer = ScriptedSummarizer(["X asked; steps 0-2 ran pytest, all ok."] * 4)
        manager = make_manager(summarizer=summarizer, pipeline=[HistorySummarizer()])
        (foreign,) = manager.ingest(
            [{"type": "compaction", "content": "Earlier: the user asked for X."}]
        )
        for step in range(5):
            manager.add_assistant(f"Step {step}.", [{"id": f"c{step}", "name": "bash"}])
            manager.add_tool_result(f"c{step}", _log(step))
        run = await manager.compact()
        assert run.applied == 1
        given = [node for nodes, _, _ in summarizer.calls for node in nodes]
        assert given[0].id == foreign
        calls = sorted({n.tool_call_id for n in given if n.kind == "tool_call"})
        assert calls == ["c0", "c1", "c2"]
        text = str((await manager.render()).payload)
        assert "Earlier: the user asked for X." not in text
        assert "X asked; steps 0-2 ran pytest, all ok." in text

    async def test_the_last_two_steps_alone_are_never_summarized(
        self, make_manager: Callable[..., ContextManager]
    ) -> None:
        summarizer = ScriptedSummarizer(["anything"] * 4)
        manager = make_manager(summarizer=summarizer, pipeline=[HistorySummarizer()])
        manager.add_user("Fix it.")
        for step in range(2):
            manager.add_assistant("Step.", [{"id": f"c{step}", "name": "bash"}])
            manager.add_tool_result(f"c{step}", _log(step))
        run = await manager.compact()
        assert run.applied == 0
        assert summarizer.calls == []


class TestBus:
    """The manager reports what it does on its bus."""

    async def test_events_in_order(self, make_manager: Callable[..., ContextManager]) -> None:
        """Ingest, triggers, proposals and the render are reported in that order."""
        manager = make_manager(budget=4_000)
        with Recorder(manager.bus) as recorder:
            fill(manager)
            await manager.render()
        names = recorder.names()
        firsts = [names.index(n) for n in ("node_added", "trigger_fired", "proposal_made")]
        assert firsts == sorted(firsts)
        assert names.index("proposal_made") < names.index("proposal_applied")
        assert names[-1] == "render_done"
        assert "budget_crossed" in names
        assert recorder.of("render_done")[-1]["tokens"] <= 4_000
        assert len(recorder.of("node_added")) == len(manager.raw)

    async def test_failing_processor_is_reported_and_render_goes_on(
        self, make_manager: Callable[..., ContextManager]
    ) -> None:
        """A failing stage is reported as rejected and the next stage still runs."""
        pipeline: list[Processor] = [FailingProcessor(), ObservationMasker(keep_turns=1)]
        manager = make_manager(budget=4_000, pipeline=pipeline)
        fill(manager)
        with Recorder(manager.bus) as recorder:
            result = await manager.render()
        rejected = recorder.of("proposal_rejected")
        assert [r["processor"] for r in rejected] == ["failing"]
        assert "boom" in rejected[0]["reason"]
        assert recorder.of("proposal_applied")
        assert result.tokens <= 4_000
        assert manager.stats().proposals_rejected == 1

    async def test_report_usage_feeds_the_calibrator(self, manager: ContextManager) -> None:
        """Reported usage is emitted and changes the correction factor."""
        result = await manager.render()
        with Recorder(manager.bus) as recorder:
            factor = manager.report_usage(result.tokens * 2)
        assert factor > 1.0
        assert recorder.names() == ["usage_reported"]


class TestRenderSync:
    """`render_sync` is the blocking twin of `render`."""

    def test_works_outside_a_loop(self, manager: ContextManager) -> None:
        """Outside an event loop it renders under budget."""
        result = manager.render_sync(format="anthropic")
        assert result.tokens <= 4_000
        assert validate(result.payload, "anthropic") == []

    async def test_works_inside_a_loop(self, manager: ContextManager) -> None:
        """Inside a running loop (a notebook) it renders what `await render()` renders."""
        assert manager.render_sync().payload == (await manager.render()).payload

    def test_async_api_runs_under_anyio_run(self, manager: ContextManager) -> None:
        """The async API runs under anyio's own runner too."""
        result = anyio.run(manager.render)
        assert result.tokens <= 4_000


class TestOptions:
    """Bad options are refused at construction time."""

    @pytest.mark.parametrize(
        "options",
        [
            {"format": "cohere"},
            {"budget": 0},
            {"budget": True},
            {"budget": 1.5},
            {"counter": object()},
            {"triggers": {"soft_ratio": 0.5}},
            {"pipeline": "mask"},
            {"pipeline": [object()]},
            {"summarizer": object()},
            {"clock": 3.0},
        ],
    )
    def test_bad_option(self, options: dict[str, Any]) -> None:
        """Each invalid option raises ConfigurationError."""
        with pytest.raises(ConfigurationError):
            make_manager(**options)

    def test_options_are_keyword_only(self) -> None:
        """Format and budget may be positional; every option after them is refused so."""
        ContextManager("openai", 1_000)
        with pytest.raises(TypeError):
            ContextManager("openai", 1_000, Policy())  # type: ignore[misc]

    async def test_bad_render_options(self, manager: ContextManager) -> None:
        """An unknown format or a bad budget at render time is refused."""
        with pytest.raises(ConfigurationError):
            await manager.render(format="cohere")  # type: ignore[arg-type]
        with pytest.raises(ConfigurationError):
            await manager.render(budget=-1)

    def test_ingest_is_atomic(self, manager: ContextManager) -> None:
        """A refused event adds nothing and is reported as the graph reports it."""
        before = graph_snapshot(manager.raw)
        with pytest.raises(IngestError):
            manager.add_tool_result("no_such_call", "output")
        assert graph_snapshot(manager.raw) == before


def _replay(path: Path) -> tuple[int, int, int]:
    """Replay a trace, rendering before each assistant turn at half the final size."""
    events = load_sessions(path)[0].events
    final = ContextGraph()
    final.ingest(events)
    budget = Renderer().render(final).tokens // 2
    manager, raw, plain = ContextManager(budget=budget, policy=Policy()), ContextGraph(), Renderer()
    calls = manager_raised = raw_raised = 0
    for event in events:
        if type(event).__name__ == "AssistantTurn" and len(raw):
            calls += 1
            try:
                plain.render(raw, budget=budget)
            except BudgetExceededError:
                raw_raised += 1
            try:
                result = manager.render_sync()
            except BudgetExceededError:
                manager_raised += 1
            else:
                assert result.tokens <= budget
                assert validate(result.payload, "openai") == []
        manager.ingest([event])
        raw.ingest([event])
    return calls, manager_raised, raw_raised


class TestReplay:
    """Replaying real traces renders valid requests, and compaction helps."""

    def test_replay_shared_traces(self) -> None:
        """Every render is valid and under budget; fewer renders raise than without it."""
        if not all(path.exists() for path in REPLAYED):
            pytest.skip(f"shared traces not found under {TRACES}")
        totals = [_replay(path) for path in REPLAYED]
        for calls, manager_raised, raw_raised in totals:
            assert calls > 0
            assert manager_raised <= raw_raised
        report = ", ".join(
            f"{p.name}: {m}/{c} raised (raw {r})"
            for p, (c, m, r) in zip(REPLAYED, totals, strict=True)
        )
        print(report)
        assert sum(m for _, m, _ in totals) < sum(r for _, _, r in totals)


class TestQuickstart:
    """docs/quickstart.md runs as written."""

    def test_quickstart_runs(self) -> None:
        """The quickstart's Python block runs an agent loop and renders valid requests."""
        blocks = re.findall(r"```python\n(.*?)```", QUICKSTART.read_text(encoding="utf-8"), re.S)
        assert blocks
        namespace: dict[str, object] = {}
        exec(compile(blocks[0], str(QUICKSTART), "exec"), namespace)
        request = namespace["request"]
        assert validate(request, "openai") == []


class TestCompactTo:
    @pytest.mark.parametrize("value", [0, 1.5, "half", True])
    def test_bad_compact_to_is_refused(self, value: object) -> None:
        """compact_to must be a share in (0, 1]."""
        from context_graph import ConfigurationError
        from orchestrator import ContextManager

        with pytest.raises(ConfigurationError, match="compact_to"):
            ContextManager(policy=Policy(compact_to=value))  # type: ignore[arg-type]


class TestGuardsWiring:
    def _manager(self, **options: Any) -> Any:
        from context_graph.testing import WordCounter

        manager = make_manager(counter=WordCounter(), **options)
        manager.add_user("go")
        for i in range(6):
            manager.add_assistant(tool_calls=[{"id": f"c{i}", "name": "bash"}])
            manager.add_tool_result(f"c{i}", "line of output " * 120)
            manager.add_user(f"next {i}")
        return manager

    def test_floor_spares_small_views_from_trigger_driven_compaction(self) -> None:
        """Under the floor, a fitting render compacts nothing even when a trigger fires."""
        from orchestrator.compaction.guards import GuardConfig
        from orchestrator.compaction.triggers import TriggerConfig

        manager = self._manager(
            budget=100_000,
            guards=GuardConfig(floor_tokens=50_000),
            triggers=TriggerConfig(max_messages=3),
        )
        manager.render_sync()
        assert manager.stats().proposals_applied == 0
        control = self._manager(
            budget=100_000,
            guards=GuardConfig(floor_tokens=0),
            triggers=TriggerConfig(max_messages=3),
        )
        control.render_sync()
        assert control.stats().proposals_applied > 0

    def test_overflow_compacts_below_the_floor(self) -> None:
        """A request that does not fit is compacted even under the floor."""
        from orchestrator.compaction.guards import GuardConfig

        manager = self._manager(budget=2_000, guards=GuardConfig(floor_tokens=50_000))
        result = manager.render_sync()
        assert result.tokens <= 2_000
        assert manager.stats().proposals_applied > 0

    def test_manual_compact_bypasses_the_guards(self) -> None:
        """compact() runs the pipeline even under the floor."""
        import anyio

        from orchestrator.compaction.guards import GuardConfig

        manager = self._manager(budget=100_000, guards=GuardConfig(floor_tokens=50_000))
        run = anyio.run(manager.compact)
        assert run.applied > 0
