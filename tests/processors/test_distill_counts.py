"""The distiller counts a distillate from its header and body, never encoding it whole."""

from __future__ import annotations

import pytest

from context_graph import ContextGraph, NodeTokenCache, TiktokenCounter
from processors import ProcessorContext, Replace
from processors.distill import Distiller

LOG = "\n".join(
    f"2024-05-20 10:00:{i % 60:02d} INFO worker {i} handled request {i}" for i in range(300)
)


class RecordingTiktoken:
    """`TiktokenCounter`, recording every text it encodes."""

    def __init__(self) -> None:
        self._tiktoken = TiktokenCounter()
        self.calls: list[str] = []

    @property
    def name(self) -> str:
        return self._tiktoken.name

    def count(self, text: str) -> int:
        self.calls.append(text)
        return self._tiktoken.count(text)

    def is_seam(self, left: str, right: str) -> bool:
        return self._tiktoken.is_seam(left, right)


def _graph(counter: RecordingTiktoken) -> tuple[ContextGraph, list[str]]:
    graph = ContextGraph(counter=counter)
    graph.add_user("what did the worker log?")
    graph.add_assistant(tool_calls=[{"id": "c1", "name": "bash", "arguments": {"cmd": "cat"}}])
    result = graph.add_tool_result("c1", LOG)
    graph.add_assistant(tool_calls=[{"id": "c2", "name": "read", "arguments": {"path": "w.log"}}])
    read = graph.add_file_read("logs/w.log", LOG, call_id="c2")
    return graph, [result, read]


@pytest.mark.parametrize("level", ["medium", "heavy"])
async def test_replacements_are_counted_exactly_without_encoding_them(level: str) -> None:
    """The proposal's counts are the fresh counts, and no replacement's text was encoded."""
    counter = RecordingTiktoken()
    graph, ids = _graph(counter)
    proposal = await Distiller(level=level, min_tokens=0).propose(  # type: ignore[arg-type]
        [graph[node_id] for node_id in ids], ProcessorContext.for_graph(graph)
    )
    replacements = [edit.replacement for edit in proposal.edits if isinstance(edit, Replace)]
    assert len(replacements) == 2
    fresh = NodeTokenCache(TiktokenCounter())
    assert proposal.tokens_after == sum(fresh.count_node(node) for node in replacements)
    encoded = set(counter.calls)
    for node in replacements:
        assert node.text not in encoded
        assert f"logs/w.log\n{node.text}" not in encoded
