from __future__ import annotations

import pytest

from context_graph import (
    AssistantTurn,
    ContextGraph,
    CycleError,
    DuplicateNodeError,
    FileNode,
    GraphError,
    IngestError,
    SummaryNode,
    ToolCall,
    ToolCallNode,
    ToolResult,
    UnknownNodeError,
    UserTurn,
)
from context_graph.testing import WordCounter, graph_snapshot


@pytest.fixture(name="graph")
def graph_fixture() -> ContextGraph:
    return ContextGraph(counter=WordCounter())


def _call(call_id: str, name: str = "bash", **args: object) -> dict[str, object]:
    return {"id": call_id, "name": name, "arguments": args}


class TestTranscript:
    def test_nodes_keep_transcript_order(self, graph: ContextGraph) -> None:
        """Nodes come back in the order their events were ingested."""
        a = graph.add_system("be brief")
        b = graph.add_user("hello")
        c, *_ = graph.add_assistant("hi there")
        assert graph.transcript() == (a, b, c)
        assert [n.kind for n in graph] == ["system", "user", "assistant"]

    def test_each_node_follows_the_previous_one(self, graph: ContextGraph) -> None:
        """Transcript order is recorded as `follows` edges from newer to older."""
        a = graph.add_user("one")
        b = graph.add_user("two")
        assert list(graph.edges("follows")) == [(b, a, "follows")]

    def test_user_turns_are_counted_on_nodes(self, graph: ContextGraph) -> None:
        """A node records how many user turns came before or with it."""
        graph.add_system("s")
        u1 = graph.add_user("first")
        a1, *_ = graph.add_assistant("reply")
        u2 = graph.add_user("second")
        assert [graph[i].turn for i in (u1, a1, u2)] == [1, 1, 2]
        assert graph.turns == 2

    def test_system_prompt_and_notes_are_pinned(self, graph: ContextGraph) -> None:
        """The system prompt and notes are pinned by default; user turns are not."""
        s = graph.add_system("rules")
        graph.add_user("hi")
        n = graph.add_note("the user's name is Ada")
        assert graph.pinned() == (s, n)

    def test_tokens_are_counted_per_node_and_in_total(self, graph: ContextGraph) -> None:
        """Token counts use the configured counter and add up."""
        u = graph.add_user("three little words")
        a, c = graph.add_assistant("ok", tool_calls=[_call("c1", "grep", q="x")])
        assert graph.tokens(u) == 3
        assert graph.tokens(a) == 1
        assert graph.total_tokens == 3 + 1 + graph.tokens(c)


class TestPairing:
    def test_result_answers_its_call(self, graph: ContextGraph) -> None:
        """A tool result answers the open call with its id and joins its unit."""
        a, c = graph.add_assistant(tool_calls=[_call("c1")])
        r = graph.add_tool_result("c1", "done")
        assert graph.answer_to(c) == graph[r]
        assert graph.call_of(r) == graph[c]
        assert (r, c, "answers") in set(graph.edges("answers"))
        assert graph.unit_of(r).node_ids == (a, c, r)

    def test_result_takes_the_tool_name_from_its_call(self, graph: ContextGraph) -> None:
        """A result with no name gets the name of the call it answers."""
        graph.add_assistant(tool_calls=[_call("c1", "read_file")])
        r = graph.add_tool_result("c1", "text")
        assert getattr(graph[r], "name", None) == "read_file"

    def test_reused_id_pairs_with_the_most_recent_open_call(self, graph: ContextGraph) -> None:
        """An id reused after its first call was answered pairs with the new call."""
        _, c1 = graph.add_assistant(tool_calls=[_call("x")])
        r1 = graph.add_tool_result("x", "first")
        _, c2 = graph.add_assistant(tool_calls=[_call("x")])
        r2 = graph.add_tool_result("x", "second")
        assert graph.call_of(r1) == graph[c1]
        assert graph.call_of(r2) == graph[c2]

    def test_parallel_calls_with_one_id_pair_in_call_order(self, graph: ContextGraph) -> None:
        """Parallel calls of one turn that share an id are answered in call order."""
        _, c1, c2 = graph.add_assistant(tool_calls=[_call("g", n=1), _call("g", n=2)])
        r1 = graph.add_tool_result("g", "one")
        r2 = graph.add_tool_result("g", "two")
        assert (graph.call_of(r1), graph.call_of(r2)) == (graph[c1], graph[c2])

    def test_abandoned_older_call_stays_open(self, graph: ContextGraph) -> None:
        """When an old call with the same id was never answered, the newest call wins."""
        _, old = graph.add_assistant(tool_calls=[_call("x")])
        graph.add_user("never mind")
        _, new = graph.add_assistant(tool_calls=[_call("x")])
        r = graph.add_tool_result("x", "out")
        assert graph.call_of(r) == graph[new]
        assert graph.unanswered_calls() == (old,)

    def test_parallel_results_all_join_one_unit(self, graph: ContextGraph) -> None:
        """All results of parallel calls belong to the unit of the turn that made them."""
        a, c1, c2 = graph.add_assistant(tool_calls=[_call("p"), _call("q")])
        r2 = graph.add_tool_result("q", "Q")
        r1 = graph.add_tool_result("p", "P")
        assert graph.unit_of(a).node_ids == (a, c1, c2, r2, r1)
        assert [u.kind for u in graph.units()] == ["assistant"]

    def test_unanswered_calls_are_listed_in_order(self, graph: ContextGraph) -> None:
        """Calls with no result are reported, oldest first."""
        _, _c1, c2 = graph.add_assistant(tool_calls=[_call("p"), _call("q")])
        graph.add_tool_result("p", "P")
        _, c3 = graph.add_assistant(tool_calls=[_call("r")])
        assert graph.unanswered_calls() == (c2, c3)

    def test_orphan_result_is_refused(self, graph: ContextGraph) -> None:
        """A result whose call never appeared is an IngestError and changes nothing."""
        graph.add_user("hi")
        before = graph_snapshot(graph)
        with pytest.raises(IngestError, match="no matching tool call") as info:
            graph.add_tool_result("ghost", "boo")
        assert info.value.location.index == 0
        assert graph_snapshot(graph) == before

    def test_second_result_for_one_call_is_refused(self, graph: ContextGraph) -> None:
        """A result for a call that already has one is refused with a clear reason."""
        graph.add_assistant(tool_calls=[_call("c1")])
        graph.add_tool_result("c1", "one")
        with pytest.raises(IngestError, match="already has its result"):
            graph.add_tool_result("c1", "two")


class TestAtomicBatch:
    def test_failing_batch_leaves_graph_unchanged(self, graph: ContextGraph) -> None:
        """A batch with one bad event adds nothing, and the error names the event."""
        graph.add_user("start")
        before = graph_snapshot(graph)
        batch = [
            UserTurn(content="fine"),
            AssistantTurn(tool_calls=(ToolCall(id="c", name="t"),)),
            ToolResult(call_id="c", content="ok"),
            ToolResult(call_id="nope", content="bad"),
        ]
        with pytest.raises(IngestError) as info:
            graph.ingest(batch)
        assert info.value.location.index == 3
        assert graph_snapshot(graph) == before

    def test_batch_state_carries_between_its_events(self, graph: ContextGraph) -> None:
        """Calls opened earlier in a batch can be answered later in the same batch."""
        ids = graph.ingest(
            [
                {"type": "assistant", "tool_calls": [{"id": "c", "name": "t"}]},
                {"type": "tool_result", "call_id": "c", "content": "ok"},
            ]
        )
        assert len(ids) == 3
        assert graph.unanswered_calls() == ()

    def test_invalid_dict_event_names_the_field(self, graph: ContextGraph) -> None:
        """A malformed event dict is refused with its index and the bad field."""
        with pytest.raises(IngestError) as info:
            graph.ingest([{"type": "user", "content": "ok"}, {"type": "tool_result"}])
        assert info.value.location.index == 1
        assert "call_id" in str(info.value)
        assert len(graph) == 0

    @pytest.mark.parametrize(
        "event",
        [
            None,
            42,
            "user",
            {"type": "nobody", "content": "x"},
            {"type": "user", "content": 7},
            {"type": "user", "content": "x", "unexpected": 1},
            {"type": "assistant", "tool_calls": [{"id": "", "name": "t"}]},
            {"type": "assistant", "tool_calls": "not a list"},
        ],
    )
    def test_hostile_events_are_refused(self, graph: ContextGraph, event: object) -> None:
        """Events of the wrong shape are IngestErrors, never crashes or partial ingests."""
        with pytest.raises(IngestError):
            graph.ingest([{"type": "user", "content": "first"}, event])  # type: ignore[list-item]
        assert len(graph) == 0

    def test_same_events_give_same_ids_in_a_new_graph(self) -> None:
        """Node ids depend only on the events, so a replay reproduces them."""
        events = [
            UserTurn(content="hi"),
            AssistantTurn(content="hello", tool_calls=(ToolCall(id="c", name="t"),)),
            ToolResult(call_id="c", content="out"),
        ]
        first = ContextGraph(counter=WordCounter()).ingest(events)
        second = ContextGraph(counter=WordCounter()).ingest(events)
        assert first == second

    def test_equal_turns_at_different_places_get_different_ids(self, graph: ContextGraph) -> None:
        """Two identical user turns are two nodes."""
        a = graph.add_user("continue")
        b = graph.add_user("continue")
        assert a != b
        assert len(graph) == 2

    def test_large_output_ingests(self, graph: ContextGraph) -> None:
        """Size is not an error: a 50 MB tool output ingests whole."""
        graph.add_assistant(tool_calls=[_call("big")])
        text = "line of output\n" * 3_500_000
        assert len(text) > 50_000_000
        r = graph.add_tool_result("big", text)
        assert graph[r].text == text
        assert graph.tokens(r) == 3 * 3_500_000


class TestFiles:
    def test_rereading_a_file_supersedes_the_older_read(self, graph: ContextGraph) -> None:
        """A later full read of the same path supersedes the earlier one and is version 2."""
        graph.add_assistant(tool_calls=[_call("r1", "read", path="a.py")])
        f1 = graph.add_file_read("a.py", "v1", call_id="r1")
        graph.add_assistant(tool_calls=[_call("r2", "read", path="a.py")])
        f2 = graph.add_file_read("a.py", "v2", call_id="r2")
        node = graph[f2]
        assert isinstance(node, FileNode)
        assert node.version == 2
        assert graph.targets(f2, "supersedes") == (f1,)
        assert graph.is_superseded(f1)
        assert graph.by_path("a.py") == (f1, f2)

    def test_partial_read_does_not_supersede_a_wider_one(self, graph: ContextGraph) -> None:
        """A read of lines 10-20 leaves an earlier full read current."""
        f1 = graph.add_file_read("b.py", "all of it")
        f2 = graph.add_file_read("b.py", "some", line_range=(10, 20))
        assert not graph.is_superseded(f1)
        assert graph.targets(f2, "supersedes") == ()

    def test_wider_read_supersedes_a_partial_one(self, graph: ContextGraph) -> None:
        """A read covering an earlier range supersedes it."""
        f1 = graph.add_file_read("c.py", "some", line_range=(10, 20))
        f2 = graph.add_file_read("c.py", "more", line_range=(1, None))
        assert graph.targets(f2, "supersedes") == (f1,)

    def test_file_handed_in_without_call_is_its_own_unit(self, graph: ContextGraph) -> None:
        """A file read that answers no call is a unit by itself."""
        f = graph.add_file_read("README.md", "# hi")
        assert graph.unit_of(f).node_ids == (f,)
        assert graph.files() == ("README.md",)


class TestSubagents:
    def test_subagent_result_answers_and_is_spawned_by_its_call(self, graph: ContextGraph) -> None:
        """A sub-agent result answers the spawning call and links to it by `spawned_by`."""
        _, call = graph.add_assistant(tool_calls=[_call("t1", "Task", prompt="explore")])
        s = graph.add_subagent_result(
            "found it", call_id="t1", agent_id="a1", transcript="agent-a1.jsonl"
        )
        assert graph.targets(s, "spawned_by") == (call,)
        assert graph.targets(s, "answers") == (call,)
        assert graph[s].model_dump()["transcript"] == "agent-a1.jsonl"


class TestQueries:
    def test_lookup_by_kind_and_tool(self, graph: ContextGraph) -> None:
        """Nodes can be found by kind and tool calls by tool name."""
        graph.add_user("go")
        _, g1, b1 = graph.add_assistant(tool_calls=[_call("1", "grep"), _call("2", "bash")])
        assert graph.by_kind("tool_call") == (g1, b1)
        assert graph.by_tool("grep") == (g1,)
        assert graph.by_tool("missing") == ()

    def test_unknown_node_raises_key_error(self, graph: ContextGraph) -> None:
        """Asking for a node that is not there raises UnknownNodeError, a KeyError."""
        with pytest.raises(KeyError):
            graph["missing"]
        with pytest.raises(UnknownNodeError, match="missing"):
            graph.unit_of("missing")
        assert graph.get("missing") is None

    def test_networkx_view_is_read_only(self, graph: ContextGraph) -> None:
        """The networkx view reflects the graph and cannot be edited."""
        a = graph.add_user("a")
        b = graph.add_user("b")
        view = graph.nx
        assert view.has_edge(b, a)
        with pytest.raises(Exception, match="Frozen"):
            view.add_edge(a, b)

    def test_tool_call_arguments_parse(self, graph: ContextGraph) -> None:
        """Call arguments are kept as JSON text and parse back to the same value."""
        _, c = graph.add_assistant(tool_calls=[_call("1", "grep", pattern="a.*b", n=3)])
        node = graph[c]
        assert isinstance(node, ToolCallNode)
        assert node.parsed_arguments == {"pattern": "a.*b", "n": 3}


class TestEdgesAndDerived:
    def test_edge_closing_a_cycle_is_refused(self, graph: ContextGraph) -> None:
        """An explicit edge from an older node to a newer one that reaches it is refused."""
        a = graph.add_user("a")
        b = graph.add_user("b")
        before = tuple(graph.edges())
        with pytest.raises(CycleError):
            graph.add_edge(a, b, "supersedes")
        with pytest.raises(CycleError):
            graph.add_edge(a, a, "supersedes")
        assert tuple(graph.edges()) == before

    def test_forward_edge_without_cycle_is_allowed(self, graph: ContextGraph) -> None:
        """An edge from an older to a newer node is fine when it closes no cycle."""
        a = graph.add_user("a")
        s1 = graph.add_derived(SummaryNode(id="summary-1", content=(), abstracts=(a,)))
        s2 = graph.add_derived(SummaryNode(id="summary-2", content=(), abstracts=(a,)))
        graph.add_edge(s1, s2, "supersedes")
        assert (s1, s2, "supersedes") in set(graph.edges("supersedes"))
        with pytest.raises(CycleError):
            graph.add_edge(s2, s1, "supersedes")

    def test_unknown_edge_kind_is_refused(self, graph: ContextGraph) -> None:
        """Edge kinds are a closed set."""
        a = graph.add_user("a")
        b = graph.add_user("b")
        with pytest.raises(GraphError, match="unknown edge kind"):
            graph.add_edge(b, a, "likes")  # type: ignore[arg-type]

    def test_derived_node_links_to_its_sources(self, graph: ContextGraph) -> None:
        """A summary added by a processor is linked to what it abstracts, off the transcript."""
        a = graph.add_user("one two")
        b = graph.add_user("three")
        s = graph.add_derived(SummaryNode(id="summary-x", content=(), abstracts=(a, b)))
        assert set(graph.targets(s, "derived_from")) == {a, b}
        assert graph.derived() == (s,)
        assert s not in graph.transcript()
        with pytest.raises(UnknownNodeError):
            graph.unit_of(s)

    def test_derived_node_with_unknown_source_is_refused(self, graph: ContextGraph) -> None:
        """Lineage must point at nodes that exist."""
        with pytest.raises(UnknownNodeError):
            graph.add_derived(SummaryNode(id="s", content=(), abstracts=("ghost",)))
        assert len(graph) == 0

    def test_duplicate_derived_id_is_refused(self, graph: ContextGraph) -> None:
        """A node id can only be used once."""
        a = graph.add_user("a")
        graph.add_derived(SummaryNode(id="s", content=(), abstracts=(a,)))
        with pytest.raises(DuplicateNodeError):
            graph.add_derived(SummaryNode(id="s", content=(), abstracts=(a,)))


class TestCompaction:
    def test_imported_compaction_abstracts_everything_before(self, graph: ContextGraph) -> None:
        """A compaction event becomes a summary node abstracting all earlier nodes."""
        a = graph.add_user("a")
        b, *_ = graph.add_assistant("b")
        (s,) = graph.add({"type": "compaction", "content": "we did a and b", "origin": "cc"})
        node = graph[s]
        assert isinstance(node, SummaryNode)
        assert node.abstracts == (a, b)
        assert node.origin == "cc"
        assert set(graph.targets(s, "derived_from")) == {a, b}
