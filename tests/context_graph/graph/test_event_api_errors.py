"""Every malformed value reaching the event API is an `IngestError` naming the field.

Wrong types in any field of any event kind, and of tool calls in every shape, through
`ingest`, `coerce_events` and the `add_*` shorthands: always `IngestError` with a
location, never a raw pydantic `ValidationError` or a `TypeError`, and the graph unchanged.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from context_graph import ContextGraph, IngestError, TextPart
from context_graph.graph.events import (
    AssistantTurn,
    Compaction,
    FileRead,
    Note,
    SubagentResult,
    SystemPrompt,
    ToolResult,
    UserTurn,
    coerce_events,
)
from context_graph.testing import WordCounter, graph_snapshot

MODELS: dict[str, Any] = {
    "system": SystemPrompt,
    "user": UserTurn,
    "assistant": AssistantTurn,
    "tool_result": ToolResult,
    "file_read": FileRead,
    "subagent_result": SubagentResult,
    "note": Note,
    "compaction": Compaction,
}
VALID: dict[str, dict[str, Any]] = {
    "system": {"type": "system", "content": "be careful"},
    "user": {"type": "user", "content": "fix it"},
    "assistant": {
        "type": "assistant",
        "content": "on it",
        "tool_calls": [{"id": "n1", "name": "grep", "arguments": "{}"}],
    },
    "tool_result": {"type": "tool_result", "call_id": "c1", "content": "ok"},
    "file_read": {"type": "file_read", "path": "a.py", "content": "x = 1", "call_id": "c1"},
    "subagent_result": {"type": "subagent_result", "content": "done", "call_id": "c1"},
    "note": {"type": "note", "content": "no new dependencies"},
    "compaction": {"type": "compaction", "content": "so far"},
}
ADDERS = {
    "system": "add_system",
    "user": "add_user",
    "assistant": "add_assistant",
    "tool_result": "add_tool_result",
    "file_read": "add_file_read",
    "subagent_result": "add_subagent_result",
    "note": "add_note",
}
CALLS: dict[str, dict[str, Any]] = {
    "flat": {"id": "n1", "name": "grep", "arguments": "{}"},
    "openai": {"id": "n1", "type": "function", "function": {"name": "grep", "arguments": "{}"}},
    "anthropic": {"type": "tool_use", "id": "n1", "name": "grep", "input": {}},
    "gemini": {
        "functionCall": {"id": "n1", "name": "grep", "args": {}},
        "thoughtSignature": "c2ln",
    },
    "gemini_snake": {"function_call": {"name": "grep", "args": {}}, "thought_signature": "c2ln"},
}
#: Every place in each call shape that a caller fills in.
CALL_PLACES: dict[str, list[tuple[str, ...]]] = {
    "flat": [("id",), ("name",), ("arguments",), ("signature",), ("extra",)],
    "openai": [("id",), ("type",), ("function",), ("function", "name"), ("function", "arguments")],
    "anthropic": [("id",), ("name",), ("input",)],
    "gemini": [
        ("functionCall",),
        ("functionCall", "id"),
        ("functionCall", "name"),
        ("functionCall", "args"),
        ("thoughtSignature",),
    ],
    "gemini_snake": [("function_call",), ("function_call", "name"), ("thought_signature",)],
}

WRONG = st.one_of(
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True),
    st.booleans(),
    st.none(),
    st.text(max_size=4),
    st.binary(max_size=4),
    st.lists(st.integers(), max_size=3),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
    st.sampled_from(
        [object(), TextPart(text="x"), {"type": "text"}, (1, 2), ["a", None], "\ud800", {1: {}}]
    ),
)


def _graph() -> ContextGraph:
    """A graph with an open call `c1`, so that answers have something to answer."""
    graph = ContextGraph(counter=WordCounter())
    graph.add_system("s")
    graph.add_user("u")
    graph.add_assistant("a", tool_calls=[{"id": "c1", "name": "read", "arguments": "{}"}])
    return graph


def _replaced(value: dict[str, Any], place: tuple[str, ...], new: Any) -> dict[str, Any]:
    out = copy.deepcopy(value)
    target = out
    for key in place[:-1]:
        target = target[key]
    target[place[-1]] = new
    return out


def _refused_cleanly(graph: ContextGraph, before: object, exc: IngestError) -> None:
    assert exc.location.index == 0, exc
    assert "`" in exc.reason, exc  # the field is named
    assert graph_snapshot(graph) == before


class TestWrongTypesEverywhere:
    """Random wrong values in every field: an `IngestError` with a location, or accepted."""

    @settings(max_examples=300, deadline=None)
    @given(kind=st.sampled_from(sorted(VALID)), data=st.data())
    def test_ingest(self, kind: str, data: st.DataObject) -> None:
        """`ingest` of an event dict with one wrong field raises only `IngestError`."""
        field = data.draw(st.sampled_from([*sorted(MODELS[kind].model_fields), "extra"]))
        event = {**VALID[kind], field: data.draw(WRONG)}
        graph = _graph()
        before = graph_snapshot(graph)
        try:
            graph.ingest([event])
        except IngestError as exc:
            _refused_cleanly(graph, before, exc)

    @settings(max_examples=300, deadline=None)
    @given(kind=st.sampled_from(sorted(ADDERS)), data=st.data())
    def test_adders(self, kind: str, data: st.DataObject) -> None:
        """Each `add_*` shorthand with one wrong value raises only `IngestError`; with a
        keyword it does not take (`extra`, or `type`: the shorthand is the type), a
        `TypeError`; either way nothing is added."""
        fields = {k: v for k, v in VALID[kind].items() if k != "type"}
        field = data.draw(st.sampled_from([*sorted(MODELS[kind].model_fields), "extra"]))
        fields[field] = data.draw(WRONG)
        graph = _graph()
        before = graph_snapshot(graph)
        if field in {"extra", "type"}:
            with pytest.raises(TypeError, match=f"unexpected keyword argument '{field}'"):
                getattr(graph, ADDERS[kind])(**fields)
            assert graph_snapshot(graph) == before
            return
        try:
            getattr(graph, ADDERS[kind])(**fields)
        except IngestError as exc:
            _refused_cleanly(graph, before, exc)

    @settings(max_examples=300, deadline=None)
    @given(shape=st.sampled_from(sorted(CALLS)), data=st.data())
    def test_tool_calls(self, shape: str, data: st.DataObject) -> None:
        """A wrong value anywhere in a tool call of any shape raises only `IngestError`."""
        place = data.draw(st.sampled_from(CALL_PLACES[shape]))
        call = _replaced(CALLS[shape], place, data.draw(WRONG))
        via_adder = data.draw(st.booleans())
        graph = _graph()
        before = graph_snapshot(graph)
        try:
            if via_adder:
                graph.add_assistant(None, tool_calls=[call])
            else:
                graph.ingest([{"type": "assistant", "tool_calls": [call]}])
        except IngestError as exc:
            _refused_cleanly(graph, before, exc)
            assert "tool_calls" in exc.reason


class TestFieldPaths:
    """The error names the field as the caller spelled it."""

    @pytest.mark.parametrize(
        ("call", "path"),
        [
            (_replaced(CALLS["openai"], ("function", "name"), 5), "tool_calls.0.function.name"),
            (_replaced(CALLS["openai"], ("function",), "x"), "tool_calls.0.function"),
            (_replaced(CALLS["openai"], ("type",), "custom"), "tool_calls.0.type"),
            (_replaced(CALLS["anthropic"], ("input",), 5), "tool_calls.0.input"),
            (_replaced(CALLS["gemini"], ("functionCall", "name"), 5), "functionCall.name"),
            (_replaced(CALLS["gemini"], ("thoughtSignature",), 5), "tool_calls.0.thoughtSignature"),
            (_replaced(CALLS["flat"], ("arguments",), {"x": object()}), "tool_calls.0.arguments"),
            (_replaced(CALLS["flat"], ("name",), ""), "tool_calls.0.name"),
        ],
    )
    def test_tool_call_paths(self, call: dict[str, Any], path: str) -> None:
        """`add_assistant` names the path inside the call."""
        graph = _graph()
        with pytest.raises(IngestError) as caught:
            graph.add_assistant(None, tool_calls=[call])
        assert f"{path}`" in caught.value.reason

    @pytest.mark.parametrize(
        ("call", "expected"),
        [
            (lambda g: g.add_user(123), "content must be a string or a sequence of parts, got int"),
            (lambda g: g.add_system(None), "at `content`"),
            (lambda g: g.add_tool_result(None, "x"), "at `call_id`"),
            (lambda g: g.add_file_read(7, "x"), "at `path`"),
            (lambda g: g.add_note("n", priority="high"), "at `priority`"),
        ],
    )
    def test_adder_errors(self, call: Any, expected: str) -> None:
        """The shorthands raise `IngestError` with the field, like a batch of one."""
        graph = _graph()
        before = graph_snapshot(graph)
        with pytest.raises(IngestError, match="message 0: invalid event") as caught:
            call(graph)
        assert expected in caught.value.reason
        assert graph_snapshot(graph) == before

    def test_batch_error_names_the_event(self) -> None:
        """In a batch the index and the tagged path are named."""
        events = [VALID["user"], {**VALID["tool_result"], "call_id": 5}]
        with pytest.raises(IngestError, match=r"message 1: .* at `tool_result\.call_id`"):
            coerce_events(events)


class TestNotABatch:
    """`ingest` of something that is not a batch says so."""

    @pytest.mark.parametrize("value", [5, None, VALID["user"], UserTurn(content="x"), b"x"])
    def test_refused(self, value: Any) -> None:
        """A single event or a non-iterable is refused with a hint."""
        graph = _graph()
        with pytest.raises(IngestError, match="expected a batch of events"):
            graph.ingest(value)


class TestUnencodableText:
    """Text with a lone surrogate cannot be hashed or sent: refused, with its place."""

    @pytest.mark.parametrize(
        ("event", "path"),
        [
            ({"type": "user", "content": "a\ud800b"}, "content.0.text"),
            ({"type": "note", "content": "n", "meta": {"k": ["ok", "\udfff"]}}, "meta.k.1"),
            ({"type": "user", "content": "u", "timestamp": "\ud800"}, "timestamp"),
        ],
    )
    def test_refused(self, event: dict[str, Any], path: str) -> None:
        """The error names the field that holds it, and nothing is added."""
        graph = _graph()
        before = graph_snapshot(graph)
        with pytest.raises(IngestError, match="lone surrogate") as caught:
            graph.ingest([event])
        # Metadata is checked before the event is built, and names its path first.
        assert f"at `{path}`" in str(caught.value) or f" {path}: " in str(caught.value)
        assert graph_snapshot(graph) == before
