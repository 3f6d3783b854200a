"""Tool definitions: read from every shape, rendered in each format, counted in budget."""

from __future__ import annotations

from typing import Any

import pytest
from anthropic.types import ToolParam
from google.genai import types as genai
from hypothesis import given
from hypothesis import strategies as st
from openai.types.chat import ChatCompletionFunctionTool
from openai.types.responses import FunctionTool
from openai.types.shared import FunctionDefinition

from benchmarks.sdk_types import sdk_problems
from context_graph import ConfigurationError, ContextGraph
from context_graph.render import FORMATS, Renderer, count_payload
from context_graph.render.tools import ToolSpec, read_tools, tool_names
from context_graph.testing import WordCounter
from context_graph.validate import validate

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"city": {"type": "string"}},
    "required": ["city"],
}
WEATHER = ToolSpec("weather", "The weather in a city.", SCHEMA)
CLOCK = ToolSpec("clock", "", {"type": "object", "properties": {}})

SHAPES: dict[str, Any] = {
    "openai chat": {
        "type": "function",
        "function": {
            "name": "weather",
            "description": "The weather in a city.",
            "parameters": SCHEMA,
        },
    },
    "responses": {
        "type": "function",
        "name": "weather",
        "description": "The weather in a city.",
        "parameters": SCHEMA,
        "strict": None,
    },
    "anthropic": {
        "name": "weather",
        "description": "The weather in a city.",
        "input_schema": SCHEMA,
    },
    "gemini tool": {
        "functionDeclarations": [
            {
                "name": "weather",
                "description": "The weather in a city.",
                "parametersJsonSchema": SCHEMA,
            }
        ]
    },
    "gemini declaration": {
        "name": "weather",
        "description": "The weather in a city.",
        "parameters": {
            "type": "OBJECT",
            "properties": {"city": {"type": "STRING"}},
            "required": ["city"],
        },
    },
    "neutral dict": {
        "name": "weather",
        "description": "The weather in a city.",
        "parameters": SCHEMA,
    },
    "spec": WEATHER,
    "openai sdk": {
        "type": "function",
        "function": FunctionDefinition(
            name="weather", description="The weather in a city.", parameters=SCHEMA
        ),
    },
    "openai sdk tool": ChatCompletionFunctionTool(
        type="function",
        function=FunctionDefinition(
            name="weather", description="The weather in a city.", parameters=SCHEMA
        ),
    ),
    "responses sdk tool": FunctionTool(
        type="function",
        name="weather",
        description="The weather in a city.",
        parameters=SCHEMA,
        strict=None,
    ),
    "gemini sdk": genai.Tool(
        function_declarations=[
            genai.FunctionDeclaration(
                name="weather",
                description="The weather in a city.",
                parameters_json_schema=SCHEMA,
            )
        ]
    ),
}


@pytest.fixture(name="graph")
def graph_fixture() -> ContextGraph:
    graph = ContextGraph(counter=WordCounter())
    graph.add_system("be brief")
    graph.add_user("weather in Oslo?")
    return graph


class TestReadTools:
    @pytest.mark.parametrize("shape", list(SHAPES))
    def test_every_shape_reads_as_the_same_spec(self, shape: str) -> None:
        """Each provider's shape, dict or SDK object, reads as the one neutral spec."""
        assert read_tools([SHAPES[shape]]) == (WEATHER,)

    def test_anthropic_typed_dict_reads(self) -> None:
        """The Anthropic SDK's `ToolParam` reads as the spec."""
        tool: ToolParam = {
            "name": "weather",
            "description": "The weather in a city.",
            "input_schema": SCHEMA,
        }
        assert read_tools([tool]) == (WEATHER,)

    @given(st.permutations(["a", "b", "c", "d", "e"]))
    def test_order_is_the_callers(self, names: list[str]) -> None:
        """Specs come back in the order given, whatever it is."""
        tools = [{"name": n, "parameters": {"type": "object"}} for n in names]
        assert tool_names(read_tools(tools)) == tuple(names)

    def test_gemini_tool_expands_its_declarations(self) -> None:
        """A Gemini tool of several declarations gives one spec each, in order."""
        tool = {"functionDeclarations": [{"name": "a"}, {"name": "b"}]}
        assert tool_names(read_tools([tool, {"name": "c"}])) == ("a", "b", "c")

    @pytest.mark.parametrize(
        ("tools", "message"),
        [
            ({"name": "x"}, "tools must be a list"),
            (["x"], "tools[0]: a tool definition must be an object, got str"),
            ([{"description": "no name"}], "tools[0]: not a tool definition of a known shape"),
            ([{"name": "has space"}], "tools[0]: `name` must be 1 to 64"),
            ([{"name": "a", "description": 3}], "tools[0] (`a`): `description` must be text"),
            ([{"name": "a", "parameters": []}], "tools[0] (`a`): the parameters must be a JSON"),
            (
                [{"name": "a", "input_schema": {"type": "string"}}],
                "tools[0] (`a`): the parameters schema must have type 'object'",
            ),
            ([{"type": "web_search", "name": "w"}], "tools[0] (`w`): type 'web_search' is not"),
            (
                [{"name": "a"}, {"name": "a"}],
                "tools[1]: tool `a` is defined twice (first at tools[0])",
            ),
            (
                [{"type": "function", "function": "a"}],
                "tools[0].function: expected an object",
            ),
            ([{"name": "a", "strict": "yes"}], "tools[0] (`a`): `strict` must be"),
        ],
    )
    def test_bad_input_names_the_tool_and_field(self, tools: Any, message: str) -> None:
        """Bad tool input is a ConfigurationError that says which tool and which field."""
        with pytest.raises(ConfigurationError) as caught:
            read_tools(tools)
        assert str(caught.value).startswith(message)


EXPECTED_FIELDS: dict[str, list[dict[str, Any]]] = {
    "openai": [
        {
            "type": "function",
            "function": {
                "name": "weather",
                "description": "The weather in a city.",
                "parameters": SCHEMA,
            },
        },
        {"type": "function", "function": {"name": "clock", "parameters": CLOCK.parameters}},
    ],
    "anthropic": [
        {"name": "weather", "description": "The weather in a city.", "input_schema": SCHEMA},
        {"name": "clock", "input_schema": CLOCK.parameters},
    ],
    "gemini": [
        {
            "functionDeclarations": [
                {
                    "name": "weather",
                    "description": "The weather in a city.",
                    "parametersJsonSchema": SCHEMA,
                },
                {"name": "clock", "parametersJsonSchema": CLOCK.parameters},
            ]
        }
    ],
    "responses": [
        {
            "type": "function",
            "name": "weather",
            "description": "The weather in a city.",
            "parameters": SCHEMA,
            "strict": None,
        },
        {"type": "function", "name": "clock", "parameters": CLOCK.parameters, "strict": None},
    ],
}


class TestRenderTools:
    @pytest.mark.parametrize("fmt", FORMATS)
    def test_body_is_the_plain_body_plus_the_tools_field(
        self, graph: ContextGraph, fmt: Any
    ) -> None:
        """With tools the body is the tool-free body with the format's `tools` field added."""
        plain = Renderer(format=fmt).render(graph).payload
        body = Renderer(format=fmt).render(graph, tools=[WEATHER, CLOCK]).payload
        assert body == {**plain, "tools": EXPECTED_FIELDS[fmt]}
        assert "tools" not in plain

    @pytest.mark.parametrize("fmt", FORMATS)
    def test_body_with_tools_passes_validator_and_sdk_types(
        self, graph: ContextGraph, fmt: Any
    ) -> None:
        """A body with tools breaks no rule of ours and no SDK request type."""
        body = Renderer(format=fmt).render(graph, tools=[SHAPES["anthropic"], CLOCK]).payload
        assert validate(body, fmt) == []
        assert sdk_problems(body, fmt) == []

    @pytest.mark.parametrize("fmt", FORMATS)
    def test_tools_are_counted_with_the_format_overhead(
        self, graph: ContextGraph, fmt: Any
    ) -> None:
        """The tokens of a body with tools are the plain body's plus the tools' own count."""
        renderer = Renderer(format=fmt)
        plain = renderer.render(graph)
        with_tools = renderer.render(graph, tools=[WEATHER])
        field = with_tools.payload["tools"]
        added = renderer.provider.count_tools(field, graph.token_cache)
        assert with_tools.tokens == plain.tokens + added
        assert added > renderer.provider.overhead.per_tools > 0

    @pytest.mark.parametrize("fmt", FORMATS)
    def test_tools_fit_inside_the_budget(self, fmt: Any) -> None:
        """Under a budget a body with tools drops history so that the whole request fits."""
        graph = ContextGraph(counter=WordCounter())
        graph.add_user("first request")
        for n in range(30):
            graph.add_assistant(f"answer number {n} " + "word " * 20)
            graph.add_user(f"follow up {n}")
        renderer = Renderer(format=fmt)
        plain = renderer.render(graph, budget=700)
        tools = [ToolSpec(f"tool_{n}", "does a thing " * 10, SCHEMA) for n in range(3)]
        fitted = renderer.render(graph, budget=700, tools=tools)
        assert fitted.tokens <= 700
        assert len(fitted.dropped) > len(plain.dropped)
        assert fitted.tokens == renderer.provider.count_payload(fitted.payload, graph.token_cache)

    def test_a_changed_tool_set_is_rendered_afresh(self, graph: ContextGraph) -> None:
        """The render cache does not hand back a body of another tool set."""
        renderer = Renderer(format="openai")
        first = renderer.render(graph, tools=[WEATHER])
        second = renderer.render(graph, tools=[CLOCK])
        assert [t["function"]["name"] for t in second.payload["tools"]] == ["clock"]
        assert renderer.render(graph, tools=[WEATHER]).payload == first.payload
        assert "tools" not in renderer.render(graph).payload

    def test_bad_tools_raise_before_rendering(self, graph: ContextGraph) -> None:
        """A bad tool definition fails the render with ConfigurationError."""
        with pytest.raises(ConfigurationError, match="defined twice"):
            Renderer(format="anthropic").render(graph, tools=[WEATHER, WEATHER])


class TestCountForeignBodies:
    @pytest.mark.parametrize("fmt", FORMATS)
    @pytest.mark.parametrize("tools", ["x", [1, "y", None], [{"functionDeclarations": 3}]])
    def test_odd_tools_fields_are_counted_without_raising(self, fmt: Any, tools: Any) -> None:
        """`count_payload` of a body from elsewhere with an odd `tools` field does not raise."""
        body = {"messages": [], "contents": [], "input": [], "tools": tools}
        assert count_payload(body, fmt, WordCounter()) >= 0


class TestToolSchemasAgainstTheSdk:
    def test_an_anthropic_schema_may_hold_any_json_schema_key(self) -> None:
        """`additionalProperties` in an Anthropic `input_schema` is valid, as the SDK types say."""
        schema = {
            "type": "object",
            "properties": {"n": {"type": "integer"}},
            "required": ["n"],
            "additionalProperties": False,
        }
        body = {
            "messages": [{"role": "user", "content": "hi"}],
            "tools": [{"name": "read_log", "description": "Read a log.", "input_schema": schema}],
        }
        assert sdk_problems(body, "anthropic") == []

    def test_a_misspelled_tool_key_is_still_refused(self) -> None:
        """Only the schema is open: an unknown key on the tool itself is still reported."""
        schema = {"type": "object", "properties": {}}
        body = {
            "messages": [{"role": "user", "content": "hi"}],
            "tools": [{"name": "t", "input_schem": schema, "input_schema": schema}],
        }
        assert any("input_schem" in p for p in sdk_problems(body, "anthropic"))


class TestAnthropicToolBreakpoint:
    def test_last_tool_is_marked_and_marks_stay_within_four(self, graph: ContextGraph) -> None:
        """With cache breakpoints the last tool gets `cache_control`; at most 4 marks in all."""
        renderer = Renderer(format="anthropic", cache_breakpoints=True)
        graph.add_assistant("sunny")
        first = renderer.render(graph, tools=[WEATHER, CLOCK])
        graph.add_user("and tomorrow?")
        second = renderer.render(graph, tools=[WEATHER, CLOCK])
        tools = second.payload["tools"]
        assert tools[-1]["cache_control"] == {"type": "ephemeral"}
        assert "cache_control" not in tools[0]
        assert str(second.payload).count("cache_control") <= 4
        assert validate(second.payload, "anthropic") == []
        assert sdk_problems(second.payload, "anthropic") == []
        # The mark costs nothing: the count is that of the unmarked body.
        unmarked = Renderer(format="anthropic").render(graph, tools=[WEATHER, CLOCK])
        assert second.tokens == unmarked.tokens
        assert first.payload["tools"] == tools

    def test_no_mark_without_breakpoints(self, graph: ContextGraph) -> None:
        """Without cache breakpoints no tool is marked."""
        body = Renderer(format="anthropic").render(graph, tools=[WEATHER]).payload
        assert "cache_control" not in str(body)
