"""The OpenAI Responses format: whole bodies for small graphs, and what every graph gives.

Bodies are compared whole. Custom tool calls are ToolCallNodes whose `meta` says
`responses_type: custom_tool_call`; the `meta_view` fixture gives a graph's call nodes that
meta (the way the Responses importer records them), so these tests need no importer.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from benchmarks.sdk_types import sdk_problems
from context_graph import (
    BudgetExceededError,
    ContentPart,
    ContextGraph,
    ImagePart,
    ReasoningPart,
    TextPart,
)
from context_graph.graph.node_tokens import NodeTokenCache
from context_graph.render import MISSING_RESULT_TEXT, Renderer, RenderSource, count_payload
from context_graph.testing import WordCounter
from context_graph.validate import validate

REASONING = ReasoningPart(id="rs_1", summary=("Look at a.py first.",), encrypted_content="gAAA==")
CUSTOM = {"responses_type": "custom_tool_call"}
#: The `meta_view` fixture (tests/context_graph/render/conftest.py).
MetaViewFactory = Callable[..., RenderSource]


@pytest.fixture(name="graph")
def graph_fixture() -> ContextGraph:
    return ContextGraph(counter=WordCounter())


def _render(source: Any, budget: int | None = None, fmt: str = "responses") -> dict[str, Any]:
    result = Renderer(format=fmt).render(source, budget=budget)  # type: ignore[arg-type]
    assert validate(result.payload, fmt) == []  # type: ignore[arg-type]
    assert sdk_problems(result.payload, fmt) == []
    payload: dict[str, Any] = result.payload
    return payload


def _user(text: str) -> dict[str, Any]:
    return {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}


def _said(text: str) -> dict[str, Any]:
    part = {"type": "output_text", "text": text, "annotations": []}
    return {"type": "message", "role": "assistant", "content": [part]}


def _reasoning(part: ReasoningPart = REASONING) -> dict[str, Any]:
    summary = [{"type": "summary_text", "text": t} for t in part.summary]
    return {
        "type": "reasoning",
        "id": part.id,
        "summary": summary,
        "encrypted_content": part.encrypted_content,
    }


def _call(call_id: str, name: str = "read", arguments: str = '{"path": "a.py"}') -> dict[str, str]:
    return {"id": call_id, "name": name, "arguments": arguments}


class TestBodies:
    def test_a_tool_turn_is_message_call_and_output_items(self, graph: ContextGraph) -> None:
        """System text goes to instructions; a call and its output are paired by call_id."""
        graph.add_system("You are a coding agent.")
        graph.add_system("Be brief.")
        graph.add_user("fix a.py")
        graph.add_assistant("reading", tool_calls=[_call("call_1")])
        graph.add_tool_result("call_1", "def f(): pass")
        assert _render(graph) == {
            "instructions": "You are a coding agent.\n\nBe brief.",
            "input": [
                _user("fix a.py"),
                _said("reading"),
                {
                    "type": "function_call",
                    "call_id": "call_1",
                    "name": "read",
                    "arguments": '{"path": "a.py"}',
                },
                {"type": "function_call_output", "call_id": "call_1", "output": "def f(): pass"},
            ],
        }

    def test_reasoning_goes_back_verbatim_before_its_turn(self, graph: ContextGraph) -> None:
        """A reasoning item is sent as received, right before the text and call it led to."""
        graph.add_user("fix a.py")
        graph.add_assistant([REASONING, TextPart(text="reading")], tool_calls=[_call("call_1")])
        graph.add_tool_result("call_1", "ok")
        assert _render(graph)["input"] == [
            _user("fix a.py"),
            _reasoning(),
            _said("reading"),
            {
                "type": "function_call",
                "call_id": "call_1",
                "name": "read",
                "arguments": '{"path": "a.py"}',
            },
            {"type": "function_call_output", "call_id": "call_1", "output": "ok"},
        ]

    def test_reasoning_between_texts_keeps_its_place(self, graph: ContextGraph) -> None:
        """Text, reasoning, text: two messages with the reasoning item between them."""
        second = ReasoningPart(id="rs_2", summary=())
        graph.add_user("go")
        graph.add_assistant([TextPart(text="one"), second, TextPart(text="two")])
        assert _render(graph)["input"] == [
            _user("go"),
            _said("one"),
            {"type": "reasoning", "id": "rs_2", "summary": []},
            _said("two"),
        ]

    def test_reasoning_that_led_to_nothing_is_left_out(self, graph: ContextGraph) -> None:
        """A turn of reasoning alone sends nothing: the API refuses a reasoning item alone."""
        graph.add_user("go")
        graph.add_assistant([REASONING, TextPart(text="")])
        graph.add_user("again")
        assert _render(graph)["input"] == [_user("go"), _user("again")]

    def test_reasoning_with_neither_id_nor_payload_is_left_out(self, graph: ContextGraph) -> None:
        """A summary alone cannot be sent back (the API finds reasoning by id or payload)."""
        graph.add_user("go")
        graph.add_assistant([ReasoningPart(summary=("just a summary",)), TextPart(text="done")])
        assert _render(graph)["input"] == [_user("go"), _said("done")]

    def test_reasoning_without_an_id_goes_back_with_its_payload(self, graph: ContextGraph) -> None:
        """Codex CLI records reasoning without an id: the item is sent without one."""
        part = ReasoningPart(summary=("plan",), encrypted_content="gAAB")
        graph.add_user("go")
        graph.add_assistant([part, TextPart(text="done")])
        item = {"type": "reasoning", "summary": [{"type": "summary_text", "text": "plan"}]}
        assert _render(graph)["input"][1] == item | {"encrypted_content": "gAAB"}

    def test_an_unanswered_call_gets_the_missing_result_text(self, graph: ContextGraph) -> None:
        """A call the session never answered is answered by the engine's placeholder."""
        graph.add_user("deploy")
        graph.add_assistant(None, tool_calls=[_call("call_d", "deploy", "{}")])
        assert _render(graph)["input"][1:] == [
            {"type": "function_call", "call_id": "call_d", "name": "deploy", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "call_d", "output": MISSING_RESULT_TEXT},
        ]

    def test_a_long_call_id_is_rewritten_the_same_on_both_items(self, graph: ContextGraph) -> None:
        """A call_id over 64 characters is mapped to one that fits, on call and output alike."""
        long_id = "call_" + "x" * 80
        graph.add_user("go")
        graph.add_assistant(None, tool_calls=[_call(long_id)])
        graph.add_tool_result(long_id, "ok")
        call, output = _render(graph)["input"][1:]
        assert call["call_id"] == output["call_id"] != long_id
        assert len(call["call_id"]) <= 64

    def test_images_are_input_images(self, graph: ContextGraph) -> None:
        """An image by URL and an inline one become `input_image` parts of the user message."""
        graph.add_user(
            [
                TextPart(text="what is this?"),
                ImagePart(url="https://example.com/a.png"),
                ImagePart(media_type="image/jpeg", data="QUJD"),
            ]
        )
        assert _render(graph)["input"] == [
            {
                "type": "message",
                "role": "user",
                "content": [
                    {"type": "input_text", "text": "what is this?"},
                    {
                        "type": "input_image",
                        "image_url": "https://example.com/a.png",
                        "detail": "auto",
                    },
                    {
                        "type": "input_image",
                        "image_url": "data:image/jpeg;base64,QUJD",
                        "detail": "auto",
                    },
                ],
            }
        ]

    def test_an_empty_history_sends_the_leading_user_turn(self, graph: ContextGraph) -> None:
        """Nothing to send still gives one user message (an empty `input` is refused)."""
        graph.add_system("You are terse.")
        assert _render(graph) == {
            "instructions": "You are terse.",
            "input": [_user("[conversation start]")],
        }


class TestCustomToolCalls:
    def _graph(self, graph: ContextGraph, meta_view: MetaViewFactory) -> RenderSource:
        graph.add_user("patch it")
        _, call = graph.add_assistant(
            None, tool_calls=[_call("call_p", "apply_patch", "*** Begin Patch\n*** End Patch")]
        )
        result = graph.add_tool_result("call_p", "Done!")
        return meta_view(
            graph, {call: CUSTOM, result: {"responses_type": "custom_tool_call_output"}}
        )

    def test_custom_calls_go_back_as_custom_items(
        self, graph: ContextGraph, meta_view: MetaViewFactory
    ) -> None:
        """A custom call sends its raw input text, and is answered by a custom output."""
        assert _render(self._graph(graph, meta_view))["input"][1:] == [
            {
                "type": "custom_tool_call",
                "call_id": "call_p",
                "name": "apply_patch",
                "input": "*** Begin Patch\n*** End Patch",
            },
            {"type": "custom_tool_call_output", "call_id": "call_p", "output": "Done!"},
        ]

    def test_other_formats_get_the_raw_input_as_a_json_object(
        self, graph: ContextGraph, meta_view: MetaViewFactory
    ) -> None:
        """Chat, Anthropic and Gemini calls take JSON objects: the text is `{"input": ...}`."""
        source = self._graph(graph, meta_view)
        wrapped = {"input": "*** Begin Patch\n*** End Patch"}
        openai = _render(source, fmt="openai")["messages"][1]["tool_calls"][0]["function"]
        assert json.loads(openai["arguments"]) == wrapped
        anthropic = _render(source, fmt="anthropic")["messages"][1]["content"][0]
        assert anthropic["input"] == wrapped
        gemini = _render(source, fmt="gemini")["contents"][1]["parts"][0]["functionCall"]
        assert gemini["args"] == wrapped

    def test_a_plain_call_with_text_arguments_is_unchanged(self, graph: ContextGraph) -> None:
        """Only custom calls are wrapped: a function call's text arguments stay as they were."""
        graph.add_user("go")
        graph.add_assistant(None, tool_calls=[_call("call_t", "sh", "ls -la")])
        graph.add_tool_result("call_t", "a.py")
        function = _render(graph, fmt="openai")["messages"][1]["tool_calls"][0]["function"]
        assert function["arguments"] == "ls -la"
        block = _render(graph, fmt="anthropic")["messages"][1]["content"][0]
        assert block["input"] == {"arguments": "ls -la"}


class TestReasoningInOtherFormats:
    @pytest.mark.parametrize("fmt", ["openai", "anthropic", "gemini"])
    def test_a_reasoning_part_is_left_out(self, fmt: str) -> None:
        """Formats that cannot read a Responses reasoning item render the turn without it."""
        bodies = []
        contents: list[list[ContentPart]] = [[REASONING, TextPart(text="reading")]]
        contents.append([TextPart(text="reading")])
        for content in contents:
            graph = ContextGraph(counter=WordCounter())
            graph.add_user("fix a.py")
            graph.add_assistant(content, tool_calls=[_call("call_1")])
            graph.add_tool_result("call_1", "ok")
            bodies.append(_render(graph, fmt=fmt))
        assert bodies[0] == bodies[1]


class TestBudget:
    def _session(self, graph: ContextGraph, turns: int) -> list[str]:
        graph.add_system("You are a coding agent.")
        graph.add_user("fix every file")
        ids = []
        for n in range(turns):
            part = ReasoningPart(id=f"rs_{n}", summary=(f"step {n} " * 5,), encrypted_content="e")
            call = f"call_{n}"
            graph.add_assistant([part, TextPart(text=f"step {n}")], tool_calls=[_call(call)])
            graph.add_tool_result(call, "output " * 20)
            ids.append(f"rs_{n}")
        graph.add_user("wrap up")
        return ids

    def test_a_dropped_unit_takes_its_reasoning_with_it(self, graph: ContextGraph) -> None:
        """Under pressure whole turns go: each reasoning item left is still before its call."""
        reasoning_ids = self._session(graph, 8)
        full = Renderer(format="responses").render(graph)
        result = Renderer(format="responses").render(graph, budget=full.tokens // 2)
        assert result.dropped
        items = result.payload["input"]
        kept = [i["id"] for i in items if i["type"] == "reasoning"]
        assert kept and kept != reasoning_ids
        assert kept == reasoning_ids[-len(kept) :]
        for n, item in enumerate(items):
            if item["type"] == "reasoning":
                assert items[n + 1]["type"] == "message"
                assert items[n + 2]["type"] == "function_call"
        assert validate(result.payload, "responses") == []
        assert sdk_problems(result.payload, "responses") == []

    def test_tokens_are_the_count_of_the_body(self, graph: ContextGraph) -> None:
        """A render's tokens are what the format counts in its body, at every budget."""
        self._session(graph, 6)
        renderer = Renderer(format="responses")
        full = renderer.render(graph).tokens
        for budget in (None, full, full * 3 // 4, full // 2):
            try:
                result = renderer.render(graph, budget=budget)
            except BudgetExceededError as exc:
                assert budget is not None and exc.required > budget
                continue
            assert result.tokens == count_payload(result.payload, "responses", WordCounter())
            assert budget is None or result.tokens <= budget

    def test_the_text_shorthands_count_as_their_messages(self) -> None:
        """`input` as one string, or a message's `content` as a string, counts as typed text."""
        typed = {
            "input": [
                {
                    "type": "message",
                    "role": "user",
                    "content": [{"type": "input_text", "text": "fix the tests now"}],
                }
            ]
        }
        counted = count_payload(typed, "responses", WordCounter())
        assert count_payload({"input": "fix the tests now"}, "responses", WordCounter()) == counted
        short = {"input": [{"role": "user", "content": "fix the tests now"}]}
        assert count_payload(short, "responses", WordCounter()) == counted

    def test_a_reasoning_part_costs_its_summary_and_payload(self, graph: ContextGraph) -> None:
        """The node costs what goes back: the summary (4 words), the payload and the text."""
        graph.add_user("go")
        head = graph.add_assistant([REASONING, TextPart(text="done now")])[0]
        assert graph.token_cache.count_node(graph[head]) == 4 + 1 + 2

    def test_the_count_is_the_body_counted_from_scratch(self, graph: ContextGraph) -> None:
        """`count_payload` of the body equals the render's own total."""
        self._session(graph, 2)
        result = Renderer(format="responses").render(graph)
        cache = NodeTokenCache(WordCounter())
        assert result.tokens == count_payload(result.payload, "responses", cache.counter)
