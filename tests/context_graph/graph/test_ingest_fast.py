"""The ingest fast paths against the computations they replace, over random sessions.

Node ids are hashed from `model_json` instead of `model_dump_json().encode()`, and a
plan is committed with one pass per batch (nodes inserted together, edges linked
together, each touched unit made once). The old ids are computed here as the reference;
a batch must show, through every public query, what its events ingested one at a time
show, batch after batch.
"""

from __future__ import annotations

import contextlib
from typing import Any, cast

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
from context_graph.graph.node_build import model_json
from context_graph.graph.nodes import ToolCallNode, TriggerSpec
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


def _observed(graph: ContextGraph) -> dict[str, object]:
    """Everything the graph's public interface tells, networkx adjacency in its order included.

    The token cache is left out: it is a memo that planning fills, even for a batch
    that is then refused.
    """
    ids = [*graph.transcript(), *graph.derived()]
    calls = [graph[i] for i in graph.by_kind("tool_call")]
    g = graph.nx
    return {
        "transcript": graph.transcript(),
        "derived": graph.derived(),
        "nodes": [graph[i] for i in ids],
        "tokens": [graph.tokens(i) for i in ids],
        "total_tokens": graph.total_tokens,
        "version": graph.version,
        "turns": graph.turns,
        "units": graph.units(),
        "unit_of": [graph.unit_of(i) for i in graph.transcript()],
        "unit_mark": graph.unit_mark,
        "units_changed": graph.units_changed_since(0),
        "edges": list(graph.edges()),
        "nx_nodes": list(g.nodes(data=True)),
        "nx_succ": [(n, list(g.succ[n].items())) for n in g],
        "nx_pred": [(n, list(g.pred[n].items())) for n in g],
        "unanswered": graph.unanswered_calls(),
        "pinned": graph.pinned(),
        "by_kind": {kind: graph.by_kind(kind) for kind in sorted({graph[i].kind for i in ids})},
        "by_tool": {c.name: graph.by_tool(c.name) for c in calls if isinstance(c, ToolCallNode)},
        "first_calls": {
            c.tool_call_id: graph.first_call_with_id(c.tool_call_id)
            for c in calls
            if isinstance(c, ToolCallNode)
        },
        "files": {path: graph.by_path(path) for path in graph.files()},
        "superseded": [i for i in ids if graph.is_superseded(i)],
        "answers": {i: graph.answer_to(i) for i in graph.by_kind("tool_call")},
        "calls": {i: graph.call_of(i) for i in ids},
        "covered": {i: graph.covered(i) for i in ids},
    }


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
    def test_commit_matches_event_by_event(self, batches: list[list[AgentEvent]]) -> None:
        """After every batch, the graph shows exactly what ingesting its events one by one shows."""
        batched, single = _twins()
        for batch in batches:
            batched.ingest(batch)
            for event in batch:
                single.ingest([event])
            assert _observed(batched) == _observed(single)

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
    @given(batches=_batches(), data=st.data())
    def test_partial_reads_of_the_units_are_what_units_lists(
        self, batches: list[list[AgentEvent]], data: st.DataObject
    ) -> None:
        """`units_from` and `units_newest_first` read what `units()` lists, withdrawals too
        (the readers that keep up per request use them instead of a copy of every unit)."""
        graph = ContextGraph(counter=WordCounter())
        for batch in batches:
            graph.ingest(batch)
            units = graph.units()
            start = data.draw(st.integers(0, len(units) + 1))
            assert graph.units_from(start) == units[start:]
            assert tuple(graph.units_newest_first()) == units[::-1]
        # A withdrawal takes units apart (one the record refuses changes nothing).
        ids = graph.transcript()
        chosen = data.draw(st.lists(st.sampled_from(ids), max_size=3)) if ids else []
        for node_id in chosen:
            with contextlib.suppress(IngestError):
                graph.withdraw([node_id])
            assert tuple(graph.units_newest_first()) == graph.units()[::-1]
            assert graph.units_from(1) == graph.units()[1:]

    @settings(max_examples=60)
    @given(batches=_batches(), bad_at=st.integers(0, 3))
    def test_a_refused_batch_changes_nothing(
        self, batches: list[list[AgentEvent]], bad_at: int
    ) -> None:
        """A batch with an unpaired result raises, and the graph goes on as if never offered it."""
        graph, twin = _twins()
        for batch in batches[:-1]:
            graph.ingest(batch)
            twin.ingest(batch)
        last = list(batches[-1]) if batches else []
        last.insert(min(bad_at, len(last)), ToolResult(call_id="never-issued", content="x"))
        before = _observed(graph)
        with pytest.raises(IngestError) as raised:
            graph.ingest(last)
        assert "tool result `never-issued` has no matching tool call" in str(raised.value)
        assert raised.value.location is not None
        assert raised.value.location.index == min(bad_at, len(last) - 1)
        assert _observed(graph) == before
        # What is not observable now (the next position, the last node, open calls)
        # shows in what the next batch makes.
        valid = batches[-1] if batches else []
        assert graph.ingest(valid) == twin.ingest(valid)
        assert _observed(graph) == _observed(twin)

    def test_derived_nodes_go_through_the_same_insert(self) -> None:
        """`add_derived` adds a node and its lineage edges, one version step for each."""
        graph = ContextGraph(counter=WordCounter())
        graph.ingest([UserTurn(content="a b"), UserTurn(content="c")])
        first, second = graph.transcript()
        before = _observed(graph)
        summary = graph[first].model_copy(
            update={"id": "summary-x", "seq": None, "abstracts": (first, second)}
        )
        assert graph.add_derived(summary) == "summary-x"
        after = _observed(graph)
        assert after["derived"] == ("summary-x",)
        assert after["transcript"] == before["transcript"]
        assert after["units"] == before["units"]
        assert after["version"] == cast(int, before["version"]) + 3
        assert after["total_tokens"] == cast(int, before["total_tokens"]) + 2
        assert graph.targets("summary-x", "derived_from") == (first, second)
        assert graph.sources(first, "derived_from") == ("summary-x",)
        assert graph.covered("summary-x") == (first, second)
        assert graph.nx.has_edge("summary-x", second)


class TestLookups:
    def test_unknown_ids_raise_as_before(self) -> None:
        """`graph[id]`, `tokens(id)` and `meta_of(id)` name the missing id the same way."""
        graph = ContextGraph(counter=WordCounter())
        graph.add_user("hi")
        for lookup in (graph.__getitem__, graph.tokens, graph.meta_of):
            with pytest.raises(UnknownNodeError, match=r"^node 'nope' is not in the graph$"):
                lookup("nope")

    def test_known_ids_give_the_node_and_its_tokens(self) -> None:
        """A known id gives the stored node and its count."""
        graph = ContextGraph(counter=WordCounter())
        node_id = graph.add_user("one two three")
        assert graph[node_id] is graph.get(node_id)
        assert graph.tokens(node_id) == 3
