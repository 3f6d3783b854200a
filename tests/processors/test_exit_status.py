"""The processors read a result's exit status through `exit_code_of`."""

from __future__ import annotations

from context_graph import ContextGraph
from context_graph.graph.content import TextPart
from context_graph.graph.nodes import FileNode, ToolResultNode, UserNode
from context_graph.testing import WordCounter
from processors.base import ProcessorContext, Replace
from processors.exit_status import exit_code_of
from processors.mask import ObservationMasker
from processors.summarize.facts import outcome_of


class TestExitCodeOf:
    def test_the_typed_field_is_read(self) -> None:
        """A result's `exit_code` is its status."""
        assert exit_code_of(ToolResultNode(id="r", exit_code=4)) == 4

    def test_the_field_wins_over_an_older_meta_key(self) -> None:
        """When both are there, the typed field is the status."""
        assert exit_code_of(ToolResultNode(id="r", exit_code=0, meta={"returncode": 9})) == 0

    def test_a_node_stored_by_the_older_importer_keeps_its_status(self) -> None:
        """`meta["returncode"]`, as mini-swe-agent's importer wrote it before, still counts."""
        assert exit_code_of(ToolResultNode(id="r", meta={"returncode": 3})) == 3

    def test_other_meta_keys_and_odd_values_are_no_status(self) -> None:
        """Only the one legacy key, holding an int, is read: no guessing at other names."""
        assert exit_code_of(ToolResultNode(id="r", meta={"exit_code": 1})) is None
        assert exit_code_of(ToolResultNode(id="r", meta={"returncode": True})) is None
        assert exit_code_of(ToolResultNode(id="r", meta={"returncode": "1"})) is None
        assert exit_code_of(FileNode(id="f", path="a.py")) is None
        assert exit_code_of(UserNode(id="u")) is None


def _graph_with_status(code: int) -> tuple[ContextGraph, str]:
    """A bash result whose text says nothing of its status, which was recorded as `code`."""
    graph = ContextGraph(counter=WordCounter())
    graph.add_user("build it")
    graph.add_assistant(tool_calls=[{"id": "c1", "name": "bash", "arguments": "{}"}])
    words = " ".join(f"word{n}" for n in range(300))
    result = graph.add_tool_result("c1", words, exit_code=code)
    graph.add_user("next")
    graph.add_user("and next")
    return graph, result


class TestReaders:
    async def test_the_masker_says_the_recorded_status(self) -> None:
        """The placeholder of a masked output names the exit code the result recorded."""
        graph, result = _graph_with_status(7)
        masker = ObservationMasker(keep_turns=1, min_tokens=0)
        proposal = await masker.propose(list(graph), ProcessorContext.for_graph(graph))
        (edit,) = [e for e in proposal.edits if isinstance(e, Replace) and e.target == result]
        assert edit.replacement.text == "[output of bash masked: 1 line, 300 tokens, exit 7]"
        assert isinstance(edit.replacement, ToolResultNode)
        assert edit.replacement.exit_code == 7

    def test_the_summary_outcome_reads_it(self) -> None:
        """A result with a non-zero recorded status is a failure with that code."""
        node = ToolResultNode(
            id="r", tool_call_id="c", content=(TextPart(text="done"),), exit_code=3
        )
        assert outcome_of(node).describe() == "failed (exit 3): done"
