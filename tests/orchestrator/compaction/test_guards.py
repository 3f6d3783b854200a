"""Loop guards: the pure decisions and their use in `run_pipeline`."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from context_graph.errors import ConfigurationError
from context_graph.graph.nodes import Node
from context_graph.testing import ScriptedSummarizer, WordCounter
from orchestrator.bus import Recorder
from orchestrator.compaction.guards import (
    GuardConfig,
    GuardState,
    StageOutcome,
    allowed,
    disabled_notice,
    record,
    tick,
)
from orchestrator.compaction.pipeline import StageSettings, run_pipeline
from orchestrator.compaction.plan import RunMode
from orchestrator.manager import ContextManager
from processors import HistorySummarizer, ObservationMasker, ProcessorContext, Proposal
from tests.orchestrator.policy_keywords import make_manager

NO_FLOOR = GuardConfig(floor_tokens=0)


def ran(
    state: GuardState, name: str = "stage", *, view: int = 10_000, **outcome: Any
) -> GuardState:
    """The state after one more pipeline run in which `name` ran with `outcome`."""
    return record(tick(state), name, StageOutcome(view_tokens=view, **outcome))


def may_run(
    state: GuardState, view: int = 10_000, *, config: GuardConfig = NO_FLOOR, manual: bool = False
) -> bool:
    """Whether `stage` may run in the next pipeline run."""
    return allowed("stage", tick(state), view, manual, config=config)[0]


class TestGuardConfig:
    """Options are validated at construction."""

    @pytest.mark.parametrize(
        "options",
        [{"min_progress": 1.0}, {"max_consecutive_failures": 0}, {"floor_tokens": -1}],
    )
    def test_invalid_options_raise(self, options: dict[str, Any]) -> None:
        """A bad value raises ConfigurationError naming the field (an unknown one: TypeError)."""
        with pytest.raises(ConfigurationError, match="GuardConfig: `"):
            GuardConfig(**options)

    def test_is_frozen(self) -> None:
        """A config cannot be changed after construction."""
        with pytest.raises(ValueError, match="frozen"):
            NO_FLOOR.floor_tokens = 5


class TestFloor:
    """Below the floor automatic compaction waits; manual runs anyway."""

    def test_under_the_floor_refuses(self) -> None:
        """A view under the floor is not compacted automatically."""
        ok, reason = allowed("stage", GuardState(), 999, False, config=GuardConfig())
        assert (ok, reason.startswith("guard: the view has 999 tokens")) == (False, True)

    def test_at_the_floor_allows(self) -> None:
        """A view at the floor may be compacted."""
        assert allowed("stage", GuardState(), 1024, False, config=GuardConfig()) == (
            True,
            "first run",
        )

    def test_manual_bypasses_the_floor(self) -> None:
        """A manual compaction runs under the floor."""
        assert allowed("stage", GuardState(), 1, True, config=GuardConfig())[0]


class TestMinimumProgress:
    """A run that frees too little is not repeated at once."""

    def test_a_stalled_stage_is_not_rerun(self) -> None:
        """Freeing under 5% stalls the stage for the next run."""
        assert not may_run(ran(GuardState(), freed=499, applied=True))

    def test_a_useful_run_is_repeated(self) -> None:
        """Freeing 5% or more leaves the stage free to run again."""
        assert may_run(ran(GuardState(), freed=500, applied=True))

    def test_growth_lifts_a_stall(self) -> None:
        """Once the view grew by `regrow`, a stalled stage retries."""
        state = ran(GuardState(), freed=0)
        assert not may_run(state, 10_999)
        assert may_run(state, 11_000)

    def test_runs_lift_a_stall(self) -> None:
        """After `stall_runs` pipeline runs, a stalled stage retries."""
        state = ran(GuardState(), freed=0)
        for _ in range(NO_FLOOR.stall_runs - 2):
            state = tick(state)
        assert not may_run(state)
        assert may_run(tick(state))

    def test_zero_turns_it_off(self) -> None:
        """With min_progress 0 a stage that frees nothing may run again."""
        assert may_run(
            ran(GuardState(), freed=0), config=GuardConfig(floor_tokens=0, min_progress=0)
        )


NO_STALL = GuardConfig(floor_tokens=0, min_progress=0)


class TestConsecutiveFailures:
    """A stage that keeps failing is disabled for automatic runs."""

    def test_three_failures_disable(self) -> None:
        """After three failures in a row the stage is skipped."""
        state = ran(ran(ran(GuardState(), failed=True), rejected=True), failed=True)
        ok, reason = allowed("stage", tick(state), 10_000, False, config=NO_STALL)
        assert not ok
        assert "failed 3 times in a row" in reason

    def test_a_success_ends_the_streak(self) -> None:
        """Two failures, a success, then a failure leave the stage enabled."""
        state = ran(GuardState(), failed=True)
        state = ran(ran(state, failed=True), applied=True, freed=900)
        assert may_run(ran(state, failed=True), config=NO_STALL)

    def test_cooldown_reenables(self) -> None:
        """After `failure_cooldown_runs` runs the stage may try again."""
        config = GuardConfig(floor_tokens=0, min_progress=0, failure_cooldown_runs=2)
        state = ran(ran(ran(GuardState(), failed=True), failed=True), failed=True)
        assert not may_run(state, config=config)
        assert may_run(tick(state), config=config)

    def test_manual_bypasses_and_a_manual_success_reenables(self) -> None:
        """A manual run ignores the limit, and its success re-enables automatic runs."""
        config = GuardConfig(floor_tokens=0, min_progress=0, failure_cooldown_runs=None)
        state = ran(ran(ran(GuardState(), failed=True), failed=True), failed=True)
        assert not may_run(state, config=config)
        assert may_run(state, config=config, manual=True)
        assert may_run(ran(state, applied=True, freed=900, manual=True), config=config)


class TestDisabledNotice:
    """The words that tell whoever runs the agent that a stage was turned off."""

    def _failures(self, count: int) -> tuple[GuardState, StageOutcome]:
        state, outcome = GuardState(), StageOutcome(view_tokens=10_000, failed=True, error="boom")
        for _ in range(count):
            state = record(tick(state), "stage", outcome)
        return state, outcome

    def test_the_failure_that_disables_is_told(self) -> None:
        """The third failure names the processor, its error and the cool-down."""
        state, outcome = self._failures(3)
        assert disabled_notice(state, "stage", outcome, NO_STALL) == (
            "guard: processor `stage` failed 3 times in a row (last error: boom); automatic "
            "compaction skips it for the next 20 pipeline runs (or until a manual compact() "
            "succeeds)"
        )

    def test_earlier_failures_and_successes_are_not(self) -> None:
        """Two failures, or a run that applied, disable nothing and tell nothing."""
        state, outcome = self._failures(2)
        assert disabled_notice(state, "stage", outcome, NO_STALL) is None
        applied = StageOutcome(view_tokens=10_000, applied=True, freed=900)
        after = record(tick(state), "stage", applied)
        assert disabled_notice(after, "stage", applied, NO_STALL) is None

    def test_without_cooldown_only_a_manual_run_helps(self) -> None:
        """With no cool-down the notice says a manual compact() re-enables the stage."""
        config = GuardConfig(floor_tokens=0, failure_cooldown_runs=None)
        state, outcome = self._failures(3)
        notice = disabled_notice(state, "stage", outcome, config)
        assert notice is not None and notice.endswith("skips it until a manual compact() succeeds")

    def test_a_rejection_says_so(self) -> None:
        """A stage whose proposals the checker refused is named as rejected, with the reason."""
        rejected = StageOutcome(view_tokens=10_000, rejected=True, error="tokens_reduced")
        state = GuardState()
        for _ in range(3):
            state = record(tick(state), "stage", rejected)
        notice = disabled_notice(state, "stage", rejected, NO_STALL)
        assert notice is not None
        assert "had its proposal rejected 3 times in a row (last error: tokens_reduced)" in notice


class TestResummarize:
    """A summary chain is rolled at most `max_resummarize` times automatically."""

    def test_the_cap_stops_rolling(self) -> None:
        """A chain rolled three times stops the stage."""
        state = tick(ran(GuardState(), applied=True, freed=900, chain_length=4))
        ok, reason = allowed("stage", state, 10_000, False, config=NO_FLOOR)
        assert not ok
        assert "rolled its summary chain 3 times" in reason

    def test_under_the_cap_rolls(self) -> None:
        """A chain rolled twice may be rolled again."""
        assert may_run(ran(GuardState(), applied=True, freed=900, chain_length=3))

    def test_manual_bypasses_the_cap(self) -> None:
        """A manual compaction summarizes whatever the chain's length."""
        state = ran(GuardState(), applied=True, freed=900, chain_length=9)
        assert may_run(state, manual=True)


class TestPurity:
    """The guard functions are pure and deterministic."""

    def test_same_arguments_same_answers(self) -> None:
        """Repeated calls agree, and `record` leaves its input unchanged."""
        state = ran(GuardState(), failed=True)
        copy = state.model_copy(deep=True)
        outcome = StageOutcome(view_tokens=100, freed=1, applied=True)
        assert record(state, "stage", outcome) == record(state, "stage", outcome)
        assert allowed("stage", state, 50, False) == allowed("stage", state, 50, False)
        assert state == copy

    @settings(max_examples=200, deadline=None)
    @given(
        views=st.lists(st.integers(0, 50_000), min_size=2, max_size=40),
        failing=st.lists(st.booleans(), min_size=40, max_size=40),
    )
    def test_a_stage_that_frees_nothing_never_runs_twice_in_a_row(
        self, views: list[int], failing: list[bool]
    ) -> None:
        """Without growth, a stage that never frees tokens skips the run after it ran."""
        config = GuardConfig(floor_tokens=0)
        state, last_ran, last_view = GuardState(), False, 0
        for view, fails in zip(views, failing, strict=False):
            state = tick(state)
            ok, _ = allowed("stage", state, view, False, config=config)
            grew = view >= last_view * (1 + config.regrow)
            assert not (ok and last_ran and not grew)
            if ok:
                state = record(state, "stage", StageOutcome(view_tokens=view, failed=fails))
                last_view = view
            last_ran = ok


# --- run_pipeline ---------------------------------------------------------------------------


class FailingProcessor:
    """A processor that always raises."""

    name = "failing"

    def propose(self, targets: Sequence[Node], ctx: ProcessorContext) -> Proposal:
        """Raise, whatever the input."""
        msg = "boom"
        raise RuntimeError(msg)


class IdleProcessor:
    """A processor that never proposes anything (so never frees a token)."""

    name = "idle"
    calls = 0

    def propose(self, targets: Sequence[Node], ctx: ProcessorContext) -> Proposal:
        """Propose nothing."""
        type(self).calls += 1
        return Proposal(processor=self.name)


def _log(step: int) -> str:
    return "\n".join(f"line {j} of run {step}: value={j * step} status=ok" for j in range(300))


def fill(manager: ContextManager, steps: int = 4, start: int = 0) -> None:
    """Add a coding session with large tool outputs."""
    if start == 0:
        manager.add_system("You are a careful coding agent.")
        manager.add_user("Fix the failing test in tests/test_io.py without touching the API.")
    for step in range(start, start + steps):
        manager.add_assistant(
            f"Running the tests, step {step}.",
            tool_calls=[{"id": f"call_{step}", "name": "bash", "arguments": {"cmd": "pytest"}}],
        )
        manager.add_tool_result(f"call_{step}", _log(step))
        manager.add_user(f"Go on with step {step + 1}.")


@pytest.fixture(name="make_manager")
def fixture_make_manager() -> Callable[..., ContextManager]:
    """A factory of filled word-counting managers."""

    def make(**options: Any) -> ContextManager:
        manager = make_manager(counter=WordCounter(), **options)
        fill(manager)
        return manager

    return make


async def _run(manager: ContextManager, pipeline: Sequence[Any], **options: Any) -> Any:
    settings = StageSettings(None, ScriptedSummarizer([f"summary {i}" for i in range(20)]), None)
    return await run_pipeline(pipeline, manager.working, manager.bus, settings, **options)


class TestRunPipeline:
    """`run_pipeline` consults the guards before each stage and records after."""

    async def test_without_guards_nothing_changes(
        self, make_manager: Callable[..., ContextManager]
    ) -> None:
        """With no guards every stage runs each time and no state comes back."""
        manager = make_manager()
        for _ in range(3):
            run = await _run(manager, [FailingProcessor()])
            assert (run.stages, run.skipped, run.guard_state) == (["failing"], [], None)

    async def test_failures_disable_a_stage_quietly(
        self, make_manager: Callable[..., ContextManager]
    ) -> None:
        """After three failures the stage is skipped, listed in the run, not on the bus."""
        manager, state = make_manager(), None
        for _ in range(3):
            run = await _run(manager, [FailingProcessor()], guards=NO_STALL, guard_state=state)
            state = run.guard_state
        with Recorder(manager.bus) as recorder:
            run = await _run(manager, [FailingProcessor()], guards=NO_STALL, guard_state=state)
        assert run.stages == []
        assert [name for name, _ in run.skipped] == ["failing"]
        assert recorder.names() == []
        manual = await _run(
            manager, [FailingProcessor()], guards=NO_STALL, guard_state=state, mode=RunMode.MANUAL
        )
        assert manual.stages == ["failing"]

    async def test_disabling_a_stage_logs_a_warning(
        self, make_manager: Callable[..., ContextManager], caplog: pytest.LogCaptureFixture
    ) -> None:
        """The failure that disables a stage is logged once, with its error and cool-down."""
        manager, state = make_manager(), None
        with caplog.at_level(logging.WARNING, logger="context_graph"):
            for _ in range(4):
                run = await _run(manager, [FailingProcessor()], guards=NO_STALL, guard_state=state)
                state = run.guard_state
        records = [r for r in caplog.records if r.name == "context_graph"]
        assert [r.levelno for r in records] == [logging.WARNING]
        message = records[0].getMessage()
        assert message.startswith("guard: processor `failing` failed 3 times in a row")
        assert "RuntimeError: boom" in message
        assert "for the next 20 pipeline runs" in message

    async def test_without_guards_nothing_is_logged(
        self, make_manager: Callable[..., ContextManager], caplog: pytest.LogCaptureFixture
    ) -> None:
        """With no guards a failing stage is never disabled, so nothing is logged."""
        manager = make_manager()
        with caplog.at_level(logging.WARNING, logger="context_graph"):
            for _ in range(4):
                await _run(manager, [FailingProcessor()])
        assert [r for r in caplog.records if r.name == "context_graph"] == []

    async def test_an_idle_stage_is_not_rerun(
        self, make_manager: Callable[..., ContextManager]
    ) -> None:
        """A stage that frees nothing is skipped next time; a useful one is not."""
        manager, state = make_manager(), None
        pipeline = [IdleProcessor(), ObservationMasker()]
        first = await _run(manager, pipeline, guards=NO_FLOOR, guard_state=state)
        assert first.stages == ["idle", ObservationMasker.name]
        second = await _run(manager, pipeline, guards=NO_FLOOR, guard_state=first.guard_state)
        assert [name for name, _ in second.skipped][:1] == ["idle"]

    async def test_the_floor_skips_everything(
        self, make_manager: Callable[..., ContextManager]
    ) -> None:
        """A view under the floor is left alone automatically and compacted manually."""
        manager = make_manager()
        guards = GuardConfig(floor_tokens=10**9)
        run = await _run(manager, [ObservationMasker()], guards=guards)
        assert (run.stages, run.applied) == ([], 0)
        run = await _run(manager, [ObservationMasker()], guards=guards, mode=RunMode.MANUAL)
        assert run.applied == 1

    async def test_summary_chains_are_capped(
        self, make_manager: Callable[..., ContextManager]
    ) -> None:
        """The summarizer rolls its chain `max_resummarize` times, then stops."""
        manager, state = make_manager(), None
        guards = GuardConfig(floor_tokens=0, min_progress=0, max_resummarize=1)
        lengths = []
        for round_ in range(3):
            run = await _run(manager, [HistorySummarizer()], guards=guards, guard_state=state)
            state = run.guard_state
            assert state is not None
            lengths.append((run.applied, state.stages[HistorySummarizer.name].chain_length))
            fill(manager, steps=2, start=10 * (round_ + 1))
        assert lengths == [(1, 1), (1, 2), (0, 2)]
