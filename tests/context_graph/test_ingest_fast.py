"""The ingest fast paths against the computations they replace, over random sessions.

Node ids are hashed from `model_json` instead of `model_dump_json().encode()`, and a
plan is committed with one pass per batch (`_insert_nodes`, `_link_new`, each touched
unit made once) instead of node by node and edge by edge. The old computations are
kept here as the reference, and every observable (and internal) piece of state must
come out the same, batch after batch.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from context_graph import ContextGraph
from context_graph.errors import IngestError, UnknownNodeError
from context_graph.graph.content import ImagePart, TextPart, ThinkingPart
from context_graph.graph.events import (
    AgentEvent,
    AssistantTurn,
    Compaction,
    FileRead,
    Note,
    SubagentResult,
    SystemPrompt,
    ToolCall,
    ToolResult,
    UserTurn,
)
from context_graph.graph.ids import make_node_id
from context_graph.graph.ingest import IngestPlan, model_json, plan_ingest
from context_graph.graph.nodes import Node, ToolCallNode, TriggerSpec
from context_graph.testing import WordCounter

# -- random events -----------------------------------------------------------------------

_TEXT = st.text(
    alphabet=st.sampled_from(list('ab Z09{}[]":,\n\t\\/\u00e9\u4e2d\U0001f600\x00\x7f<>&')),
    max_size=30,
)
# Finite floats: ingest refuses NaN and infinities in metadata (`_json_limits`), and
# these tests are about the batches it accepts.
_FLOATS = st.floats(allow_nan=False, allow_infinity=False)
_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | _FLOATS | _TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_TEXT, inner, max_size=3),
    max_leaves=6,
)
_PART = st.one_of(
    _TEXT.map(lambda text: TextPart(text=text)),
    st.builds(ThinkingPart, thinking=_TEXT, signature=st.none() | _TEXT),
    st.builds(ImagePart, url=st.none() | _TEXT, media_type=st.none() | _TEXT),
)
_TRIGGER = st.builds(
    TriggerSpec,
    kind=st.sampled_from(["size", "age", "manual"]),
    threshold=st.none() | st.floats(allow_nan=False) | st.integers(0, 10),
    pipeline=st.none() | _TEXT,
)


def _common() -> dict[str, st.SearchStrategy[Any]]:
    return {
        "content": st.one_of(_TEXT, st.lists(_PART, max_size=3).map(tuple)),
        "timestamp": st.none() | _TEXT,
        "meta": st.dictionaries(_TEXT, _JSON, max_size=3),
        "priority": st.integers(-5, 5),
        "pinned": st.booleans(),
        "triggers": st.lists(_TRIGGER, max_size=2).map(tuple),
    }


_CALL_IDS = st.sampled_from(["c1", "c2", "call_3", "c 4"])
_ARGUMENTS = st.one_of(_TEXT, st.dictionaries(_TEXT, _JSON, max_size=3))
_CALL = st.builds(ToolCall, id=_CALL_IDS, name=_TEXT.filter(bool), arguments=_ARGUMENTS)
_PATHS = st.sampled_from(["a.py", "b/c.md"])
_RANGE = st.none() | st.tuples(st.integers(1, 9), st.none() | st.integers(1, 20))


_STEPS = ("system", "user", "assistant", "assistant", "result", "file", "sub", "note", "compaction")


@st.composite
def _session(draw: st.DrawFn) -> list[AgentEvent]:
    """A valid session: every result answers a call that is open when it comes."""
    events: list[AgentEvent] = []
    open_calls: list[str] = []
    for _ in range(draw(st.integers(0, 14))):
        step = draw(st.sampled_from(_STEPS))
        if step in ("result", "file", "sub") and open_calls:
            answered: str | None = open_calls.pop(draw(st.integers(0, len(open_calls) - 1)))
        else:
            answered = None
        if step == "result" and answered is None:
            step = "user"
        kwargs = {k: draw(v) for k, v in _common().items()}
        event: AgentEvent
        if step == "system":
            event = SystemPrompt(**kwargs)
        elif step == "user":
            event = UserTurn(**kwargs)
        elif step == "note":
            event = Note(**kwargs)
        elif step == "compaction":
            event = Compaction(origin=draw(_TEXT), **kwargs)
        elif step == "assistant":
            calls = tuple(draw(st.lists(_CALL, max_size=3)))
            model = draw(st.none() | _TEXT)
            event = AssistantTurn(tool_calls=calls, model=model, **kwargs)
            open_calls.extend(call.id for call in calls)
        elif step == "result":
            event = ToolResult(call_id=answered, is_error=draw(st.booleans()), **kwargs)
        elif step == "file":
            path, lines = draw(_PATHS), draw(_RANGE)
            event = FileRead(path=path, line_range=lines, call_id=answered, **kwargs)
        else:
            event = SubagentResult(call_id=answered, agent_id=draw(st.none() | _TEXT), **kwargs)
        events.append(event)
    return events


@st.composite
def _batches(draw: st.DrawFn) -> list[list[AgentEvent]]:
    events = draw(_session())
    batches: list[list[AgentEvent]] = []
    while events:
        size = draw(st.integers(1, 4))
        batches.append(events[:size])
        events = events[size:]
    return batches


# -- the old computations ----------------------------------------------------------------

_KINDS = {
    SystemPrompt: "system",
    UserTurn: "user",
    Note: "note",
    AssistantTurn: "assistant",
    ToolResult: "tool_result",
    FileRead: "file",
    SubagentResult: "subagent_result",
    Compaction: "summary",
}


def _old_ids(events: list[AgentEvent]) -> list[str]:
    """Node ids as ingest computed them with `model_dump_json`."""
    ids: list[str] = []
    for event in events:
        head = make_node_id(_KINDS[type(event)], len(ids), event.model_dump_json().encode())
        ids.append(head)
        if isinstance(event, AssistantTurn):
            for call in event.tool_calls:
                payload = call.model_dump_json().encode() + head.encode()
                ids.append(make_node_id("tool_call", len(ids), payload))
    return ids


def _old_insert(graph: ContextGraph, node: Node, tokens: int) -> None:
    graph._version += 1
    graph._nodes[node.id] = node
    graph._rank[node.id] = len(graph._rank)
    graph._g.add_node(node.id)
    graph._tokens[node.id] = tokens
    graph._total_tokens += tokens
    graph._by_kind.setdefault(node.kind, []).append(node.id)
    if isinstance(node, ToolCallNode):
        graph._by_tool.setdefault(node.name, []).append(node.id)
        graph._first_call.setdefault(node.tool_call_id, node.id)
    if node.pinned:
        graph._pinned.append(node.id)


def _old_commit(graph: ContextGraph, plan: IngestPlan) -> None:
    """`ContextGraph._commit` as it was: node by node, edge by edge."""
    for node in plan.nodes:
        _old_insert(graph, node, plan.tokens[node.id])
        graph._order.append(node.id)
        head = plan.unit_of[node.id]
        graph._unit_of[node.id] = head
        if head == node.id:
            graph._unit_heads.append(node.id)
            graph._unit_members[node.id] = [node.id]
            graph._unit_index[node.id] = len(graph._unit_list)
            graph._unit_list.append(graph._make_unit(node.id))
        else:
            graph._unit_members[head].append(node.id)
            graph._unit_objects.pop(head, None)
            graph._unit_list[graph._unit_index[head]] = graph._make_unit(head)
        graph._unit_log.append(head)
    for u, v, kind in plan.edges:
        graph._link(u, v, kind)  # one edge as before: `_link` itself is unchanged
    for call_id, open_ids in plan.open_calls.items():
        if open_ids:
            graph._open_calls[call_id] = open_ids
        else:
            graph._open_calls.pop(call_id, None)
    graph._answered_ids |= plan.answered_ids
    for call_node, answer_node in plan.answers.items():
        graph._answer[call_node] = answer_node
        graph._call_of[answer_node] = call_node
    graph._file_reads.update(plan.file_reads)
    graph._superseded |= plan.superseded
    graph._next_seq = plan.seq
    graph._turn = plan.turn
    graph._last_id = plan.last_id
    graph._compaction = plan.compaction
    graph._version += plan.version_credit


def _state(graph: ContextGraph) -> dict[str, object]:
    """Every attribute of the graph, networkx adjacency in its order included.

    The token cache is left out: it is a memo that planning fills, even for a batch
    that is then refused.
    """
    g = graph._g
    state = {k: v for k, v in vars(graph).items() if k not in ("_g", "token_cache")}
    state["nx_nodes"] = list(g.nodes(data=True))
    state["nx_succ"] = [(n, list(g.succ[n].items())) for n in g]
    state["nx_pred"] = [(n, list(g.pred[n].items())) for n in g]
    return state


def _twins() -> tuple[ContextGraph, ContextGraph]:
    return ContextGraph(counter=WordCounter()), ContextGraph(counter=WordCounter())


# -- tests -------------------------------------------------------------------------------


class TestModelJson:
    @settings(max_examples=150)
    @given(events=_session())
    def test_events_give_the_bytes_of_model_dump_json(self, events: list[AgentEvent]) -> None:
        """`model_json` is `model_dump_json().encode()` for every event and tool call."""
        for event in events:
            assert model_json(event) == event.model_dump_json().encode()
            if isinstance(event, AssistantTurn):
                for call in event.tool_calls:
                    assert model_json(call) == call.model_dump_json().encode()

    def test_excluded_fields_stay_excluded(self) -> None:
        """An event's `source` is not part of its bytes, as with `model_dump_json`."""
        from context_graph.errors import SourceLocation

        event = UserTurn(content="hi", source=SourceLocation(index=3))
        assert model_json(event) == UserTurn(content="hi").model_dump_json().encode()


class TestNodeIds:
    @settings(max_examples=150)
    @given(batches=_batches())
    def test_ids_are_the_old_content_hashes(self, batches: list[list[AgentEvent]]) -> None:
        """Every node id equals the id hashed from `model_dump_json`, in transcript order."""
        graph = ContextGraph(counter=WordCounter())
        returned: list[str] = []
        for batch in batches:
            returned.extend(graph.ingest(batch))
        expected = _old_ids([event for batch in batches for event in batch])
        assert list(graph.transcript()) == expected
        assert returned == expected

    def test_known_ids_are_unchanged(self) -> None:
        """Fixed events keep the ids persisted sessions hold (computed before the change)."""
        graph = ContextGraph(counter=WordCounter())
        call = ToolCall(id="c1", name="ls", arguments={"a": 1})
        ids = graph.ingest(
            [
                UserTurn(content="hello", meta={"k": [1, "\u00e9"]}),
                AssistantTurn(content="ok", tool_calls=(call,)),
            ]
        )
        assert ids == (
            "000000-user-d302333358f00e36",
            "000001-assistant-29e037ecf3b05ef9",
            "000002-tool_call-89ea526c05ad9930",
        )


class TestCommit:
    @settings(max_examples=150)
    @given(batches=_batches())
    def test_commit_matches_node_by_node(self, batches: list[list[AgentEvent]]) -> None:
        """After every batch, the graph holds exactly what the old node-by-node commit made."""
        fast, old = _twins()
        for batch in batches:
            fast.ingest(batch)
            _old_commit(old, plan_ingest(old, batch))
            assert _state(fast) == _state(old)
            assert list(fast.edges()) == list(old.edges())
            assert fast.units() == old.units()

    @settings(max_examples=60)
    @given(batches=_batches())
    def test_unit_objects_are_the_listed_units(self, batches: list[list[AgentEvent]]) -> None:
        """The unit a lookup returns is the very object `units()` lists (renders cache by it)."""
        graph = ContextGraph(counter=WordCounter())
        for batch in batches:
            graph.ingest(batch)
            for unit in graph.units():
                assert graph.unit_of(unit.head) is unit
                assert all(graph.unit_of(node_id) is unit for node_id in unit)

    @settings(max_examples=60)
    @given(batches=_batches(), bad_at=st.integers(0, 3))
    def test_a_refused_batch_changes_nothing(
        self, batches: list[list[AgentEvent]], bad_at: int
    ) -> None:
        """A batch with an unpaired result raises the same error and leaves every attribute."""
        graph = ContextGraph(counter=WordCounter())
        for batch in batches[:-1]:
            graph.ingest(batch)
        last = list(batches[-1]) if batches else []
        last.insert(min(bad_at, len(last)), ToolResult(call_id="never-issued", content="x"))
        before = _state(graph)
        with pytest.raises(IngestError) as raised:
            graph.ingest(last)
        assert "tool result `never-issued` has no matching tool call" in str(raised.value)
        assert raised.value.location is not None
        assert raised.value.location.index == min(bad_at, len(last) - 1)
        assert _state(graph) == before

    def test_derived_nodes_go_through_the_same_insert(self) -> None:
        """`add_derived` adds a node and its lineage edges as inserting and linking did."""
        fast, old = _twins()
        for graph in (fast, old):
            graph.ingest([UserTurn(content="a b"), UserTurn(content="c")])
        first, second = fast.transcript()
        summary = fast[first].model_copy(update={"id": "summary-x", "seq": None})
        fast.add_derived(summary.model_copy(update={"abstracts": (first, second)}))
        node = summary.model_copy(update={"abstracts": (first, second)})
        _old_insert(old, node, old.token_cache.count_node(node))
        old._derived.append(node.id)
        for source in (first, second):
            old._link(node.id, source, "derived_from")
        assert _state(fast) == _state(old)


class TestLookups:
    def test_unknown_ids_raise_as_before(self) -> None:
        """`graph[id]` and `tokens(id)` name the missing id exactly as `_require` does."""
        graph = ContextGraph(counter=WordCounter())
        graph.add_user("hi")
        for lookup in (graph.__getitem__, graph.tokens, graph._require):
            with pytest.raises(UnknownNodeError, match=r"^node 'nope' is not in the graph$"):
                lookup("nope")

    def test_known_ids_give_the_node_and_its_tokens(self) -> None:
        """A known id gives the stored node and its count."""
        graph = ContextGraph(counter=WordCounter())
        node_id = graph.add_user("one two three")
        assert graph[node_id] is graph._nodes[node_id]
        assert graph.tokens(node_id) == 3
