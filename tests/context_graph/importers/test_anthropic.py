from __future__ import annotations

import contextlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from context_graph.errors import IngestError
from context_graph.formats.anthropic import read as anthropic
from context_graph.graph.content import (
    DocumentPart,
    ImagePart,
    RedactedThinkingPart,
    TextPart,
    ThinkingPart,
)
from context_graph.graph.context_graph import ContextGraph
from context_graph.graph.events import AssistantTurn, SystemPrompt, ToolResult, UserTurn
from context_graph.graph.nodes import AssistantNode, ToolCallNode, ToolResultNode, UserNode
from context_graph.importers import RawInput, detect_format, load_sessions
from context_graph.testing import graph_snapshot

PNG = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9"
    "awAAAABJRU5ErkJggg=="
)
PDF = "JVBERi0xLjQKJcfsj6IKMSAwIG9iago8PC9UeXBlL0NhdGFsb2c+PgplbmRvYmoK"
SIGNATURE = "EsMCCkYICxgCKkDuNR00D0SPshrOAOM1rE2RNrkHn0+/aXuAp7lW1sP8HECP==\u00e9"


def _load(payload: Any) -> list[Any]:
    (session,) = load_sessions(RawInput(payload), format="anthropic")
    return list(session.events)


def _use(call_id: str, name: str = "Bash", **arguments: Any) -> dict[str, Any]:
    return {"type": "tool_use", "id": call_id, "name": name, "input": arguments}


def _result(call_id: str, content: Any = "ok", **extra: Any) -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": call_id, "content": content, **extra}


def _image(data: str = PNG) -> dict[str, Any]:
    return {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": data}}


def _conversation() -> dict[str, Any]:
    """A request body that uses every block type once."""
    return {
        "model": "claude-sonnet-4-5",
        "system": [{"type": "text", "text": "You are terse."}],
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "What is in it?"}, _image()]},
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": "Look first.", "signature": SIGNATURE},
                    {"type": "redacted_thinking", "data": "opaque=="},
                    {"type": "text", "text": "Let me look."},
                    _use("toolu_1", "Read", file_path="a.py"),
                    _use("toolu_2", "Bash", command="ls", timeout=5),
                ],
            },
            {
                "role": "user",
                "content": [
                    _result("toolu_1", [{"type": "text", "text": "print(1)"}]),
                    _result("toolu_2", "ls: denied", is_error=True),
                    {"type": "text", "text": "Also this:"},
                    {
                        "type": "document",
                        "title": "spec",
                        "source": {"type": "base64", "media_type": "application/pdf", "data": PDF},
                    },
                ],
            },
            {"role": "assistant", "content": "Done."},
        ],
    }


class TestSniff:
    def test_request_body_with_system_is_claimed(self) -> None:
        """A body with a top-level `system` is Anthropic even with plain-text messages."""
        payload = {"system": "Be brief.", "messages": [{"role": "user", "content": "hi"}]}
        assert anthropic.sniff(RawInput(payload))

    def test_bare_list_with_anthropic_blocks_is_claimed(self) -> None:
        """A message list using tool_use blocks is Anthropic."""
        messages = _conversation()["messages"]
        assert anthropic.sniff(RawInput(messages))

    def test_plain_text_list_is_left_to_openai(self) -> None:
        """A list of string messages carries nothing Anthropic-specific and is not claimed."""
        messages = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hey"}]
        assert not anthropic.sniff(RawInput(messages))

    def test_openai_list_is_not_claimed(self) -> None:
        """OpenAI lists with a tool role or `tool_calls` are not claimed."""
        messages = [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "tool_calls": [{"id": "c1", "type": "function"}]},
            {"role": "tool", "tool_call_id": "c1", "content": "ok"},
        ]
        assert not anthropic.sniff(RawInput(messages))

    def test_gemini_contents_are_not_claimed(self) -> None:
        """A Gemini body with `contents` and `parts` is not claimed."""
        payload = {"system": "x", "contents": [{"role": "user", "parts": [{"text": "hi"}]}]}
        assert not anthropic.sniff(RawInput(payload))

    def test_claude_code_records_are_not_claimed(self) -> None:
        """Claude Code records (type, uuid, sessionId) are not messages."""
        record = {"type": "user", "uuid": "u1", "sessionId": "s", "message": {"role": "user"}}
        assert not anthropic.sniff(RawInput([record]))

    @pytest.mark.parametrize(
        "data", [None, 3, "text", [], [1, 2], {"messages": 5}, {"system": 1}, [{"role": None}]]
    )
    def test_garbage_is_refused_without_raising(self, data: Any) -> None:
        """Input of any shape gets an answer, never an exception."""
        assert not anthropic.sniff(RawInput(data))

    def test_detect_format_picks_anthropic(self) -> None:
        """Detection names Anthropic for a request body and for a bare list with its blocks."""
        assert detect_format(_conversation()) == "anthropic"
        assert detect_format(_conversation()["messages"]) == "anthropic"

    def test_detect_format_does_not_pick_anthropic_for_openai(self) -> None:
        """Detection of an OpenAI message list names neither Anthropic nor Claude Code."""
        messages = [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "hi"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "ok"},
        ]
        with contextlib.suppress(IngestError):
            assert detect_format(messages) not in ("anthropic", "claude_code")


class TestBlocks:
    def test_system_blocks_become_one_system_prompt(self) -> None:
        """A list of system text blocks becomes one pinned system prompt."""
        first = _load(_conversation())[0]
        assert isinstance(first, SystemPrompt)
        assert first.content == (TextPart(text="You are terse."),)
        assert first.pinned

    def test_string_system_prompt(self) -> None:
        """A string `system` becomes a system prompt; an empty one adds nothing."""
        events = _load({"system": "Be brief.", "messages": []})
        assert [e.content for e in events] == [(TextPart(text="Be brief."),)]
        assert _load({"system": "", "messages": []}) == []

    def test_user_text_and_image(self) -> None:
        """Text and base64 image blocks of a user message become parts of one user turn."""
        turn = _load(_conversation())[1]
        assert isinstance(turn, UserTurn)
        assert turn.content == (
            TextPart(text="What is in it?"),
            ImagePart(media_type="image/png", data=PNG),
        )

    def test_image_by_url(self) -> None:
        """An image given by URL keeps its address."""
        block = {"type": "image", "source": {"type": "url", "url": "https://x.test/a.png"}}
        (turn,) = _load({"system": "s", "messages": [{"role": "user", "content": [block]}]})[1:]
        assert turn.content == (ImagePart(url="https://x.test/a.png"),)

    def test_assistant_blocks_keep_their_order(self) -> None:
        """Thinking, redacted thinking and text stay in order; tool_use blocks become calls."""
        turn = _load(_conversation())[2]
        assert isinstance(turn, AssistantTurn)
        assert turn.content == (
            ThinkingPart(thinking="Look first.", signature=SIGNATURE),
            RedactedThinkingPart(data="opaque=="),
            TextPart(text="Let me look."),
        )
        assert [(c.id, c.name) for c in turn.tool_calls] == [
            ("toolu_1", "Read"),
            ("toolu_2", "Bash"),
        ]

    def test_tool_use_input_becomes_json_arguments(self) -> None:
        """A call's arguments are the JSON text of its `input` object."""
        turn = _load(_conversation())[2]
        assert [json.loads(c.arguments) for c in turn.tool_calls] == [
            {"file_path": "a.py"},
            {"command": "ls", "timeout": 5},
        ]

    def test_thinking_signature_survives_byte_for_byte(self, graph: ContextGraph) -> None:
        """The signature of a thinking block reaches the graph unchanged."""
        graph.ingest(_load(_conversation()))
        (node_id,) = graph.by_kind("assistant")[:1]
        part = graph[node_id].content[0]
        assert isinstance(part, ThinkingPart)
        assert part.signature == SIGNATURE
        assert part.signature.encode() == SIGNATURE.encode()

    def test_tool_result_string_list_and_error(self) -> None:
        """Result content may be a string or blocks; `is_error` is kept."""
        results = [e for e in _load(_conversation()) if isinstance(e, ToolResult)]
        assert [(r.call_id, r.content, r.is_error) for r in results] == [
            ("toolu_1", (TextPart(text="print(1)"),), False),
            ("toolu_2", (TextPart(text="ls: denied"),), True),
        ]

    def test_tool_result_with_image_and_no_content(self) -> None:
        """An image inside a result becomes an image part; a result without content is empty."""
        payload = {
            "system": "s",
            "messages": [
                {"role": "assistant", "content": [_use("t1"), _use("t2")]},
                {
                    "role": "user",
                    "content": [
                        _result("t1", [_image()]),
                        {"type": "tool_result", "tool_use_id": "t2"},
                    ],
                },
            ],
        }
        first, second = _load(payload)[2:]
        assert first.content == (ImagePart(media_type="image/png", data=PNG),)
        assert second.content == ()

    def test_document_block(self) -> None:
        """A document block keeps its media type, data and title."""
        turn = _load(_conversation())[-2]
        assert isinstance(turn, UserTurn)
        assert turn.content[-1] == DocumentPart(
            media_type="application/pdf", data=PDF, title="spec"
        )

    def test_session_meta_names_format_and_model(self) -> None:
        """The session records its format and the request's model."""
        (session,) = load_sessions(RawInput(_conversation()), format="anthropic")
        assert session.meta == {"format": "anthropic", "model": "claude-sonnet-4-5"}


class TestMixedUserMessage:
    def test_results_come_before_the_user_turn(self) -> None:
        """A user message with results and text gives the results first, then one user turn."""
        events = _load(_conversation())
        kinds = [e.type for e in events]
        assert kinds == [
            "system",
            "user",
            "assistant",
            "tool_result",
            "tool_result",
            "user",
            "assistant",
        ]
        turn = events[5]
        assert turn.content[0] == TextPart(text="Also this:")

    def test_results_only_message_has_no_user_turn(self) -> None:
        """A user message holding only results adds no empty user turn."""
        payload = [
            {"role": "assistant", "content": [_use("t1")]},
            {"role": "user", "content": [_result("t1")]},
        ]
        assert [e.type for e in _load(payload)] == ["assistant", "tool_result"]

    def test_graph_links_results_to_calls(self, graph: ContextGraph) -> None:
        """In the graph each result answers its call and the user turn follows the results."""
        ids = graph.ingest(_load(_conversation()))
        nodes = [graph[i] for i in ids]
        calls = [n for n in nodes if isinstance(n, ToolCallNode)]
        results = [n for n in nodes if isinstance(n, ToolResultNode)]
        assert [graph.answer_to(c.id) for c in calls] == results
        assert [r.is_error for r in results] == [False, True]
        users = [n for n in nodes if isinstance(n, UserNode)]
        assert nodes.index(users[-1]) > nodes.index(results[-1])
        assert graph.unanswered_calls() == ()
        assert [n.kind for n in nodes if isinstance(n, AssistantNode)] == ["assistant"] * 2

    def test_events_name_their_message(self) -> None:
        """Each event carries the index of the message it came from."""
        events = _load(_conversation())
        assert [e.source.index for e in events] == [None, 0, 1, 2, 2, 2, 3]
        assert events[3].source.path == "messages[2].content[0]"


def _body(*messages: Any) -> dict[str, Any]:
    return {"system": "s", "messages": list(messages)}


_CALL = {"role": "assistant", "content": [_use("t1")]}

MALFORMED: list[tuple[str, Any, int | None, str]] = [
    ("messages not a list", {"system": "s", "messages": {"role": "user"}}, None, "messages"),
    ("message not an object", _body({"role": "user", "content": "a"}, "hello"), 1, "messages[1]"),
    ("system role in messages", _body({"role": "system", "content": "x"}), 0, "messages[0].role"),
    ("missing role", _body({"content": "x"}), 0, "messages[0].role"),
    ("missing content", _body({"role": "user"}), 0, "messages[0].content"),
    ("content a number", _body({"role": "user", "content": 7}), 0, "messages[0].content"),
    (
        "block not an object",
        _body({"role": "user", "content": ["hi"]}),
        0,
        "messages[0].content[0]",
    ),
    (
        "unknown block type",
        _body({"role": "user", "content": [{"type": "video", "url": "x"}]}),
        0,
        "messages[0].content[0].type",
    ),
    (
        "text not a string",
        _body({"role": "user", "content": [{"type": "text", "text": 5}]}),
        0,
        "messages[0].content[0]",
    ),
    (
        "tool_use without id",
        _body({"role": "assistant", "content": [{"type": "tool_use", "name": "f", "input": {}}]}),
        0,
        "messages[0].content[0].id",
    ),
    (
        "tool_use with empty name",
        _body(
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "t", "name": "", "input": {}}],
            }
        ),
        0,
        "messages[0].content[0].name",
    ),
    (
        "tool_use input a string",
        _body(
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "t", "name": "f", "input": "{}"}],
            }
        ),
        0,
        "messages[0].content[0].input",
    ),
    (
        "orphan tool_result",
        _body({"role": "user", "content": [_result("never_called")]}),
        0,
        "messages[0].content[0].tool_use_id",
    ),
    (
        "tool_result id a number",
        _body(_CALL, {"role": "user", "content": [_result(1)]}),
        1,
        "messages[1].content[0].tool_use_id",
    ),
    (
        "is_error a string",
        _body(_CALL, {"role": "user", "content": [_result("t1", is_error="yes")]}),
        1,
        "messages[1].content[0].is_error",
    ),
    (
        "tool_use inside a result",
        _body(_CALL, {"role": "user", "content": [_result("t1", [_use("t2")])]}),
        1,
        "messages[1].content[0].content[0].type",
    ),
    (
        "tool_result in an assistant message",
        _body(_CALL, {"role": "assistant", "content": [_result("t1")]}),
        1,
        "messages[1].content[0].type",
    ),
    (
        "thinking in a user message",
        _body({"role": "user", "content": [{"type": "thinking", "thinking": "x"}]}),
        0,
        "messages[0].content[0].type",
    ),
    (
        "bad base64",
        _body({"role": "user", "content": [_image("%%%not base64%%%")]}),
        0,
        "messages[0].content[0]",
    ),
    (
        "image source a string",
        _body({"role": "user", "content": [{"type": "image", "source": "a.png"}]}),
        0,
        "messages[0].content[0]",
    ),
    (
        "media type a number",
        _body(
            {
                "role": "user",
                "content": [
                    {"type": "image", "source": {"type": "base64", "media_type": 5, "data": PNG}}
                ],
            }
        ),
        0,
        "messages[0].content[0]",
    ),
    (
        "repeated tool_use id",
        _body({"role": "assistant", "content": [_use("t1"), _use("t1")]}),
        0,
        "messages[0].content[1].id",
    ),
    (
        "system block of another type",
        {"system": [{"type": "image"}], "messages": []},
        None,
        "system[0].type",
    ),
]


class TestMalformed:
    @pytest.mark.parametrize(
        ("payload", "index", "path"),
        [case[1:] for case in MALFORMED],
        ids=[case[0] for case in MALFORMED],
    )
    def test_error_names_message_and_path(self, payload: Any, index: int | None, path: str) -> None:
        """Malformed input raises `IngestError` naming the message index and JSON path."""
        with pytest.raises(IngestError) as info:
            load_sessions(RawInput(payload), format="anthropic")
        assert info.value.location.index == index
        assert info.value.location.path == path

    def test_error_names_the_file(self, write_json: Callable[..., Path]) -> None:
        """Read from a file, the error names the file too."""
        path = write_json(_body({"role": "user", "content": [_result("x")]}), "request.json")
        with pytest.raises(IngestError) as info:
            load_sessions(path, format="anthropic")
        assert info.value.location.file == str(path)
        assert str(path) in str(info.value)
        assert "message 0" in str(info.value)

    def test_bare_list_paths_have_no_prefix(self) -> None:
        """In a bare message list the path starts at the message's index."""
        with pytest.raises(IngestError) as info:
            load_sessions(
                RawInput([{"role": "user", "content": [_result("x")]}]), format="anthropic"
            )
        assert info.value.location.path == "[0].content[0].tool_use_id"

    def test_payload_of_the_wrong_type(self) -> None:
        """A payload that is neither an object nor a list is refused."""
        with pytest.raises(IngestError, match="must be an array"):
            load_sessions(RawInput("hello"), format="anthropic")

    def test_invalid_json_names_the_line(self, tmp_path: Path) -> None:
        """A syntax error in the file names its line."""
        path = tmp_path / "request.json"
        path.write_text('{"system": "s",\n "messages": [\n  {"role": "user",,}\n]}', "utf-8")
        with pytest.raises(IngestError) as info:
            load_sessions(path, format="anthropic")
        assert info.value.location.line == 3

    def test_non_utf8_bytes_name_the_line(self, tmp_path: Path) -> None:
        """Bytes that are not UTF-8 are refused with their line."""
        path = tmp_path / "request.json"
        path.write_bytes(b'{"system": "s",\n "messages": [{"role": "user", "content": "\xff"}]}')
        with pytest.raises(IngestError) as info:
            load_sessions(path, format="anthropic")
        assert info.value.location.line == 2


class TestAtomicIngest:
    def test_second_result_for_one_call_leaves_graph_unchanged(self, graph: ContextGraph) -> None:
        """Two results for one call fail in the graph, naming the message; nothing is added."""
        payload = _body(
            {"role": "user", "content": "go"},
            _CALL,
            {"role": "user", "content": [_result("t1")]},
            {"role": "user", "content": [_result("t1", "again")]},
        )
        events = _load(payload)
        graph.ingest(_load(_body({"role": "user", "content": "earlier"})))
        before = graph_snapshot(graph)
        with pytest.raises(IngestError) as info:
            graph.ingest(events)
        assert info.value.location.index == 3
        assert info.value.location.path == "messages[3].content[0]"
        assert graph_snapshot(graph) == before

    def test_answering_an_answered_call_later_leaves_graph_unchanged(
        self, graph: ContextGraph
    ) -> None:
        """A later batch that answers an already answered call fails whole; nothing is added."""
        graph.ingest(_load(_body(_CALL, {"role": "user", "content": [_result("t1")]})))
        before = graph_snapshot(graph)
        again = _body(_CALL, {"role": "user", "content": [_result("t1"), _result("t1", "more")]})
        with pytest.raises(IngestError) as info:
            graph.ingest(_load(again))
        assert info.value.location.path == "messages[1].content[1]"
        assert graph_snapshot(graph) == before

    def test_known_calls_carry_over_between_batches(self, graph: ContextGraph) -> None:
        """`messages_to_events` accepts results for calls made in an earlier batch."""
        known: set[str] = set()
        raw = RawInput([_CALL])
        first = anthropic.messages_to_events([_CALL], raw, base_path="", known_calls=known)
        second = anthropic.messages_to_events(
            [{"role": "user", "content": [_result("t1")]}], raw, base_path="", known_calls=known
        )
        graph.ingest(first)
        graph.ingest(second)
        assert known == {"t1"}
        assert graph.unanswered_calls() == ()
