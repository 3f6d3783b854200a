"""A tool result's typed exit status: accepted, refused, hashed and serialized."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from context_graph import ContextGraph, IngestError, ToolResult
from context_graph.graph.events import coerce_events
from context_graph.graph.nodes import ToolResultNode, node_adapter
from context_graph.testing import graph_snapshot

_LOW, _HIGH = -(2**31), 2**32 - 1


def _opened() -> ContextGraph:
    """A graph whose one call `c1` waits for its result."""
    graph = ContextGraph()
    graph.add_user("run the tests")
    graph.add_assistant(tool_calls=[{"id": "c1", "name": "bash", "arguments": '{"cmd": "pytest"}'}])
    return graph


def _result(graph: ContextGraph, node_id: str) -> ToolResultNode:
    node = graph[node_id]
    assert isinstance(node, ToolResultNode)
    return node


class TestIngest:
    def test_the_keyword_sets_the_node_field(self) -> None:
        """`add_tool_result(..., exit_code=2)` gives a node whose `exit_code` is 2."""
        graph = _opened()
        assert _result(graph, graph.add_tool_result("c1", "E 1 failed", exit_code=2)).exit_code == 2

    def test_the_dict_form_sets_it_too(self) -> None:
        """An event given as a dict carries `exit_code` to the node."""
        graph = _opened()
        (node_id,) = graph.ingest([{"type": "tool_result", "call_id": "c1", "exit_code": 0}])
        assert _result(graph, node_id).exit_code == 0

    def test_a_result_without_one_keeps_the_id_it_always_had(self) -> None:
        """No exit code: the id is the one the code before the field gave (so stores match)."""
        graph = _opened()
        node_id = graph.add_tool_result("c1", "1 passed", is_error=False)
        assert node_id == "000003-tool_result-c60a91f2d037000c"
        assert "exit_code" not in ToolResult(call_id="c1", content="x").model_dump_json()

    def test_the_exit_code_takes_part_in_the_id(self) -> None:
        """Two results that differ only in their exit status are two different nodes."""
        ids = set()
        for code in (None, 0, 1):
            graph = _opened()
            ids.add(graph.add_tool_result("c1", "done", exit_code=code))
        assert len(ids) == 3

    @pytest.mark.parametrize(
        ("value", "says"),
        [
            (True, "got bool"),
            (False, "got bool"),
            ("1", "got str"),
            (1.0, "got float"),
            ([1], "got list"),
            (2**32, "less than or equal to 4294967295"),
            (-(2**31) - 1, "greater than or equal to -2147483648"),
        ],
    )
    def test_a_hostile_value_is_refused_naming_the_field(self, value: Any, says: str) -> None:
        """A bool, a string, a float or a number out of range is refused; nothing changes."""
        graph = _opened()
        before = graph_snapshot(graph)
        with pytest.raises(IngestError, match=f"{says}.*`exit_code`"):
            graph.add_tool_result("c1", "out", exit_code=value)
        with pytest.raises(IngestError, match=f"{says}.*`tool_result.exit_code`"):
            graph.ingest([{"type": "tool_result", "call_id": "c1", "exit_code": value}])
        assert graph_snapshot(graph) == before

    @given(
        st.one_of(
            st.booleans(),
            st.text(),
            st.floats(),
            st.integers(max_value=_LOW - 1),
            st.integers(min_value=_HIGH + 1),
        )
    )
    def test_no_non_status_gets_in(self, value: Any) -> None:
        """Whatever is not an int in range is refused by the event model."""
        with pytest.raises(IngestError, match="exit_code"):
            coerce_events([{"type": "tool_result", "call_id": "c1", "exit_code": value}])


class TestSerialization:
    @given(st.integers(_LOW, _HIGH) | st.none())
    def test_event_and_node_round_trip_through_json(self, code: int | None) -> None:
        """Event and node read back from their JSON with the same exit status."""
        event = ToolResult(call_id="c1", content="out", exit_code=code)
        assert ToolResult.model_validate_json(event.model_dump_json()) == event
        node = ToolResultNode(id="r", tool_call_id="c1", exit_code=code)
        back = node_adapter.validate_json(node_adapter.dump_json(node))
        assert isinstance(back, ToolResultNode) and back.exit_code == code

    def test_a_node_stored_before_the_field_still_loads(self) -> None:
        """Node JSON without `exit_code` (older stores) reads back with none."""
        stored = {"kind": "tool_result", "id": "r", "tool_call_id": "c1", "meta": {"returncode": 1}}
        node = node_adapter.validate_json(json.dumps(stored))
        assert isinstance(node, ToolResultNode) and node.exit_code is None

    def test_a_stored_node_with_a_bool_is_refused(self) -> None:
        """Node JSON holding `"exit_code": true` does not load as exit status 1."""
        stored = {"kind": "tool_result", "id": "r", "exit_code": True}
        with pytest.raises(ValueError, match="got bool"):
            node_adapter.validate_python(stored)
