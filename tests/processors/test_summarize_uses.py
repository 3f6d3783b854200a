"""`tool_uses` reads a span's outputs once, however often a summary asks for its uses."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from context_graph import ContextGraph
from context_graph.graph.nodes import AnswerNode, Node, ToolCallNode
from context_graph.testing import WordCounter
from processors import clear_caches
from processors.summarize import facts
from processors.summarize.extractive import ExtractiveSummarizer
from processors.summarize.facts import ToolUse, outcome_of, tool_uses


def _session(outputs: list[tuple[str, bool]]) -> list[Node]:
    graph = ContextGraph(counter=WordCounter())
    graph.add_user("Make the tests pass.")
    for k, (output, failed) in enumerate(outputs):
        arguments = {"command": f"pytest tests/test_{k % 3}.py"}
        graph.add_assistant(
            tool_calls=[{"id": f"c{k % 4}", "name": "bash", "arguments": arguments}]
        )
        graph.add_tool_result(f"c{k % 4}", output, is_error=failed)
    return [graph[node_id] for unit in graph.units() for node_id in unit.node_ids]


def _slow(nodes: list[Node]) -> list[ToolUse]:
    """What `tool_uses` computes, with no memo: each call paired with its answer."""
    latest: dict[str, ToolCallNode] = {}
    uses: list[ToolUse] = []
    for node in nodes:
        if isinstance(node, ToolCallNode):
            latest[node.tool_call_id] = node
        elif isinstance(node, AnswerNode) and node.tool_call_id is not None:
            call = latest.pop(node.tool_call_id, None)
            uses.append(ToolUse(call, node, outcome_of(node, call), facts.error_key(call, node)))
    return uses


@pytest.fixture(name="outcomes_read")
def fixture_outcomes_read(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many outputs `tool_uses` read (calls of `outcome_of`), from a cleared memo."""
    clear_caches()
    read = [0]
    real: Callable[..., Any] = facts.outcome_of

    def counted(*args: Any) -> Any:
        read[0] += 1
        return real(*args)

    monkeypatch.setattr(facts, "outcome_of", counted)
    return read


class TestToolUses:
    def test_a_brief_reads_each_output_once(self, outcomes_read: list[int]) -> None:
        """The brief's errors, open errors and failures share one reading of the span."""
        nodes = _session([("1 failed", True), ("2 passed", False)] * 20)
        ExtractiveSummarizer(counter=WordCounter()).brief(nodes, previous=None, instructions=None)
        assert outcomes_read[0] == 40

    def test_clear_caches_forgets_the_spans(self, outcomes_read: list[int]) -> None:
        """After `clear_caches` the same span is read again."""
        nodes = _session([("ok", False)] * 3)
        tool_uses(nodes)
        tool_uses(nodes)
        clear_caches()
        tool_uses(nodes)
        assert outcomes_read[0] == 6

    @settings(max_examples=60, deadline=None)
    @given(
        outputs=st.lists(
            st.tuples(st.sampled_from(["ok", "1 failed", "Traceback", ""]), st.booleans()),
            max_size=12,
        ),
        picks=st.lists(st.tuples(st.integers(0, 30), st.integers(0, 30)), max_size=8),
    )
    def test_the_uses_are_those_of_a_fresh_reading(
        self, outputs: list[tuple[str, bool]], picks: list[tuple[int, int]]
    ) -> None:
        """Any sequence of spans, repeated or of equal length, gets its own uses."""
        nodes = _session(outputs)
        for start, length in [(0, len(nodes)), *picks, (0, len(nodes))]:
            span = nodes[start : start + length]
            assert tool_uses(span) == _slow(span)
            assert tool_uses(iter(span)) == _slow(span)
