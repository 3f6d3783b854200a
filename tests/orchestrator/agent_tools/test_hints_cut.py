"""A truncation with agent tools: its hint counts in the target and is said once."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from context_graph import ContextGraph
from context_graph.graph.nodes import AnswerNode
from context_graph.testing import WordCounter
from processors import ProcessorContext, Replace
from processors.truncate import ToolOutputTruncator

HINT = re.compile(r"\[call context_expand with id \S+ to restore [^\]]*\]")


def _graph(text: str) -> tuple[ContextGraph, AnswerNode]:
    graph = ContextGraph(counter=WordCounter())
    graph.add_user("Run the tests.")
    graph.add_assistant("Running.", tool_calls=[{"id": "c1", "name": "bash", "arguments": {}}])
    node_id = graph.add_tool_result("c1", text)
    node = graph[node_id]
    assert isinstance(node, AnswerNode)
    return graph, node


async def _cut(graph: ContextGraph, node: AnswerNode, max_tokens: int) -> AnswerNode | None:
    ctx = ProcessorContext.for_graph(graph, expand_hints=True)
    proposal = await ToolOutputTruncator(max_tokens=max_tokens).propose([node], ctx)
    if not proposal.edits:
        return None
    (edit,) = proposal.edits
    assert isinstance(edit, Replace)
    assert isinstance(edit.replacement, AnswerNode)
    return edit.replacement


class TestHintedCut:
    async def test_a_piece_cut_again_names_one_id(self) -> None:
        """Truncating text that ends with a hint keeps one hint, the new one."""
        body = "\n".join(f"line {j} value {j}" for j in range(200))
        hinted = f"{body}\n[call context_expand with id n-1 to restore the whole output]"
        graph, node = _graph(hinted)
        new = await _cut(graph, node, 120)
        assert new is not None
        assert HINT.findall(new.text) == [
            f"[call context_expand with id {node.id} to restore the whole output]"
        ]

    @settings(max_examples=40, deadline=None)
    @given(lines=st.integers(20, 400), max_tokens=st.integers(64, 600))
    async def test_the_hint_counts_in_the_target(self, lines: int, max_tokens: int) -> None:
        """The cut text with its hint line stays within `max_tokens` (words here)."""
        graph, node = _graph("\n".join(f"line {j} value {j}" for j in range(lines)))
        new = await _cut(graph, node, max_tokens)
        if new is None:
            return
        assert len(new.text.split()) <= max_tokens
        hint = f"[call context_expand with id {node.id} to restore the whole output]"
        assert new.text.endswith(hint)
