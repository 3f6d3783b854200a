"""Gemini CLI chat recordings (`session-*.json`): detection, rounds, results, strays.

The quirks are those of ../shared/traces/gemini_cli/codemie-ai_codemie-code (README): one
`gemini` message holding the calls of several rounds, `tokens` as usage, a call's
`status`, and `result` as the `functionResponse` parts sent back.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from context_graph.errors import IngestError
from context_graph.graph.content import ImagePart, TextPart, ThinkingPart
from context_graph.graph.context_graph import ContextGraph
from context_graph.graph.events import AssistantTurn, Note, ToolResult, UserTurn
from context_graph.importers import detect_format, gemini_cli, load_events, load_sessions
from context_graph.importers._base import RawInput, read_raw
from context_graph.testing import graph_snapshot

TRACES = Path(__file__).resolve().parents[3].parent / "shared" / "traces"
FAMILY = TRACES / "gemini_cli" / "codemie-ai_codemie-code"
RECORDING = FAMILY / "session-2026-01-16T11-01-file-ops-37b7abef.json"
PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJ"


def _call(
    call_id: str, name: str = "read_file", *, at: str = "t1", status: str = "success", **extra: Any
) -> dict[str, Any]:
    response = extra.pop("response", {"output": f"out of {call_id}"})
    record: dict[str, Any] = {
        "id": call_id,
        "name": name,
        "args": {"file_path": call_id},
        "result": [{"functionResponse": {"id": call_id, "name": name, "response": response}}],
        "status": status,
        "timestamp": at,
    }
    record.update(extra)
    return record


def _recording(*messages: dict[str, Any]) -> dict[str, Any]:
    return {"sessionId": "s-1", "projectHash": "p", "startTime": "t0", "messages": list(messages)}


def _user(text: str = "hi") -> dict[str, Any]:
    return {"id": "u", "timestamp": "t0", "type": "user", "content": text}


def _gemini(content: str = "", *calls: dict[str, Any], **extra: Any) -> dict[str, Any]:
    message = {"id": "g", "timestamp": "t1", "type": "gemini", "content": content}
    message.update(extra)
    if calls:
        message["toolCalls"] = list(calls)
    return message


def _session(data: Any, *, strict: bool = True) -> Any:
    (session,) = gemini_cli.to_sessions(RawInput(data, strict=strict))
    return session


def _text(event: Any) -> str:
    return "".join(part.text for part in event.content if isinstance(part, TextPart))


class TestDetection:
    def test_a_recording_is_detected(self) -> None:
        """A `sessionId` with typed messages is a Gemini CLI recording."""
        assert detect_format(_recording(_user())) == "gemini_cli"

    def test_an_empty_recording_is_detected(self) -> None:
        """A recording with no messages yet is claimed, and has no events."""
        assert detect_format(_recording()) == "gemini_cli"
        assert _session(_recording()).events == []

    @pytest.mark.parametrize(
        "data",
        [
            {"sessionId": "s", "messages": [{"role": "user", "content": "hi"}]},
            {"messages": [{"type": "user", "content": "hi"}]},
            {"sessionId": 3, "messages": []},
            {"sessionId": "s", "messages": {}},
            [{"sessionId": "s", "messages": []}],
            None,
        ],
        ids=["roles", "no-session-id", "id-not-str", "messages-object", "list", "null"],
    )
    def test_other_shapes_are_not_claimed(self, data: Any) -> None:
        """Chat message lists and odd values are not recordings (and sniffing never raises)."""
        assert gemini_cli.sniff(RawInput(data)) is False

    def test_claims_no_other_trace(self, other_trace: Path) -> None:
        """No shared trace outside its folder is taken for a recording."""
        assert not gemini_cli.sniff(read_raw(other_trace))


class TestConversion:
    def test_user_and_text_reply(self) -> None:
        """A user message and a reply become a user turn and an assistant turn with meta."""
        tokens = {"input": 10, "output": 2, "cached": 0, "thoughts": 3, "tool": 0, "total": 15}
        thought = {"subject": "Plan", "description": "say hi", "timestamp": "t1"}
        session = _session(
            _recording(
                _user(), _gemini("hello", model="gemini-3-pro", thoughts=[thought], tokens=tokens)
            )
        )
        user, turn = session.events
        assert isinstance(user, UserTurn) and _text(user) == "hi" and user.timestamp == "t0"
        assert isinstance(turn, AssistantTurn)
        assert turn.content == (
            ThinkingPart(thinking="**Plan** say hi", provider="gemini"),
            TextPart(text="hello"),
        )
        assert (turn.model, dict(turn.meta)) == (
            "gemini-3-pro",
            {"message_id": "g", "usage": tokens},
        )
        assert (session.name, session.meta) == (
            "s-1",
            {
                "format": "gemini_cli",
                "session_id": "s-1",
                "project_hash": "p",
                "start_time": "t0",
                "model": "gemini-3-pro",
            },
        )

    def test_calls_of_one_message_split_into_rounds_by_timestamp(self) -> None:
        """Calls recorded together are one round; each round is a turn followed by its results."""
        message = _gemini(
            "",
            _call("a", at="t1"),
            _call("b", at="t1"),
            _call("c", at="t2"),
            tokens={"input": 1, "output": 1, "total": 2},
        )
        events = _session(_recording(_user(), message)).events
        assert [
            (e.type, [c.id for c in e.tool_calls] if isinstance(e, AssistantTurn) else e.call_id)
            for e in events[1:]
        ] == [
            ("assistant", ["a", "b"]),
            ("tool_result", "a"),
            ("tool_result", "b"),
            ("assistant", ["c"]),
            ("tool_result", "c"),
        ]
        assert "usage" in events[1].meta and "usage" not in events[4].meta
        graph = ContextGraph()
        graph.ingest(events)
        assert graph.unanswered_calls() == ()

    @pytest.mark.parametrize(
        ("status", "response", "is_error"),
        [
            ("success", {"output": "ok"}, False),
            ("error", {"output": "failed"}, True),
            ("cancelled", {"output": "[Operation Cancelled]"}, True),
            ("success", {"error": "boom"}, True),
        ],
    )
    def test_status_and_error_mark_the_result(
        self, status: str, response: dict[str, Any], is_error: bool
    ) -> None:
        """`error` and `cancelled` calls, and an `error` response, give an error result."""
        call = _call("a", status=status, response=response)
        result = _session(_recording(_user(), _gemini("", call))).events[-1]
        assert isinstance(result, ToolResult)
        assert (result.is_error, dict(result.meta)) == (is_error, {"status": status})

    def test_a_result_keeps_its_extra_parts(self) -> None:
        """Parts sent back besides the response (an image read) stay in the result."""
        call = _call("a")
        call["result"].append({"inlineData": {"mimeType": "image/png", "data": PNG}})
        result = _session(_recording(_user(), _gemini("", call))).events[-1]
        assert result.content == (
            TextPart(text="out of a"),
            ImagePart(media_type="image/png", data=PNG),
        )

    def test_a_call_without_a_result_stays_open(self) -> None:
        """A call cut off while running (no `result`) is an unanswered call."""
        call = {**_call("a", status="executing"), "result": None}
        graph = ContextGraph()
        graph.ingest(_session(_recording(_user(), _gemini("", call))).events)
        assert len(graph.unanswered_calls()) == 1

    def test_cli_ui_messages_are_skipped_and_counted(self) -> None:
        """`info`, `error` and `warning` lines are not sent to the model: skipped, counted."""
        info = {"id": "i", "timestamp": "t", "type": "info", "content": "resumed"}
        warning = {**info, "type": "warning"}
        session = _session(_recording(info, _user(), warning, info))
        assert [e.type for e in session.events] == ["user"]
        assert session.meta["skipped_messages"] == {"info": 2, "warning": 1}

    def test_content_as_parts(self) -> None:
        """A newer recording's `content` may be parts instead of a string."""
        message = {**_user(), "content": [{"text": "look"}, {"text": "here"}]}
        (user,) = _session(_recording(message)).events
        assert user.content == (TextPart(text="look"), TextPart(text="here"))


class TestStrays:
    def test_unknown_message_type_is_refused_strictly(self) -> None:
        """A message type the format does not have is refused at its `type`."""
        with pytest.raises(IngestError, match="unknown message type 'tool'") as caught:
            _session(_recording({"id": "x", "type": "tool", "content": "x"}))
        assert caught.value.location.path == "messages[0].type"

    def test_unknown_message_type_is_a_note_leniently(self) -> None:
        """Lenient, the message is a note saying what it was, and the session reports it."""
        session = _session(
            _recording({"id": "x", "type": "tool", "content": "x"}, _user()), strict=False
        )
        note = session.events[0]
        assert isinstance(note, Note) and _text(note).startswith(
            "a message of unknown type 'tool' was recorded; it held:"
        )
        assert [(s.location.index, s.location.path) for s in session.strays] == [
            (0, "messages[0].type")
        ]

    def test_a_response_recorded_under_another_call(self) -> None:
        """A response naming another call is refused strictly and a note leniently."""
        call = _call("a")
        call["result"][0]["functionResponse"]["id"] = "zzz"
        data = _recording(_user(), _gemini("", call))
        with pytest.raises(IngestError, match="recorded under the call `read_file`") as caught:
            _session(data)
        assert caught.value.location.path == "messages[1].toolCalls[0].result[0].functionResponse"
        session = _session(data, strict=False)
        assert [e.type for e in session.events] == ["user", "assistant", "note"]
        assert "(id `zzz`) was recorded under the call" in _text(session.events[2])
        assert len(session.strays) == 1


def _hostile_cases() -> list[tuple[str, Any, int | None, str, str]]:
    """(id, recording, message index, JSON path, words in the reason)."""
    ok = _call("a")
    return [
        ("not-object", [1], 0, "", "must be an object"),  # a list is a log: its line 0
        ("session-id", {"sessionId": 1, "messages": []}, None, "sessionId", "must be a string"),
        ("messages", {"sessionId": "s", "messages": 1}, None, "messages", "must be an array"),
        ("message", _recording(3), 0, "messages[0]", "must be an object"),
        ("content", _recording({**_user(), "content": 5}), 0, "messages[0].content", "array"),
        ("timestamp", _recording({**_user(), "timestamp": 5}), 0, "messages[0].timestamp", "str"),
        (
            "tool-calls",
            _recording(_gemini("", toolCalls={})),
            0,
            "messages[0].toolCalls",
            "must be an array",
        ),
        (
            "call-id",
            _recording(_gemini("", {**ok, "id": 7})),
            0,
            "messages[0].toolCalls[0].id",
            "str",
        ),
        (
            "call-name",
            _recording(_gemini("", {**ok, "name": ""})),
            0,
            "messages[0].toolCalls[0].name",
            "must not be empty",
        ),
        (
            "args",
            _recording(_gemini("", {**ok, "args": [1]})),
            0,
            "messages[0].toolCalls[0].args",
            "must be an object",
        ),
        (
            "result",
            _recording(_gemini("", {**ok, "result": 4})),
            0,
            "messages[0].toolCalls[0].result",
            "must be an array",
        ),
        (
            "response",
            _recording(
                _gemini(
                    "",
                    {**ok, "result": [{"functionResponse": {"name": "read_file", "response": 1}}]},
                )
            ),
            0,
            "messages[0].toolCalls[0].result[0].functionResponse.response",
            "must be an object",
        ),
        (
            "tokens",
            _recording(_gemini("x", tokens={"input": -1})),
            0,
            "messages[0].tokens.input",
            "whole number",
        ),
        (
            "thoughts",
            _recording(_gemini("x", thoughts=[{"subject": 1}])),
            0,
            "messages[0].thoughts[0].subject",
            "must be a string",
        ),
    ]


HOSTILE = _hostile_cases()

_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=6),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(
            st.sampled_from(
                [
                    "type",
                    "content",
                    "toolCalls",
                    "id",
                    "name",
                    "args",
                    "result",
                    "status",
                    "tokens",
                    "thoughts",
                    "functionResponse",
                    "response",
                    "timestamp",
                    "text",
                ]
            ),
            inner,
            max_size=4,
        )
    ),
    max_leaves=20,
)


class TestMalformedInput:
    @pytest.mark.parametrize(
        ("data", "index", "path", "reason"),
        [case[1:] for case in HOSTILE],
        ids=[case[0] for case in HOSTILE],
    )
    def test_error_names_file_message_and_path(
        self,
        write_json: Callable[..., Path],
        graph: ContextGraph,
        data: Any,
        index: int | None,
        path: str,
        reason: str,
    ) -> None:
        """Bad input raises IngestError at its exact place in both modes; the graph is unchanged."""
        file = write_json(data)
        before = graph_snapshot(graph)
        for strict in (True, False):
            with pytest.raises(IngestError) as caught:
                graph.ingest(load_events(file, format="gemini_cli", strict=strict))
            where = caught.value.location
            assert (where.file, where.index, where.path or "") == (str(file), index, path)
            assert reason in caught.value.reason
        assert graph_snapshot(graph) == before

    @settings(max_examples=150)
    @given(messages=st.lists(_JSON, max_size=4), strict=st.booleans())
    def test_any_json_gives_events_or_a_typed_error(
        self, messages: list[Any], strict: bool
    ) -> None:
        """Arbitrary messages are read (and ingest) or are refused with IngestError."""
        try:
            session = _session({"sessionId": "s", "messages": messages}, strict=strict)
        except IngestError:
            return
        ContextGraph().ingest(session.events)
        assert not strict or not session.strays


@pytest.mark.skipif(not RECORDING.is_file(), reason="shared traces not present")
class TestSharedRecording:
    def test_the_recording_reads_strictly(self) -> None:
        """The shared recording ingests with every call answered and no stray."""
        (session,) = load_sessions(RECORDING)
        assert (session.meta["format"], session.strays) == ("gemini_cli", [])
        graph = ContextGraph()
        graph.ingest(session.events)
        assert graph.unanswered_calls() == ()

    def test_the_multi_round_message_splits_in_three(self) -> None:
        """Message 3 holds nine calls of three rounds (2, 4 and 3 calls), in order."""
        events = load_events(RECORDING)
        rounds = [
            len(e.tool_calls)
            for e in events
            if isinstance(e, AssistantTurn) and e.source is not None and e.source.index == 3
        ]
        assert rounds == [2, 4, 3]
        usage = [e.meta.get("usage") for e in events if isinstance(e, AssistantTurn)]
        assert usage[0] == {
            "input": 4749,
            "output": 292,
            "cached": 0,
            "thoughts": 240,
            "tool": 0,
            "total": 5281,
        }
