from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from context_graph.errors import IngestError
from context_graph.formats.openai_responses import read as openai_responses
from context_graph.graph.content import ImagePart, ReasoningPart, TextPart
from context_graph.graph.context_graph import ContextGraph
from context_graph.graph.events import (
    AssistantTurn,
    SystemPrompt,
    ToolCall,
    ToolResult,
    UserTurn,
)
from context_graph.graph.nodes import ToolCallNode
from context_graph.importers import RawInput, detect_format, load_sessions
from context_graph.testing import graph_snapshot

TRACES = Path(__file__).resolve().parents[3].parent / "shared" / "traces"
#: No shared trace is a bare Responses payload: every one must be left to its own importer.
FAMILY = TRACES / "openai_responses"

ENCRYPTED = "gAAAAABpG5SB-opaque+/=="
PATCH = "*** Begin Patch\n*** Update File: a.py\n@@\n-x = 1\n+x = 2\n*** End Patch\n"

ITEMS: list[dict[str, Any]] = [
    {
        "type": "message",
        "role": "developer",
        "content": [{"type": "input_text", "text": "be brief"}],
    },
    {"role": "user", "content": "fix a.py"},
    {
        "type": "reasoning",
        "id": "rs_1",
        "summary": [{"type": "summary_text", "text": "**Reading the file**"}],
        "encrypted_content": ENCRYPTED,
    },
    {
        "type": "message",
        "id": "msg_1",
        "role": "assistant",
        "content": [{"type": "output_text", "text": "Reading it.", "annotations": []}],
        "phase": "commentary",
    },
    {
        "type": "function_call",
        "call_id": "call_1",
        "name": "shell",
        "arguments": '{"cmd": "cat a.py"}',
    },
    {"type": "function_call_output", "call_id": "call_1", "output": "x = 1\n"},
    {"type": "web_search_call", "id": "ws_1", "status": "completed", "action": {"type": "search"}},
    {"type": "custom_tool_call", "call_id": "call_2", "name": "apply_patch", "input": PATCH},
    {"type": "custom_tool_call_output", "call_id": "call_2", "output": "Success."},
    {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Done."}]},
]


def _events(data: Any) -> list[Any]:
    (session,) = load_sessions(RawInput(data), format="openai_responses")
    return session.events


def _plain(events: list[Any]) -> list[dict[str, Any]]:
    return [e.model_dump(mode="json", exclude={"source"}) for e in events]


class TestItems:
    def test_an_item_list_becomes_events(self) -> None:
        """Model items between two inputs are one turn; reasoning is a part before the text."""
        reasoning = ReasoningPart(
            id="rs_1", summary=("**Reading the file**",), encrypted_content=ENCRYPTED
        )
        custom = {"responses_type": "custom_tool_call"}
        expected = [
            SystemPrompt(content="be brief", meta={"role": "developer"}),
            UserTurn(content="fix a.py"),
            AssistantTurn(
                content=(reasoning, TextPart(text="Reading it.")),
                tool_calls=(ToolCall(id="call_1", name="shell", arguments='{"cmd": "cat a.py"}'),),
                message_id="msg_1",
                meta={"phase": "commentary"},
            ),
            ToolResult(call_id="call_1", content="x = 1\n"),
            AssistantTurn(
                tool_calls=(
                    ToolCall(id="call_2", name="apply_patch", arguments=PATCH, meta=custom),
                ),
                meta={"responses_items": [ITEMS[6]]},
            ),
            ToolResult(
                call_id="call_2",
                content="Success.",
                meta={"responses_type": "custom_tool_call_output"},
            ),
            AssistantTurn(content="Done."),
        ]
        assert _plain(_events(ITEMS)) == _plain(expected)

    def test_custom_call_meta_reaches_the_call_node(self) -> None:
        """The custom call node carries `responses_type`, so a renderer can send it back as one."""
        graph = ContextGraph()
        graph.ingest(_events(ITEMS))
        calls = {n.tool_call_id: n for n in graph if isinstance(n, ToolCallNode)}
        assert calls["call_2"].meta == {"responses_type": "custom_tool_call"}
        assert calls["call_2"].arguments == PATCH
        assert calls["call_1"].meta == {}

    def test_a_call_without_meta_serializes_as_before(self) -> None:
        """`ToolCall.meta` is left out of the JSON when empty, so existing node ids stay."""
        plain = ToolCall(id="c", name="ls", arguments="{}")
        assert plain.model_dump_json() == '{"id":"c","name":"ls","arguments":"{}"}'
        marked = ToolCall(id="c", name="ls", meta={"responses_type": "custom_tool_call"})
        assert json.loads(marked.model_dump_json())["meta"] == {
            "responses_type": "custom_tool_call"
        }

    def test_parallel_calls_stay_in_one_turn(self) -> None:
        """Two calls before their outputs belong to one assistant turn."""
        items = [
            {"role": "user", "content": "go"},
            {"type": "function_call", "call_id": "a", "name": "ls", "arguments": "{}"},
            {"type": "function_call", "call_id": "b", "name": "pwd", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "a", "output": "x"},
            {
                "type": "function_call_output",
                "call_id": "b",
                "output": [{"type": "input_text", "text": "/"}],
            },
        ]
        events = _events(items)
        assert [type(e).__name__ for e in events] == [
            "UserTurn",
            "AssistantTurn",
            "ToolResult",
            "ToolResult",
        ]
        assert [c.id for c in events[1].tool_calls] == ["a", "b"]
        assert events[3].content == (TextPart(text="/"),)

    def test_request_body_instructions_and_string_input(self) -> None:
        """`instructions` is the system prompt; a string `input` is one user message."""
        events = _events({"model": "gpt-5", "instructions": "You are terse.", "input": "hi"})
        assert _plain(events) == _plain(
            [SystemPrompt(content="You are terse."), UserTurn(content="hi")]
        )

    def test_response_object_output(self) -> None:
        """A response object's output is the assistant turn, credited to its model."""
        body = {
            "object": "response",
            "id": "resp_1",
            "model": "gpt-5.1",
            "status": "completed",
            "previous_response_id": None,
            "output": [
                {"type": "reasoning", "id": "rs_9", "summary": []},
                {
                    "type": "message",
                    "id": "msg_9",
                    "role": "assistant",
                    "status": "completed",
                    "content": [{"type": "output_text", "text": "Hello."}],
                },
            ],
            "usage": {"input_tokens": 5, "output_tokens": 2},
        }
        (session,) = load_sessions(RawInput(body))
        (turn,) = session.events
        assert isinstance(turn, AssistantTurn)
        assert turn.content == (ReasoningPart(id="rs_9"), TextPart(text="Hello."))
        assert (turn.model, turn.message_id) == ("gpt-5.1", "msg_9")
        assert session.meta == {
            "format": "openai_responses",
            "model": "gpt-5.1",
            "id": "resp_1",
            "status": "completed",
            "usage": {"input_tokens": 5, "output_tokens": 2},
        }

    def test_input_images_and_files(self) -> None:
        """`input_image` data URLs become inline images; web URLs stay URLs."""
        items = [
            {
                "role": "user",
                "content": [
                    {
                        "type": "input_image",
                        "image_url": "data:image/png;base64,iVBORw0KGgo=",
                        "detail": "auto",
                    },
                    {
                        "type": "input_image",
                        "image_url": "https://example.com/a.png",
                        "detail": "low",
                    },
                ],
            },
        ]
        (turn,) = _events(items)
        assert turn.content == (
            ImagePart(media_type="image/png", data="iVBORw0KGgo="),
            ImagePart(url="https://example.com/a.png"),
        )


class TestServerState:
    @pytest.mark.parametrize(
        ("body", "path"),
        [
            ({"previous_response_id": "resp_7", "input": "and then?"}, "previous_response_id"),
            (
                {"conversation": "conv_1", "input": [{"role": "user", "content": "x"}]},
                "conversation",
            ),
            ({"input": [{"type": "item_reference", "id": "msg_3"}]}, "input[0].id"),
        ],
        ids=["previous_response_id", "conversation", "item_reference"],
    )
    def test_history_on_the_server_is_refused(self, tmp_path: Path, body: Any, path: str) -> None:
        """A chain to stored history is an IngestError naming the file, the field and why."""
        file = tmp_path / "request.json"
        file.write_text(json.dumps(body), "utf-8")
        with pytest.raises(IngestError, match="cannot be read offline") as caught:
            load_sessions(file)
        assert (caught.value.location.file, caught.value.location.path) == (str(file), path)


class TestDetection:
    @pytest.mark.parametrize(
        "data",
        [
            ITEMS,
            [{"type": "function_call", "call_id": "c", "name": "n", "arguments": "{}"}],
            [{"role": "user", "content": [{"type": "input_text", "text": "hi"}]}],
            {"input": "hi"},
            {"instructions": "s", "input": [{"role": "user", "content": "hi"}]},
            {"object": "response", "output": []},
        ],
    )
    def test_responses_shapes_are_detected(self, data: Any) -> None:
        """Item lists, request bodies and response objects are detected as Responses."""
        assert detect_format(RawInput(data)) == "openai_responses"

    @pytest.mark.parametrize(
        ("data", "fmt"),
        [
            ([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}], "openai"),
            ({"messages": [{"role": "user", "content": "hi"}]}, "openai"),
            ({"system": "s", "messages": [{"role": "user", "content": "hi"}]}, "anthropic"),
            ({"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}, "gemini"),
        ],
    )
    def test_other_payloads_keep_their_format(self, data: Any, fmt: str) -> None:
        """Chat Completions, Anthropic and Gemini payloads are not claimed."""
        assert detect_format(RawInput(data)) == fmt

    def test_shared_traces_are_not_claimed(self, other_trace: Path) -> None:
        """No shared trace file is taken for a Responses payload."""
        from context_graph.importers import read_raw

        assert not openai_responses.sniff(read_raw(other_trace))

    @given(
        st.recursive(
            st.none() | st.booleans() | st.integers() | st.text(max_size=5),
            lambda kids: (
                st.lists(kids, max_size=4)
                | st.dictionaries(
                    st.sampled_from(["type", "role", "content", "input", "object", "output"]),
                    kids,
                    max_size=4,
                )
            ),
            max_leaves=12,
        )
    )
    def test_sniff_never_raises(self, data: Any) -> None:
        """Any JSON value is answered yes or no, never with an exception."""
        assert openai_responses.sniff(RawInput(data)) in (True, False)


class TestMalformed:
    @pytest.mark.parametrize(
        ("item", "path"),
        [
            (5, "[1]"),
            ({"type": "video"}, "[1].type"),
            ({"type": ["message"]}, "[1].type"),
            ({"type": "message", "role": "robot", "content": "x"}, "[1].role"),
            ({"type": "message", "role": "user"}, "[1]"),
            ({"role": "user", "content": [{"type": "input_video"}]}, "[1].content[0].type"),
            (
                {"role": "user", "content": [{"type": "input_text", "text": 3}]},
                "[1].content[0].text",
            ),
            (
                {"type": "function_call", "call_id": "", "name": "n", "arguments": "{}"},
                "[1].call_id",
            ),
            (
                {"type": "function_call", "call_id": "c", "name": "n", "arguments": {"a": 1}},
                "[1].arguments",
            ),
            ({"type": "custom_tool_call", "call_id": "c", "name": "n"}, "[1].input"),
            ({"type": "function_call_output", "call_id": "nope", "output": "x"}, "[1].call_id"),
            ({"type": "reasoning", "summary": [{"type": "summary_text"}]}, "[1].summary[0].text"),
            ({"type": "reasoning", "summary": [], "encrypted_content": 7}, "[1].encrypted_content"),
            ({"type": "reasoning", "summary": "x"}, "[1].summary"),
        ],
        ids=[
            "not an object",
            "unknown type",
            "type a list",
            "unknown role",
            "no content",
            "unknown part",
            "text a number",
            "empty call id",
            "arguments an object",
            "custom call without input",
            "output without call",
            "summary without text",
            "encrypted content a number",
            "summary a string",
        ],
    )
    def test_bad_item_names_file_and_path(self, tmp_path: Path, item: Any, path: str) -> None:
        """A malformed item raises `IngestError` naming the file and the field."""
        file = tmp_path / "items.json"
        file.write_text(
            json.dumps([{"type": "message", "role": "user", "content": "hi"}, item]), "utf-8"
        )
        with pytest.raises(IngestError) as caught:
            load_sessions(file, format="openai_responses")
        assert (caught.value.location.file, caught.value.location.path) == (str(file), path)

    @given(
        index=st.integers(0, len(ITEMS) - 1),
        key=st.sampled_from(
            [
                "type",
                "role",
                "content",
                "call_id",
                "name",
                "arguments",
                "input",
                "output",
                "summary",
                "encrypted_content",
                "id",
                "phase",
            ]
        ),
        junk=st.one_of(
            st.none(),
            st.integers(),
            st.text(max_size=3),
            st.lists(st.integers(), max_size=2),
            st.dictionaries(st.text(max_size=2), st.integers(), max_size=2),
            st.booleans(),
        ),
    )
    def test_hostile_values_give_a_typed_error_and_change_nothing(
        self, index: int, key: str, junk: Any
    ) -> None:
        """Any field replaced by junk: events that ingest, or an `IngestError` with a path."""
        items = json.loads(json.dumps(ITEMS))
        items[index][key] = junk
        graph = ContextGraph()
        graph.add_system("kept")
        before = graph_snapshot(graph)
        try:
            graph.ingest(_events(items))
        except IngestError as exc:
            assert exc.location is not None
            assert exc.location.path is not None or exc.location.index is not None
            assert graph_snapshot(graph) == before
