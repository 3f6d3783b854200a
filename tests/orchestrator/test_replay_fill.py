"""Fill: how much of the budget a compacted request uses, per call and over a replay."""

from __future__ import annotations

from context_graph.graph.events import AssistantTurn, SystemPrompt, ToolCall, ToolResult, UserTurn
from context_graph.testing import WordCounter
from orchestrator import ContextManager
from orchestrator.policy import Policy
from orchestrator.replay import replay


def _events(steps: int = 30) -> list:  # type: ignore[type-arg]
    events: list = [SystemPrompt(content="You fix bugs."), UserTurn(content="Fix the parser.")]  # type: ignore[type-arg]
    for n in range(steps):
        events += [
            AssistantTurn(content=f"Step {n}.", tool_calls=(ToolCall(id=f"c{n}", name="bash"),)),
            ToolResult(call_id=f"c{n}", content=f"line {n} " * 120),
        ]
    return events


def test_every_call_says_its_fill_and_the_report_the_mean_of_compacted_calls() -> None:
    """fill = sent / budget per call; mean_fill averages the calls sent compacted."""
    budget = 2_000
    report = replay(
        _events(),
        budget=budget,
        manager=ContextManager(budget=budget, counter=WordCounter(), policy=Policy()),
    )
    for call in report.calls:
        assert call.rendered_tokens is not None and call.fill == call.rendered_tokens / budget
    compacted = [c.fill for c in report.calls if c.compacted]
    assert compacted, "the session must outgrow the budget"
    assert report.mean_fill == sum(compacted) / len(compacted)  # type: ignore[arg-type]
    assert 0 < report.mean_fill <= 1


def test_no_budget_no_fill() -> None:
    """Without a budget there is nothing to fill."""
    report = replay(_events(3), budget=None)
    assert all(call.fill is None for call in report.calls) and report.mean_fill is None
