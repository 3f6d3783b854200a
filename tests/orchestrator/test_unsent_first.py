"""A budget level that fires because of new material shrinks that material first.

When one large tool output arrives and pushes the view over the hard level, cutting that
output (which no request has carried yet) is enough, and every message already sent stays
as it was: the next request extends the previous one, so the provider's prompt cache is
reused. Only when that is not enough does the whole-view run rewrite the history.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import anyio

from context_graph.graph.nodes import Node
from context_graph.render import RenderResult
from context_graph.testing import WordCounter
from context_graph.validate.request import validate
from orchestrator.compaction.triggers import TriggerConfig
from orchestrator.manager import ContextManager
from orchestrator.policy import Policy
from processors import HistorySummarizer, ProcessorContext, Proposal, ToolOutputTruncator

BUDGET = 2_000


def _output(words: int, tag: str) -> str:
    return "\n".join(f"{tag} row {j} value {j * 3}" for j in range(words // 5))


def _manager(budget: int | None = BUDGET) -> ContextManager:
    return ContextManager(
        counter=WordCounter(),
        budget=budget,
        policy=Policy(
            triggers=TriggerConfig(soft_ratio=None, hard_ratio=0.9, hysteresis=0.1),
            pipeline=[ToolOutputTruncator(max_tokens=150), HistorySummarizer()],
            compact_to=0.4,
        ),
    )


def _step(manager: ContextManager, index: int, words: int) -> None:
    call = f"c{index}"
    manager.add_assistant(f"Step {index}: reading.", [{"id": call, "name": "read"}])
    manager.add_tool_result(call, _output(words, f"s{index}"))


def _messages(result: RenderResult) -> list[str]:
    return [json.dumps(m, sort_keys=True) for m in result.payload["messages"]]


class Recorder:
    """A stage that proposes nothing and records the targets of every call."""

    name = "recorder"

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    def propose(self, targets: Sequence[Node], ctx: ProcessorContext) -> Proposal:
        self.calls.append([node.id for node in targets])
        return Proposal(processor=self.name)


def _recorded(triggers: TriggerConfig) -> tuple[list[list[str]], list[str], list[str]]:
    """Each call's targets, and the outputs sent before and after the last render."""
    recorder = Recorder()
    manager = ContextManager(
        counter=WordCounter(), budget=BUDGET, policy=Policy(triggers=triggers, pipeline=[recorder])
    )
    manager.add_system("You are a careful coding agent.")
    manager.add_user("Find why the export of report 42 fails.")
    for index in range(3):
        _step(manager, index, 100)
    manager.render_sync()
    sent = [node.id for node in _view(manager) if node.kind == "tool_result"]
    recorder.calls.clear()
    _step(manager, 99, 1_500)  # over the hard level, within the budget
    new = [node.id for node in _view(manager) if node.kind == "tool_result" and node.id not in sent]
    manager.render_sync()
    return recorder.calls, sent, new


def _view(manager: ContextManager) -> list[Node]:
    view = manager.working.view
    return [view[node_id] for node_id in view.current_ids()]


def _start(manager: ContextManager, steps: int) -> list[str]:
    manager.add_system("You are a careful coding agent.")
    manager.add_user("Find why the export of report 42 fails.")
    messages: list[str] = []
    for index in range(steps):
        _step(manager, index, 120)  # under the truncator's cap: left alone
        messages = _messages(manager.render_sync())
    return messages


class TestUnsentFirst:
    def test_a_large_new_output_is_cut_and_the_sent_prefix_kept(self) -> None:
        manager = _manager()
        before = _start(manager, 8)  # about half the budget
        _step(manager, 99, 1_500)  # pushes the view over the hard level
        result = manager.render_sync()
        after = _messages(result)
        assert result.tokens <= BUDGET and validate(result.payload, "openai") == []
        assert after[: len(before)] == before  # the prompt cache still holds
        kinds = {node.kind for node in _view(manager)}
        assert "summary" not in kinds
        (newest,) = [node for node in _view(manager) if node.meta.get("truncated")]
        assert "s99 row 0 " in newest.text  # the head of the new output is kept
        assert len(after) == len(before) + 2

    def test_when_cutting_the_new_output_is_not_enough_the_whole_view_is_compacted(
        self,
    ) -> None:
        manager = _manager()
        before = _start(manager, 13)  # near the hard level already
        _step(manager, 99, 1_500)
        result = manager.render_sync()
        after = _messages(result)
        assert result.tokens <= int(BUDGET * 0.4) + 200
        assert after[: len(before)] != before
        kinds = {node.kind for node in _view(manager)}
        assert "summary" in kinds

    def test_an_output_already_sent_is_not_singled_out(self) -> None:
        manager = _manager(budget=None)  # budgets come with each render
        manager.add_system("You are a careful coding agent.")
        manager.add_user("Find why the export of report 42 fails.")
        for index in range(8):
            _step(manager, index, 120)
        _step(manager, 99, 1_500)
        manager.render_sync(budget=100_000)  # carries everything: nothing is unsent now
        manager.render_sync(budget=BUDGET)
        # The hard level fired with nothing new: the whole-view run went on to the target.
        kinds = {node.kind for node in _view(manager)}
        assert "summary" in kinds

    def test_a_manual_compaction_runs_the_whole_pipeline(self) -> None:
        manager = _manager()
        _start(manager, 8)
        _step(manager, 99, 1_500)
        anyio.run(manager.compact)
        kinds = {node.kind for node in _view(manager)}
        assert "summary" in kinds


class TestWhenThePassRuns:
    def test_a_budget_level_runs_the_default_pipeline_on_the_new_outputs_first(self) -> None:
        calls, _sent, new = _recorded(TriggerConfig(soft_ratio=None, hard_ratio=0.9))
        # The pass over what no request carried yet; the whole-view run after it skips
        # the stage, which freed nothing there and so stalls (orchestrator.compaction.guards).
        assert calls == [new]

    def test_another_trigger_runs_the_whole_view_only(self) -> None:
        calls, sent, new = _recorded(
            TriggerConfig(soft_ratio=None, hard_ratio=None, max_messages=12)
        )
        assert calls == [sent + new]
