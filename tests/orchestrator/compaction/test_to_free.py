"""A run that compacts to its target tells each stage how far over it the request is.

`ProcessorContext.to_free` is the rendered request's excess over the run's target, in
request tokens, as the stage starts; a manual `compact()` (which goes through every stage
whatever the size) tells none.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import anyio

from context_graph.graph.nodes import Node
from context_graph.testing import WordCounter
from orchestrator.compaction.triggers import TriggerConfig
from orchestrator.manager import ContextManager
from orchestrator.policy import Policy
from processors import ProcessorContext, Proposal, ToolOutputTruncator
from processors.base import Scope

BUDGET = 2_000


class NeedRecorder:
    """An output stage that proposes nothing and records what each call was told to free."""

    name = "need_recorder"
    scope: ClassVar[Scope] = "outputs"

    def __init__(self) -> None:
        self.needs: list[int | None] = []

    def propose(self, targets: Sequence[Node], ctx: ProcessorContext) -> Proposal:
        self.needs.append(ctx.to_free)
        return Proposal(processor=self.name)


def _manager(recorder: NeedRecorder) -> ContextManager:
    return ContextManager(
        counter=WordCounter(),
        budget=BUDGET,
        policy=Policy(
            triggers=TriggerConfig(soft_ratio=None, hard_ratio=0.9, hysteresis=0.1),
            pipeline=[recorder, ToolOutputTruncator(max_tokens=60)],
            compact_to=0.5,
        ),
    )


def _fill(manager: ContextManager, steps: int) -> None:
    manager.add_system("You are a careful coding agent.")
    manager.add_user("Find why the export of report 42 fails.")
    for index in range(steps):
        call = f"c{index}"
        manager.add_assistant(f"Step {index}: reading.", [{"id": call, "name": "read"}])
        rows = "\n".join(f"s{index} row {j} value {j * 3}" for j in range(40))
        manager.add_tool_result(call, rows)


class TestToFree:
    def test_a_run_to_the_target_tells_the_stage_the_request_excess(self) -> None:
        recorder = NeedRecorder()
        manager = _manager(recorder)
        _fill(manager, 12)  # about 2,100 words: over the hard level
        result = manager.render_sync()  # the render runs the compaction first
        assert result.tokens <= BUDGET
        told = [need for need in recorder.needs if need is not None]
        assert told, recorder.needs
        # The first stage of the run hears the whole excess over the target (0.5).
        assert told[0] > BUDGET * 0.9 - BUDGET * 0.5 - 200

    def test_a_manual_compaction_tells_no_need(self) -> None:
        recorder = NeedRecorder()
        manager = _manager(recorder)
        _fill(manager, 3)

        async def compact() -> None:
            await manager.compact()

        anyio.run(compact)
        assert recorder.needs and all(need is None for need in recorder.needs)


class TestTargetUnderALevel:
    def test_a_soft_level_under_the_low_water_mark_is_aimed_under(self) -> None:
        """A run the soft level fired lands under that level's rearm point, not at the mark."""
        manager = ContextManager(
            counter=WordCounter(),
            budget=BUDGET,
            policy=Policy(
                triggers=TriggerConfig(soft_ratio=0.5, hard_ratio=0.95, hysteresis=0.1),
                pipeline=[ToolOutputTruncator(max_tokens=60)],
                compact_to=0.7,
            ),
        )
        _fill(manager, 6)  # over the soft level (1,000 words), under the mark (1,400)
        assert BUDGET * 0.5 < manager.working.total_tokens < BUDGET * 0.7
        result = manager.render_sync()
        assert manager.stats().proposals_applied >= 1
        assert result.tokens <= BUDGET * 0.4
