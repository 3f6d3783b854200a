from __future__ import annotations

import contextlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from context_graph.errors import IngestError
from context_graph.formats.openai_chat import read as openai_importer
from context_graph.graph.content import ImagePart, TextPart, ThinkingPart
from context_graph.graph.context_graph import ContextGraph
from context_graph.graph.events import AssistantTurn, SystemPrompt, ToolResult, UserTurn
from context_graph.graph.nodes import ToolCallNode
from context_graph.importers import RawInput, detect_format, load_sessions, read_raw
from context_graph.testing import graph_snapshot


def _load(payload: Any) -> list[Any]:
    (session,) = load_sessions(RawInput(payload), format="openai")
    return list(session.events)


def _call(call_id: str, name: str, arguments: str = "{}") -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


CHAT: list[dict[str, Any]] = [
    {"role": "system", "content": "be brief"},
    {"role": "user", "content": "weather in Paris?"},
    {"role": "assistant", "content": None, "tool_calls": [_call("call_1", "weather")]},
    {"role": "tool", "tool_call_id": "call_1", "content": "sunny"},
    {"role": "assistant", "content": "It is sunny."},
]


class TestOpenAIImporter:
    def test_roles_become_events_in_order(self) -> None:
        """System, user, assistant and tool messages become the matching events, in order."""
        events = _load(CHAT)
        kinds = [type(e) for e in events]
        assert kinds == [SystemPrompt, UserTurn, AssistantTurn, ToolResult, AssistantTurn]

    def test_request_body_is_read_like_a_bare_list(self) -> None:
        """A request body's `messages` give the same events, and its model goes to meta."""
        (session,) = load_sessions(RawInput({"model": "gpt-4o", "messages": CHAT}), format="openai")
        assert [e.type for e in session.events] == [e.type for e in _load(CHAT)]
        assert session.meta["model"] == "gpt-4o"

    def test_tool_results_answer_their_calls(self, graph: ContextGraph) -> None:
        """A `tool` message answers the call with its `tool_call_id`, which takes its name."""
        graph.ingest(_load(CHAT))
        (call_id,) = graph.by_kind("tool_call")
        answer = graph.answer_to(call_id)
        assert answer is not None and answer.text == "sunny"
        assert getattr(answer, "name", None) == "weather"
        assert graph.unanswered_calls() == ()

    def test_arguments_are_kept_exactly(self, graph: ContextGraph) -> None:
        """Arguments given as JSON text keep their exact bytes, spacing and key order included."""
        text = '{ "b" : 1,\n  "a": [2, 3] }'
        messages = [{"role": "assistant", "content": "", "tool_calls": [_call("c", "f", text)]}]
        (event,) = _load(messages)
        graph.ingest([event])
        (call_id,) = graph.by_kind("tool_call")
        call = graph[call_id]
        assert isinstance(call, ToolCallNode) and call.arguments == text

    def test_parallel_calls_keep_their_order(self, graph: ContextGraph) -> None:
        """Several calls in one message stay in one turn, in order."""
        calls = [_call("a", "one"), _call("b", "two")]
        messages = [
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": None, "tool_calls": calls},
            {"role": "tool", "tool_call_id": "b", "content": "2"},
            {"role": "tool", "tool_call_id": "a", "content": "1"},
        ]
        graph.ingest(_load(messages))
        names = [getattr(graph[i], "name", None) for i in graph.by_kind("tool_call")]
        assert names == ["one", "two"]
        assert graph.unanswered_calls() == ()

    def test_content_parts_convert(self) -> None:
        """Text, image URLs, inline images and audio / file markers convert in order."""
        parts = [
            {"type": "text", "text": "look"},
            {"type": "image_url", "image_url": {"url": "https://x.test/a.png", "detail": "low"}},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
            {"type": "input_audio", "input_audio": {"data": "AAAA", "format": "wav"}},
            {"type": "file", "file": {"filename": "report.pdf", "file_data": "JVBERi0="}},
        ]
        (event,) = _load([{"role": "user", "content": parts}])
        assert event.content == (
            TextPart(text="look"),
            ImagePart(url="https://x.test/a.png"),
            ImagePart(media_type="image/png", data="iVBORw0KGgo="),
            TextPart(text="[input_audio: wav]"),
            TextPart(text="[file: report.pdf]"),
        )

    def test_legacy_function_call_gets_a_synthesized_id(self, graph: ContextGraph) -> None:
        """A `function_call` gets the id `fn_<message index>`; the `function` reply answers it."""
        messages = [
            {"role": "user", "content": "add"},
            {
                "role": "assistant",
                "content": None,
                "function_call": {"name": "add", "arguments": "1"},
            },
            {"role": "function", "name": "add", "content": "2"},
        ]
        events = _load(messages)
        assert events[1].tool_calls[0].id == "fn_1"
        assert isinstance(events[2], ToolResult) and events[2].call_id == "fn_1"
        graph.ingest(events)
        assert graph.unanswered_calls() == ()

    def test_legacy_ids_are_deterministic(self) -> None:
        """Importing the same legacy conversation twice gives the same events."""
        messages = [
            {
                "role": "assistant",
                "content": None,
                "function_call": {"name": "f", "arguments": "{}"},
            },
            {"role": "function", "name": "f", "content": "ok"},
        ]
        assert _load(messages) == _load(messages)

    def test_reasoning_content_is_kept_as_thinking(self) -> None:
        """`reasoning_content` becomes a thinking part without signature, before the text."""
        messages = [{"role": "assistant", "content": "42", "reasoning_content": "think hard"}]
        (event,) = _load(messages)
        assert event.content == (ThinkingPart(thinking="think hard"), TextPart(text="42"))
        assert event.content[0].signature is None

    def test_developer_role_is_a_system_prompt(self) -> None:
        """A `developer` message is a system prompt that remembers its role in meta."""
        (event,) = _load([{"role": "developer", "content": "rules"}])
        assert isinstance(event, SystemPrompt)
        assert event.meta["role"] == "developer"

    def test_name_goes_to_meta(self) -> None:
        """A message's `name` field is kept in its metadata."""
        (event,) = _load([{"role": "user", "name": "ada", "content": "hi"}])
        assert event.meta == {"name": "ada"}

    def test_events_name_their_source(self, write_json: Callable[..., Path]) -> None:
        """Every event records the file, message index and JSON path it came from."""
        path = write_json({"messages": CHAT})
        (session,) = load_sessions(path, format="openai")
        for index, event in enumerate(session.events):
            assert event.source is not None
            assert (event.source.file, event.source.index) == (str(path), index)
            assert event.source.path == f"messages[{index}]"


BAD_MESSAGES: list[tuple[str, list[Any], int, str]] = [
    ("not an object", [{"role": "user", "content": "a"}, "junk"], 1, "messages[1]"),
    ("unknown role", [{"role": "wizard", "content": "a"}], 0, "messages[0].role"),
    ("role not a string", [{"role": 7, "content": "a"}], 0, "messages[0].role"),
    ("role a list", [{"role": ["user"], "content": "a"}], 0, "messages[0].role"),
    ("missing content", [{"role": "user"}], 0, "messages[0]"),
    ("content a number", [{"role": "user", "content": 5}], 0, "messages[0].content"),
    ("part not an object", [{"role": "user", "content": ["x"]}], 0, "messages[0].content[0]"),
    (
        "unknown part type",
        [{"role": "user", "content": [{"type": "hologram"}]}],
        0,
        "messages[0].content[0].type",
    ),
    (
        "text part without text",
        [{"role": "user", "content": [{"type": "text"}]}],
        0,
        "messages[0].content[0].text",
    ),
    (
        "image without url",
        [{"role": "user", "content": [{"type": "image_url", "image_url": {}}]}],
        0,
        "messages[0].content[0].image_url.url",
    ),
    ("name not a string", [{"role": "user", "content": "a", "name": 3}], 0, "messages[0].name"),
    (
        "tool_calls not a list",
        [{"role": "assistant", "content": None, "tool_calls": {"id": "x"}}],
        0,
        "messages[0].tool_calls",
    ),
    (
        "call without id",
        [{"role": "assistant", "tool_calls": [{"function": {"name": "f"}}]}],
        0,
        "messages[0].tool_calls[0].id",
    ),
    (
        "call with empty name",
        [{"role": "assistant", "tool_calls": [_call("c", "")]}],
        0,
        "messages[0].tool_calls[0].function.name",
    ),
    (
        "arguments a number",
        [
            {
                "role": "assistant",
                "tool_calls": [{"id": "c", "function": {"name": "f", "arguments": 1}}],
            }
        ],
        0,
        "messages[0].tool_calls[0].function.arguments",
    ),
    (
        "custom tool call",
        [{"role": "assistant", "tool_calls": [{"id": "c", "type": "custom", "custom": {}}]}],
        0,
        "messages[0].tool_calls[0].type",
    ),
    ("tool without id", [{"role": "tool", "content": "x"}], 0, "messages[0].tool_call_id"),
    (
        "function reply without call",
        [{"role": "function", "name": "f", "content": "x"}],
        0,
        "messages[0]",
    ),
    (
        "reasoning not a string",
        [{"role": "assistant", "content": "a", "reasoning_content": ["x"]}],
        0,
        "messages[0].reasoning_content",
    ),
]


class TestOpenAIMalformedInput:
    @pytest.mark.parametrize(
        ("messages", "index", "where"),
        [case[1:] for case in BAD_MESSAGES],
        ids=[case[0] for case in BAD_MESSAGES],
    )
    def test_error_names_file_message_and_path(
        self, write_json: Callable[..., Path], messages: list[Any], index: int, where: str
    ) -> None:
        """A malformed message raises `IngestError` naming the file, its index and the field."""
        path = write_json({"messages": messages})
        with pytest.raises(IngestError) as info:
            load_sessions(path, format="openai")
        location = info.value.location
        assert (location.file, location.index, location.path) == (str(path), index, where)

    def test_bare_list_paths_have_no_prefix(self) -> None:
        """In a bare message list the path starts at the message's index."""
        with pytest.raises(IngestError) as info:
            _load([{"role": "user", "content": "a"}, {"role": "user", "content": 1}])
        assert info.value.location.path == "[1].content"

    @pytest.mark.parametrize("payload", [{"messages": "nope"}, {"messages": None}, {}])
    def test_messages_must_be_a_list(self, payload: dict[str, Any]) -> None:
        """A request body whose `messages` is not a list is refused at `messages`."""
        with pytest.raises(IngestError) as info:
            load_sessions(RawInput(payload), format="openai")
        assert info.value.location.path == "messages"

    def test_payload_must_be_a_list_or_object(self) -> None:
        """A payload that is neither a list nor an object is refused."""
        with pytest.raises(IngestError):
            load_sessions(RawInput("hello"), format="openai")

    def test_orphan_tool_result_is_refused_by_the_graph(
        self, graph: ContextGraph, write_json: Callable[..., Path]
    ) -> None:
        """A result with no earlier call fails at ingest, naming its message; nothing is applied."""
        messages = [*CHAT, {"role": "tool", "tool_call_id": "call_404", "content": "?"}]
        path = write_json({"messages": messages})
        (session,) = load_sessions(path, format="openai")
        graph.ingest(session.events[:2])
        before = graph_snapshot(graph)
        with pytest.raises(IngestError) as info:
            graph.ingest(session.events[2:])
        location = info.value.location
        assert (location.file, location.index) == (str(path), len(messages) - 1)
        assert location.path == f"messages[{len(messages) - 1}]"
        assert "call_404" in info.value.reason
        assert graph_snapshot(graph) == before

    @pytest.mark.slow
    def test_huge_strings_are_kept_whole(self) -> None:
        """A multi-megabyte message and argument string are kept whole."""
        big = "x" * 3_000_000
        messages = [
            {"role": "user", "content": big},
            {"role": "assistant", "tool_calls": [_call("c", "f", json.dumps({"blob": big}))]},
        ]
        events = _load(messages)
        assert events[0].content[0].text == big
        assert events[1].tool_calls[0].arguments == json.dumps({"blob": big})

    def test_deeply_nested_content_is_refused(self) -> None:
        """Deeply nested junk in `content` is refused at the first part, without recursing."""
        junk: Any = "leaf"
        for _ in range(100_000):
            junk = [junk]
        with pytest.raises(IngestError) as info:
            _load([{"role": "user", "content": junk}])
        assert info.value.location.path == "[0].content[0]"

    def test_deeply_nested_arguments_are_refused(self) -> None:
        """Arguments given as an object too deep to encode are refused at the arguments."""
        junk: Any = {}
        for _ in range(100_000):
            junk = {"a": junk}
        call = {"id": "c", "function": {"name": "f", "arguments": junk}}
        with pytest.raises(IngestError) as info:
            _load([{"role": "assistant", "tool_calls": [call]}])
        assert info.value.location.path == "[0].tool_calls[0].function.arguments"


ANTHROPIC = {
    "model": "claude",
    "system": "be brief",
    "messages": [
        {"role": "user", "content": "hi"},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "t", "name": "f", "input": {}}],
        },
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "ok"}]},
    ],
}
ANTHROPIC_NO_SYSTEM = {"messages": ANTHROPIC["messages"]}
GEMINI = {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}
GEMINI_LIST = [{"role": "model", "parts": [{"text": "hi"}]}]
TAU_BENCH = [{"task_id": 1, "traj": CHAT, "info": {}}]
OPENHANDS = {"messages": CHAT, "response": {"choices": [{"message": {"role": "assistant"}}]}}
MINI_SWE = {
    "messages": [*CHAT, {"role": "exit", "content": ""}],
    "trajectory_format": "mini-swe-agent-1.1",
}
SWE_AGENT = {"history": CHAT}


class TestOpenAISniff:
    @pytest.mark.parametrize(
        "payload", [CHAT, {"messages": CHAT}, {"model": "gpt-4o", "messages": CHAT, "tools": []}]
    )
    def test_claims_chat_payloads(self, payload: Any) -> None:
        """A bare message list and a request body are recognized."""
        assert openai_importer.sniff(RawInput(payload))

    @pytest.mark.parametrize(
        "payload",
        [
            ANTHROPIC,
            ANTHROPIC_NO_SYSTEM,
            GEMINI,
            GEMINI_LIST,
            TAU_BENCH,
            OPENHANDS,
            MINI_SWE,
            SWE_AGENT,
        ],
        ids=[
            "anthropic",
            "anthropic-blocks",
            "gemini",
            "gemini-list",
            "tau",
            "openhands",
            "mini",
            "swe",
        ],
    )
    def test_does_not_claim_other_formats(self, payload: Any) -> None:
        """Payloads of the other formats are not claimed."""
        assert not openai_importer.sniff(RawInput(payload))

    @pytest.mark.parametrize(
        "payload",
        [
            None,
            5,
            "text",
            [],
            {},
            [1, 2],
            [[[]]],
            {"messages": 3},
            [{"role": ["user"], "content": "x"}],
        ],
    )
    def test_never_raises_on_junk(self, payload: Any) -> None:
        """Junk is simply not claimed."""
        assert not openai_importer.sniff(RawInput(payload))

    def test_unhashable_junk_does_not_raise(self) -> None:
        """A list or object where a role or a part type should be does not make sniffing raise."""
        payload = [{"role": "user", "content": [{"type": {"a": 1}}, {"type": ["b"]}]}]
        assert isinstance(openai_importer.sniff(RawInput(payload)), bool)

    @pytest.mark.slow
    def test_claims_no_shared_trace(self, shared_trace: Path) -> None:
        """None of the shared agent traces is taken for a bare OpenAI payload."""
        assert not openai_importer.sniff(read_raw(shared_trace))

    def test_detect_format_picks_openai(self) -> None:
        """Auto-detection picks `openai` for a chat list with tool calls."""
        assert detect_format(CHAT) == "openai"
        assert detect_format({"model": "gpt-4o", "messages": CHAT}) == "openai"

    def test_detect_format_does_not_pick_openai_for_others(self) -> None:
        """Auto-detection does not pick `openai` for Anthropic or Gemini payloads."""
        for payload in (ANTHROPIC, GEMINI):
            with contextlib.suppress(IngestError):
                assert detect_format(payload) != "openai"
