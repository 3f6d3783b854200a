"""A text distilled again is not worked out again, unless what `keep` answers changed."""

from __future__ import annotations

import pytest

import processors.distill.distiller as distiller_module
from context_graph import ContextGraph
from context_graph.testing import WordCounter
from processors import ProcessorContext, Replace
from processors.distill import Distiller
from processors.distill.memo import AskedKeep

FIND = [f"./pkg/{'core' if i % 3 else 'io'}/module_{i}.py" for i in range(2_000)]
DEEP = "./pkg/io/module_1584.py"


@pytest.fixture(name="runs")
def runs_fixture(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The texts `distill_text` really worked on."""
    runs: list[str] = []
    real = distiller_module.distill_text

    def counting(text: str, *args: object, **kwargs: object) -> object:
        runs.append(text)
        return real(text, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(distiller_module, "distill_text", counting)
    return runs


def _session() -> tuple[ContextGraph, str]:
    graph = ContextGraph(counter=WordCounter())
    graph.add_user("where is the io code?")
    graph.add_assistant(tool_calls=[{"id": "c1", "name": "bash", "arguments": {"cmd": "find"}}])
    return graph, graph.add_tool_result("c1", "\n".join(FIND))


async def _distilled_text(graph: ContextGraph, node_id: str) -> str:
    proposal = await Distiller(level="heavy").propose(
        [graph[node_id]], ProcessorContext.for_graph(graph)
    )
    (edit,) = proposal.edits
    assert isinstance(edit, Replace)
    return edit.replacement.text


class TestDistillerMemo:
    async def test_the_same_question_is_answered_from_memory(self, runs: list[str]) -> None:
        """Proposing twice over the same graph gives the same text and distills once."""
        graph, node_id = _session()
        first = await _distilled_text(graph, node_id)
        second = await _distilled_text(graph, node_id)
        assert first == second
        assert len(runs) == 1

    async def test_a_new_later_mention_is_taken_into_account(self, runs: list[str]) -> None:
        """Once a later turn names a path the first run left out, the text is distilled anew."""
        graph, node_id = _session()
        assert DEEP not in await _distilled_text(graph, node_id)
        call = {"id": "c2", "name": "read", "arguments": {"path": DEEP}}
        graph.add_assistant("Reading the module.", tool_calls=[call])
        assert DEEP in await _distilled_text(graph, node_id)
        assert len(runs) == 2

    async def test_another_graph_does_not_share_results(self, runs: list[str]) -> None:
        """Results live with one graph's token cache."""
        for _ in range(2):
            graph, node_id = _session()
            await _distilled_text(graph, node_id)
        assert len(runs) == 2


class TestAskedKeep:
    def test_records_each_question_and_answer(self) -> None:
        """Every membership question is passed on once and remembered with its answer."""
        asked = AskedKeep(frozenset({"a.py"}))
        assert "a.py" in asked
        assert "b.py" not in asked
        assert "a.py" in asked
        assert asked.answers == {"a.py": True, "b.py": False}
