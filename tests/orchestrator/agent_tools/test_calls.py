"""`read_call` and the agent tool specs: what a call reads as, and what is refused."""

from __future__ import annotations

import pytest

from context_graph.errors import ConfigurationError
from context_graph.render.tools import ToolSpec, read_tools
from orchestrator.agent_tools import (
    AGENT_TOOLS,
    COMPACT_TOOL,
    EXPAND_TOOL,
    AgentCall,
    Refusal,
    agent_tool_specs,
    read_call,
)

BOTH = (EXPAND_TOOL, COMPACT_TOOL)


class TestReadCall:
    """Each SDK's shape of arguments reads the same."""

    @pytest.mark.parametrize(
        "arguments", ['{"id": "n1"}', b'{"id": "n1"}', {"id": "n1"}, '  {"id": " n1 "} ']
    )
    def test_every_shape_reads(self, arguments: object) -> None:
        """JSON text, bytes and a mapping give the same call (the id stripped)."""
        assert read_call(EXPAND_TOOL, arguments, BOTH) == AgentCall(EXPAND_TOOL, {"id": "n1"})

    def test_compact_takes_no_argument_or_instructions(self) -> None:
        """context_compact reads with nothing, or with instructions."""
        assert read_call(COMPACT_TOOL, None, BOTH) == AgentCall(COMPACT_TOOL, {})
        called = read_call(COMPACT_TOOL, {"instructions": "keep the schema"}, BOTH)
        assert called == AgentCall(COMPACT_TOOL, {"instructions": "keep the schema"})

    def test_a_tool_not_enabled_is_refused(self) -> None:
        """A tool the manager did not add is a refusal naming the ones it has."""
        refused = read_call(COMPACT_TOOL, {}, (EXPAND_TOOL,))
        assert refused == Refusal(
            "'context_compact' is not a context tool; the context tools are context_expand"
        )

    def test_a_long_name_is_cut_short(self) -> None:
        """A hostile name is echoed at most a few dozen characters."""
        refused = read_call("x" * 5_000, {}, BOTH)
        assert isinstance(refused, Refusal)
        assert len(refused.text) < 150

    @pytest.mark.parametrize("arguments", [1, 2.5, ["id"], object()])
    def test_python_types_no_sdk_gives_raise(self, arguments: object) -> None:
        """Arguments that are neither text, bytes, a mapping nor None are a host error."""
        with pytest.raises(ConfigurationError, match="`arguments` must be"):
            read_call(EXPAND_TOOL, arguments, BOTH)


class TestSpecs:
    """The tool definitions and the option that picks them."""

    def test_the_specs_read_as_tools(self) -> None:
        """Each agent tool is a valid ToolSpec, `id` required for context_expand."""
        assert read_tools(list(AGENT_TOOLS.values())) == tuple(AGENT_TOOLS.values())
        assert AGENT_TOOLS[EXPAND_TOOL].parameters["required"] == ["id"]
        assert "required" not in AGENT_TOOLS[COMPACT_TOOL].parameters

    def test_the_table_is_read_only(self) -> None:
        """The public table of agent tools cannot be changed by a caller."""
        with pytest.raises(TypeError):
            AGENT_TOOLS["other"] = ToolSpec("other")  # type: ignore[index]

    @pytest.mark.parametrize(
        ("value", "names"),
        [
            (True, [EXPAND_TOOL]),
            (False, []),
            (None, []),
            (("compact", "expand"), [EXPAND_TOOL, COMPACT_TOOL]),
            ([COMPACT_TOOL], [COMPACT_TOOL]),
        ],
    )
    def test_the_option(self, value: object, names: list[str]) -> None:
        """The option's forms give the tools in a fixed order."""
        assert [spec.name for spec in agent_tool_specs(value, ())] == names
