"""The `add_*` shorthands' keyword fields: typed, kept in step with the event models.

Each shorthand takes `**fields: Unpack[SomeFields]`; the `TypedDict` must list exactly
the model's fields that the shorthand does not take as parameters of its own, and a
keyword it does not list is a `TypeError` before anything is added.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from context_graph import ContextGraph
from context_graph._keywords import accepted_keywords
from context_graph.graph.event_fields import (
    AssistantFields,
    EventFields,
    FileReadFields,
    SubagentFields,
    ToolResultFields,
    UserFields,
    WithdrawalFields,
)
from context_graph.graph.events import (
    AssistantTurn,
    FileRead,
    Note,
    SubagentResult,
    SystemPrompt,
    ToolResult,
    UserTurn,
    Withdrawal,
)
from context_graph.testing import WordCounter, graph_snapshot

#: (the shorthand, its fields, the model they go into, the shorthand's own parameters)
SHORTHANDS: list[tuple[str, type, type[BaseModel], set[str]]] = [
    ("add_system", EventFields, SystemPrompt, {"content"}),
    ("add_user", UserFields, UserTurn, {"content"}),
    ("add_assistant", AssistantFields, AssistantTurn, {"content", "tool_calls"}),
    (
        "add_tool_result",
        ToolResultFields,
        ToolResult,
        {"call_id", "content", "is_error", "exit_code"},
    ),
    ("add_file_read", FileReadFields, FileRead, {"path", "content"}),
    ("add_subagent_result", SubagentFields, SubagentResult, {"content"}),
    ("add_note", EventFields, Note, {"content"}),
    ("withdraw", WithdrawalFields, Withdrawal, {"node_ids"}),
]


def _graph() -> ContextGraph:
    """A graph with a user turn and an open call `c1` to answer."""
    graph = ContextGraph(counter=WordCounter())
    graph.add_user("hello")
    graph.add_assistant(None, tool_calls=[{"id": "c1", "name": "read", "arguments": "{}"}])
    return graph


def _caller(name: str, graph: ContextGraph) -> Callable[..., Any]:
    """A call of the shorthand `name` with valid positional arguments; keywords to add."""
    positional: dict[str, tuple[Any, ...]] = {
        "add_tool_result": ("c1", "out"),
        "add_file_read": ("a.py", "text"),
        "withdraw": (["never-looked-up"],),
    }
    method = getattr(graph, name)
    args = positional.get(name, ("text",))
    return lambda **fields: method(*args, **fields)


class TestEventFields:
    @pytest.mark.parametrize(("name", "fields", "model", "own"), SHORTHANDS, ids=lambda v: v)
    def test_fields_are_the_models_besides_the_parameters(
        self, name: str, fields: type, model: type[BaseModel], own: set[str]
    ) -> None:
        """A `TypedDict` lists every field of its model that is not a parameter, and no more."""
        assert accepted_keywords(fields) == set(model.model_fields) - own - {"type"}, name

    @pytest.mark.parametrize(("name", "fields", "model", "own"), SHORTHANDS, ids=lambda v: v)
    def test_a_misspelled_keyword_is_a_type_error(
        self, name: str, fields: type, model: type[BaseModel], own: set[str]
    ) -> None:
        """`timestap=` is a `TypeError` naming it and the accepted keywords; nothing is added."""
        graph = _graph()
        before = graph_snapshot(graph)
        with pytest.raises(TypeError) as caught:
            _caller(name, graph)(timestap="2026-01-01")
        message = str(caught.value)
        assert f"{name}() got an unexpected keyword argument 'timestap'" in message
        for accepted in accepted_keywords(fields) | own:
            assert accepted in message
        assert graph_snapshot(graph) == before

    def test_a_listed_keyword_still_reaches_the_event(self) -> None:
        """A keyword the fields list is passed on to the event as before."""
        graph = _graph()
        node_id = graph.add_note("remember", priority=3, meta={"by": "test"})
        assert graph[node_id].priority == 3
        assert graph[node_id].meta == {"by": "test"}

    @settings(max_examples=50, deadline=None)
    @given(keyword=st.from_regex(r"[a-z_][a-z0-9_]{0,12}", fullmatch=True))
    def test_every_unlisted_keyword_is_refused(self, keyword: str) -> None:
        """Any keyword `UserFields` does not list is refused by `add_user`, the graph unchanged."""
        graph = _graph()
        before = graph_snapshot(graph)
        if keyword in accepted_keywords(UserFields) | {"content"}:
            return
        with pytest.raises(TypeError, match=f"argument '{keyword}'"):
            graph.add_user("hi", **{keyword: 1})  # type: ignore[arg-type]
        assert graph_snapshot(graph) == before
