"""Which spans the summarize stage takes, and how often per run.

A session summarized twice (the span between two user turns, then the tool loop after
the second) holds two summaries once a third user turn arrives; the span between the
first request and the latest turn then holds both, with the user turn between them, and
the next summary absorbs all three: the past stays one summary, however many requests
came. A run that must reach its target summarizes the next span too.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from context_graph.graph.nodes import Node
from context_graph.testing import Recorder, ScriptedSummarizer, WordCounter
from context_graph.validate.request import validate
from orchestrator.manager import ContextManager
from orchestrator.policy import Policy
from processors import HistorySummarizer
from tests.orchestrator.policy_keywords import make_manager


def _log(step: int, lines: int = 60) -> str:
    return "\n".join(f"line {j} of run {step}: value={j * step} status=ok" for j in range(lines))


def _steps(manager: ContextManager, first: int, count: int, lines: int = 60) -> None:
    for step in range(first, first + count):
        manager.add_assistant(f"Step {step}.", [{"id": f"c{step}", "name": "bash"}])
        manager.add_tool_result(f"c{step}", _log(step, lines))


def _given(summarizer: ScriptedSummarizer, call: int) -> Sequence[Node]:
    nodes: Sequence[Node] = summarizer.calls[call][0]
    return nodes


def _manager(summarizer: ScriptedSummarizer, **options: Any) -> ContextManager:
    return make_manager(
        counter=WordCounter(),
        **options,
        policy=Policy(summarizer=summarizer, pipeline=[HistorySummarizer()]),
    )


class TestTwoSummariesInOneSpan:
    async def test_the_next_summary_absorbs_both_and_the_turn_between(self) -> None:
        # Each quotes the user's later message, as a summary of a span holding it must.
        quote = "The user said: Also check the logging module."
        summarizer = ScriptedSummarizer(
            [f"Summary {n}: steps ran, all ok. {quote}" for n in range(6)]
        )
        manager = _manager(summarizer)
        manager.add_system("You are a careful coding agent.")
        manager.add_user("Fix the failing test in tests/test_io.py.")
        _steps(manager, 0, 3)
        manager.add_user("Also check the logging module.")
        _steps(manager, 3, 4)
        first = await manager.compact()  # the span between the two user turns
        second = await manager.compact()  # the loop after the second one
        assert (first.applied, second.applied) == (1, 1)
        manager.add_user("Now the docs, please.")
        _steps(manager, 7, 4)
        third = await manager.compact()
        assert third.applied == 1
        nodes, previous, _ = summarizer.calls[2]
        # The oldest summary is updated; the user turn after it, the loop's summary and
        # the two steps that summary left are merged in, in order.
        assert previous is not None and "Summary 0" in previous
        assert [(n.kind, n.text) for n in nodes[:2]] == [
            ("user", "Also check the logging module."),
            ("summary", f"Summary 1: steps ran, all ok. {quote}"),
        ]
        assert [n.tool_call_id for n in nodes if n.kind == "tool_call"] == ["c5", "c6"]
        result = await manager.render()
        text = str(result.payload)
        assert "Summary 2" in text and "Summary 0" not in text and "Summary 1" not in text
        assert "Fix the failing test" in text and "Now the docs, please." in text
        assert sum(unit.kind == "summary" for unit in manager.working.view.units()) == 1
        assert validate(result.payload, "openai") == []


class TestRepeatedSummaries:
    async def test_a_run_summarizes_the_loop_too_when_the_older_span_is_not_enough(
        self,
    ) -> None:
        summarizer = ScriptedSummarizer([f"Summary {n}: steps ran, all ok." for n in range(6)])
        manager = _manager(summarizer)
        manager.add_system("You are a careful coding agent.")
        manager.add_user("Fix the failing test in tests/test_io.py.")
        _steps(manager, 0, 2)
        manager.add_user("Go on.")
        _steps(manager, 2, 8)
        raw = (await manager.render()).tokens
        with Recorder(manager.bus) as recorder:
            result = await manager.render(budget=raw // 2)
        assert result.tokens <= raw // 2
        applied = recorder.of("proposal_applied")
        assert len(applied) == 2  # the span between the turns, then the loop
        assert len(summarizer.calls) == 2
        loop = {n.tool_call_id for n in _given(summarizer, 1) if n.kind == "tool_call"}
        assert loop == {f"c{step}" for step in range(2, 8)}  # the last two steps stay

    async def test_one_span_is_enough_when_it_reaches_the_target(self) -> None:
        summarizer = ScriptedSummarizer([f"Summary {n}." for n in range(6)])
        manager = _manager(summarizer)
        manager.add_system("You are a careful coding agent.")
        manager.add_user("Fix the failing test in tests/test_io.py.")
        _steps(manager, 0, 8, lines=120)
        manager.add_user("Go on.")
        _steps(manager, 8, 3, lines=5)
        raw = (await manager.render()).tokens
        await manager.render(budget=int(raw * 0.8))
        assert len(summarizer.calls) == 1
