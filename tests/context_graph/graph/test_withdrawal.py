"""`Withdrawal`: recorded nodes out of every view of the graph, kept in the record."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchmarks.sdk_types import sdk_problems
from context_graph import (
    Compaction,
    ContextGraph,
    IngestError,
    SummaryNode,
    TextPart,
    ToolResult,
    UnknownNodeError,
    Withdrawal,
)
from context_graph.render import MISSING_RESULT_TEXT, Renderer
from context_graph.testing import WordCounter, graph_snapshot
from context_graph.validate import validate

FORMATS = ("openai", "anthropic", "gemini", "responses")


@pytest.fixture(name="graph")
def graph_fixture() -> ContextGraph:
    return ContextGraph(counter=WordCounter())


def _call(call_id: str, name: str = "bash") -> dict[str, object]:
    return {"id": call_id, "name": name, "arguments": {"cmd": call_id}}


def _turn(graph: ContextGraph, call_id: str, output: str) -> tuple[str, str, str]:
    """An assistant turn with one call and its result: (assistant, call, result) ids."""
    assistant, call = graph.add_assistant(f"calling {call_id}", tool_calls=[_call(call_id)])
    return assistant, call, graph.add_tool_result(call_id, output)


def _texts(graph: ContextGraph) -> list[str]:
    """Every rendered request of `graph`, one per format, as JSON text."""
    return [json.dumps(Renderer(format=fmt).render(graph).payload) for fmt in FORMATS]


class TestRecord:
    def test_withdrawn_nodes_leave_the_units_and_stay_in_the_record(
        self, graph: ContextGraph
    ) -> None:
        """A withdrawn user turn is in no unit, but `graph[id]` and the transcript keep it."""
        first = graph.add_user("keep this")
        gone = graph.add_user("withdraw this")
        graph.withdraw([gone])
        assert [u.node_ids for u in graph.units()] == [(first,)]
        assert graph.transcript() == (first, gone)
        assert graph[gone].kind == "user"
        assert graph.is_withdrawn(gone) and not graph.is_withdrawn(first)
        assert graph.withdrawn() == (gone,)
        with pytest.raises(UnknownNodeError, match="was withdrawn"):
            graph.unit_of(gone)

    def test_renders_in_every_format_leave_withdrawn_text_out(self, graph: ContextGraph) -> None:
        """No format sends a withdrawn node, and every request stays valid."""
        graph.add_system("rules")
        graph.add_user("question one")
        _, _, result = _turn(graph, "c1", "secret-output-xyz")
        graph.add_user("question two")
        gone = graph.add_user("typo-turn-qqq")
        graph.withdraw([result, gone])
        for fmt, text in zip(FORMATS, _texts(graph), strict=True):
            assert "secret-output-xyz" not in text and "typo-turn-qqq" not in text
            assert validate(json.loads(text), fmt) == [], fmt

    def test_lookups_leave_withdrawn_nodes_out(self, graph: ContextGraph) -> None:
        """Kind, tool, path and pin lookups no longer name a withdrawn node."""
        note = graph.add_note("a fact")
        _, call, result = _turn(graph, "c1", "out")
        old = graph.add_file_read("a.py", "v1")
        new = graph.add_file_read("a.py", "v2")
        assert graph.is_superseded(old)
        graph.withdraw([note, call, result, new])
        assert graph.by_kind("note") == () and graph.pinned() == ()
        assert graph.by_tool("bash") == ()
        assert graph.by_path("a.py") == (old,)
        assert not graph.is_superseded(old)

    def test_stats_count_what_stays(self, graph: ContextGraph) -> None:
        """`graph_stats` (what `inspect` prints) counts what stays, and how many went."""
        from context_graph.graph.stats import graph_stats

        graph.add_user("one")
        graph.withdraw([graph.add_user("two")])
        stats = graph_stats(graph)
        assert (stats.nodes, stats.units, stats.withdrawn) == (1, 1, 1)
        assert "withdrawn" not in graph_stats(ContextGraph()).model_dump()

    def test_a_summary_stands_for_no_withdrawn_node(self, graph: ContextGraph) -> None:
        """`covered` of an imported compaction leaves out a node withdrawn before it."""
        a = graph.add_user("one")
        b = graph.add_user("two")
        graph.withdraw([b])
        (summary,) = graph.ingest([Compaction(content="both")])
        assert graph.covered(summary) == (a,)


class TestPairing:
    def test_withdrawing_an_answer_opens_its_call(self, graph: ContextGraph) -> None:
        """The call renders with the placeholder result, and a new result answers it."""
        graph.add_user("go")
        _, call, result = _turn(graph, "c1", "first output")
        graph.withdraw([result])
        assert graph.answer_to(call) is None
        assert graph.unanswered_calls() == (call,)
        payload = Renderer(format="responses").render(graph).payload
        assert payload["input"][-1] == {
            "type": "function_call_output",
            "call_id": "c1",
            "output": MISSING_RESULT_TEXT,
        }
        again = graph.add_tool_result("c1", "second output")
        answer = graph.answer_to(call)
        assert answer is not None and answer.id == again
        assert graph.unit_of(call).node_ids[-1] == again

    def test_a_batch_may_withdraw_an_answer_and_answer_again(self, graph: ContextGraph) -> None:
        """A withdrawal and the result that replaces the withdrawn one land as one batch."""
        _, call, result = _turn(graph, "c1", "wrong")
        (new,) = graph.ingest(
            [Withdrawal(node_ids=(result,)), ToolResult(call_id="c1", content="right")]
        )
        answer = graph.answer_to(call)
        assert answer is not None and answer.id == new
        assert graph.withdrawn() == (result,)

    def test_a_call_and_its_answer_go_together(self, graph: ContextGraph) -> None:
        """A whole assistant turn may go; it leaves no open call behind."""
        graph.add_user("go")
        assistant, call, result = _turn(graph, "c1", "out")
        graph.withdraw([assistant, call, result])
        assert graph.unanswered_calls() == ()
        assert [u.kind for u in graph.units()] == ["user"]
        with pytest.raises(IngestError, match="answers no open call"):
            graph.add_tool_result("c1", "late")

    @pytest.mark.parametrize(
        ("which", "reason"),
        [
            ("call", "keeps its answer"),
            ("assistant", "keeps its tool call"),
        ],
    )
    def test_a_split_pair_is_refused(self, graph: ContextGraph, which: str, reason: str) -> None:
        """A call without its answer, or a turn without its calls, is refused; nothing changes."""
        assistant, call, _ = _turn(graph, "c1", "out")
        before = graph_snapshot(graph)
        with pytest.raises(IngestError, match=reason):
            graph.withdraw([call if which == "call" else assistant])
        assert graph_snapshot(graph) == before
        assert graph.withdrawn() == ()


class TestRefused:
    def test_an_unknown_id_is_refused_and_changes_nothing(self, graph: ContextGraph) -> None:
        """An id the graph lacks is named; a batch naming it withdraws nothing at all."""
        kept = graph.add_user("hi")
        before = graph_snapshot(graph)
        with pytest.raises(IngestError, match="no node has id `nope`"):
            graph.withdraw([kept, "nope"])
        assert graph_snapshot(graph) == before and graph.withdrawn() == ()

    def test_twice_is_refused(self, graph: ContextGraph) -> None:
        """A node withdrawn already cannot be withdrawn again."""
        node = graph.add_user("hi")
        graph.withdraw([node])
        with pytest.raises(IngestError, match="withdrawn already"):
            graph.withdraw([node])

    def test_a_derived_node_is_refused(self, graph: ContextGraph) -> None:
        """A processor's node is not in the record: the pristine nodes must be named."""
        node = graph.add_user("hi")
        made = SummaryNode(id="s1", content=(TextPart(text="x"),), abstracts=(node,))
        summary = graph.add_derived(made)
        with pytest.raises(IngestError, match="made by a processor"):
            graph.withdraw([summary])

    def test_a_node_of_the_same_batch_is_refused(self, graph: ContextGraph) -> None:
        """A withdrawal names only nodes recorded before its batch."""
        from context_graph import UserTurn

        probe = ContextGraph(counter=WordCounter())
        (node,) = probe.ingest([UserTurn(content="hi")])
        with pytest.raises(IngestError, match="in this same batch"):
            graph.ingest([UserTurn(content="hi"), Withdrawal(node_ids=(node,))])
        assert len(graph) == 0

    def test_malformed_withdrawals_are_refused(self, graph: ContextGraph) -> None:
        """No ids, an id named twice, or one string instead of a list: a typed error."""
        node = graph.add_user("hi")
        with pytest.raises(IngestError, match="at least 1"):
            graph.withdraw([])
        with pytest.raises(IngestError, match="named twice"):
            graph.withdraw([node, node])
        with pytest.raises(IngestError, match="not one string"):
            graph.withdraw(node)
        assert graph.withdrawn() == ()

    def test_a_node_a_later_compaction_stands_for_is_refused(self, graph: ContextGraph) -> None:
        """The compaction's summary may hold the node: it must go first, or with it."""
        early = graph.add_user("early")
        (summary,) = graph.ingest([Compaction(content="summary of early")])
        with pytest.raises(IngestError, match=f"covered by the compaction `{summary}`"):
            graph.withdraw([early])
        graph.withdraw([summary])
        graph.withdraw([early])
        assert graph.units() == ()


EVENTS = st.lists(st.sampled_from(["user", "turn", "withdraw", "answer"]), max_size=25)


class TestProperties:
    @settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(steps=EVENTS, picks=st.lists(st.integers(0, 10_000), min_size=25, max_size=25))
    def test_any_sequence_renders_valid_without_withdrawn_text(
        self, steps: list[str], picks: list[int]
    ) -> None:
        """After any ingests and withdrawals, the units hold exactly what stays, and every
        format's request is valid and free of withdrawn text."""
        graph = ContextGraph(counter=WordCounter())
        graph.add_system("rules")
        texts: dict[str, str] = {}
        turns: list[tuple[str, str]] = []
        calls = 0
        for n, (step, pick) in enumerate(zip(steps, picks, strict=False)):
            if step == "user":
                texts[graph.add_user(f"user-{n}-mark")] = f"user-{n}-mark"
            elif step == "turn":
                calls += 1
                assistant, call, result = _turn(graph, f"c{calls}", f"out-{n}-mark")
                texts[result] = f"out-{n}-mark"
                turns.append((assistant, call))
            elif step == "answer" and graph.unanswered_calls():
                call_id = graph[graph.unanswered_calls()[0]].tool_call_id  # type: ignore[attr-defined]
                texts[graph.add_tool_result(call_id, f"again-{n}-mark")] = f"again-{n}-mark"
            elif step == "withdraw" and pick % 3 == 0 and turns:
                # A whole turn: its assistant node, its call and the call's answer if any.
                assistant, call = turns.pop(pick % len(turns))
                answer = graph.answer_to(call)
                graph.withdraw([assistant, call, *([answer.id] if answer else [])])
            elif step == "withdraw":
                live = [i for i in texts if not graph.is_withdrawn(i)]
                if live:
                    graph.withdraw([live[pick % len(live)]])
        gone = set(graph.withdrawn())
        in_units = [i for unit in graph.units() for i in unit.node_ids]
        assert sorted(in_units) == sorted(i for i in graph.transcript() if i not in gone)
        for fmt, text in zip(FORMATS, _texts(graph), strict=True):
            assert validate(json.loads(text), fmt) == [], fmt
            assert sdk_problems(json.loads(text), fmt) == [], fmt
            assert not [texts[i] for i in gone if i in texts and texts[i] in text]
