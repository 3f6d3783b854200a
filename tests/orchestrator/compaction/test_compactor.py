"""The compactor's collaborators on their own: the run slot, and the mode a run is in."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import anyio
import pytest

from context_graph.graph.context_graph import ContextGraph
from context_graph.graph.nodes import Node
from context_graph.testing import WordCounter
from orchestrator.bus import EventBus, Recorder
from orchestrator.compaction.compactor import Compactor
from orchestrator.compaction.guards import GuardConfig
from orchestrator.compaction.pipeline import PipelineRun, StageSettings, run_stage
from orchestrator.compaction.plan import RunMode
from orchestrator.compaction.screen import SecretScreen
from orchestrator.compaction.slot import RunSlot
from orchestrator.counters import ProposalCounters
from orchestrator.persistence.manager_state import StateKeeper
from orchestrator.policy import Policy
from orchestrator.policy.resolved import resolve_options
from orchestrator.working.buffer import WorkingGraph
from processors.base import ProcessorContext, Proposal

#: No stage stalls, no floor: every stage runs unless a test sets its own guards.
OPEN = GuardConfig(floor_tokens=0, min_progress=0.0)


class GatedProcessor:
    """Proposes nothing, after waiting for `gate`; logs when each call starts and ends."""

    name = "gated"

    def __init__(self, log: list[str], gate: anyio.Event | None = None) -> None:
        self.log = log
        self.gate = gate

    async def propose(self, targets: Sequence[Node], ctx: ProcessorContext) -> Proposal:
        self.log.append("start")
        if self.gate is not None:
            await self.gate.wait()
        else:
            await anyio.lowlevel.checkpoint()
        self.log.append("end")
        return Proposal(processor=self.name)


class StuckProcessor:
    """Never returns: only a time limit ends its stage."""

    name = "stuck"

    async def propose(self, targets: Sequence[Node], ctx: ProcessorContext) -> Proposal:
        await anyio.sleep_forever()
        raise AssertionError("unreachable")


@dataclass
class Parts:
    """A compactor and what it was built from."""

    working: WorkingGraph
    bus: EventBus
    counters: ProposalCounters
    compactor: Compactor


def _parts(pipeline: Sequence[Any], **options: Any) -> Parts:
    """A compactor over a small session with one large tool output, as the manager builds it."""
    if options.get("triggers", "given") is None:
        options.pop("triggers")  # the default triggers
    resolved = resolve_options(Policy(pipeline=pipeline, **options), counter=WordCounter())
    raw = ContextGraph(counter=WordCounter())
    raw.add_system("You are careful.")
    raw.add_user("Run the tests.")
    raw.add_assistant("Running.", [{"id": "c1", "name": "bash"}])
    raw.add_tool_result("c1", " ".join(f"line{n}" for n in range(400)))
    raw.add_user("Go on.")
    working = WorkingGraph(raw, clock=lambda: 1e9)
    bus = EventBus()
    counters = ProposalCounters()
    screen = SecretScreen(working, bus, None, counters)
    compactor = Compactor(
        working,
        bus,
        resolved,
        StateKeeper(None),
        screen,
        counters,
        unsent=lambda: frozenset(),
        held=lambda turns: frozenset(),
    )
    return Parts(working, bus, counters, compactor)


class TestRunSlot:
    def test_a_second_claim_waits_until_the_first_is_released(self) -> None:
        """While one holder has the slot, another `claim` blocks; `release` hands it on."""
        slot = RunSlot()
        log: list[str] = []

        async def second() -> None:
            busy = await slot.claim()
            log.append("second claimed")
            slot.release(busy)

        async def main() -> None:
            first = await slot.claim()
            async with anyio.create_task_group() as group:
                group.start_soon(second)
                for _ in range(5):
                    await anyio.lowlevel.checkpoint()
                log.append("first releases")
                assert slot.busy
                slot.release(first)
            assert not slot.busy

        anyio.run(main)
        assert log == ["first releases", "second claimed"]

    def test_wait_returns_at_once_when_the_slot_is_free(self) -> None:
        """`wait` on a free slot does not block and claims nothing."""
        slot = RunSlot()

        async def main() -> None:
            with anyio.fail_after(5):
                await slot.wait()
            assert not slot.busy

        anyio.run(main)


class TestCompactor:
    def test_two_runs_never_overlap(self) -> None:
        """A run started while another works begins its first stage only after that run ended."""
        log: list[str] = []
        gate = anyio.Event()
        parts = _parts([GatedProcessor(log, gate)], guards=OPEN)

        async def main() -> None:
            async with anyio.create_task_group() as group:
                group.start_soon(parts.compactor.run, RunMode.MANUAL, None)
                group.start_soon(parts.compactor.run, RunMode.MANUAL, None)
                for _ in range(10):
                    await anyio.lowlevel.checkpoint()
                assert log == ["start"]  # the second run waits for the slot
                assert parts.compactor.slot.busy
                gate.set()

        anyio.run(main)
        assert log == ["start", "end", "start", "end"]
        assert not parts.compactor.slot.busy

    def test_a_run_takes_the_pending_firings(self) -> None:
        """What `check` kept is handled by the next run, which leaves nothing pending."""
        parts = _parts([GatedProcessor([])], guards=OPEN, triggers=None)
        parts.compactor.mark_boundary("done")
        assert [f.kind for f in parts.compactor.check(None)] == ["boundary"]
        assert parts.compactor.due
        anyio.run(parts.compactor.run, RunMode.SOFT, None)
        assert not parts.compactor.due
        assert parts.compactor.state()["pending"] == []


class TestRunMode:
    @pytest.mark.parametrize(
        ("mode", "runs"),
        [
            (RunMode.MANUAL, True),  # every guard bypassed
            (RunMode.OVERFLOW, True),  # the floor is lifted
            (RunMode.SOFT, False),
            (RunMode.BACKGROUND, False),
        ],
    )
    def test_the_mode_decides_whether_the_floor_holds(self, mode: RunMode, runs: bool) -> None:
        """Under a floor no view reaches, only a manual or overflowing run calls the stage."""
        log: list[str] = []
        parts = _parts([GatedProcessor(log)], guards=GuardConfig(floor_tokens=10**9))
        with Recorder(parts.bus) as recorder:
            run = anyio.run(parts.compactor.run, mode, 10_000)
        assert (log == ["start", "end"]) is runs
        assert [name for name, _ in run.skipped] == ([] if runs else ["gated"])
        done = recorder.of("compaction_done")[0]
        assert done["background"] is (mode is RunMode.BACKGROUND)

    @pytest.mark.parametrize("mode", list(RunMode))
    def test_only_a_manual_stage_is_recorded_as_manual(self, mode: RunMode) -> None:
        """`run_stage` marks its outcome manual in `RunMode.MANUAL` and in no other mode."""
        parts = _parts([])
        settings = StageSettings(None, None, None)
        outcome = anyio.run(
            lambda: run_stage(
                GatedProcessor([]), parts.working, parts.bus, settings, PipelineRun(), mode=mode
            )
        )
        assert outcome.manual is (mode is RunMode.MANUAL)

    @pytest.mark.parametrize("mode", list(RunMode))
    def test_the_mode_picks_the_time_limit(self, mode: RunMode) -> None:
        """A background run is cut by `background_timeout`, every other by `compaction_timeout`."""
        parts = _parts(
            [StuckProcessor()], guards=OPEN, background_timeout=0.01, compaction_timeout=0.02
        )
        with Recorder(parts.bus) as recorder:
            run = anyio.run(parts.compactor.run, mode, None)
        assert run.timed_out
        reported = recorder.of("compaction_timed_out")[0]
        assert reported["timeout"] == (0.01 if mode is RunMode.BACKGROUND else 0.02)
        assert reported["background"] is (mode is RunMode.BACKGROUND)
