"""Cline CLI session files (`~/.cline/data/sessions/<id>/<id>.messages.json`), by hand.

Each rule of `context_graph.importers.cline` on records shaped as Cline 3.0 writes them
(the shapes were read off files the real CLI wrote; `test_cline_real.py` imports such
files): the wrapper of a user text read off, a tool's JSON output sent as its JSON text,
messages only shown to the user left out, and Cline's compaction beside the file applied
only while the messages it stands for are unchanged.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from context_graph.errors import IngestError
from context_graph.graph.content import TextPart
from context_graph.graph.events import (
    AssistantTurn,
    Compaction,
    Note,
    SystemPrompt,
    ToolResult,
    UserTurn,
)
from context_graph.importers import cline, detect_format, load_sessions, read_raw
from context_graph.importers.cline import _source_hash, compaction_path, info_path, user_text

SESSION = "1796642126367_efpob"


def _user(text: str, ident: str = "u1", **extra: Any) -> dict[str, Any]:
    return {
        "id": ident,
        "role": "user",
        "content": [{"type": "text", "text": text}],
        "ts": 1796642126504,
        **extra,
    }


def _call(ident: str, call: str, command: str, text: str = "") -> dict[str, Any]:
    content: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
    content.append(
        {"type": "tool_use", "id": call, "name": "run_commands", "input": {"commands": [command]}}
    )
    return {
        "id": ident,
        "role": "assistant",
        "content": content,
        "ts": 1796642127552,
        "modelInfo": {"id": "gpt-5.5", "provider": "openai-compatible"},
        "metrics": {
            "inputTokens": 4630,
            "outputTokens": 5,
            "cacheReadTokens": 0,
            "cacheWriteTokens": 0,
        },
    }


def _result(ident: str, call: str, output: Any, **extra: Any) -> dict[str, Any]:
    block = {
        "type": "tool_result",
        "tool_use_id": call,
        "name": "run_commands",
        "content": output,
        **extra,
    }
    return {"id": ident, "role": "user", "content": [block], "ts": 1796642127580}


def _answer(ident: str, text: str) -> dict[str, Any]:
    return {
        "id": ident,
        "role": "assistant",
        "content": [{"type": "text", "text": text}],
        "ts": 1796642127835,
    }


def _messages() -> list[dict[str, Any]]:
    return [
        _user('<user_input mode="act">Count with seq.</user_input>'),
        _call("a1", "call_1", "seq 1 3", "Step 1."),
        _result("r1", "call_1", [{"query": "seq 1 3", "result": "1\n2\n3\n"}]),
        _call("a2", "call_2", "false"),
        _result(
            "r2",
            "call_2",
            [{"query": "false", "result": "exit 1", "error": "Command failed"}],
            is_error=True,
        ),
        _answer("a3", "All done: «1 2 3»."),
    ]


def _write(folder: Path, messages: list[dict[str, Any]], **fields: Any) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{SESSION}.messages.json"
    body = {
        "version": 1,
        "updated_at": "2026-12-07T11:15:27.857Z",
        "agent": "lead",
        "sessionId": SESSION,
        "origin": {"source": "cli", "mode": "user", "sessionId": SESSION, "version": "3.0.65"},
        "messages": messages,
        "system_prompt": "You are Cline, an AI coding agent.",
        **fields,
    }
    path.write_text(json.dumps(body))
    return path


def _compact(
    path: Path, messages: list[dict[str, Any]], count: int, kept: int, **fields: Any
) -> None:
    summary = {
        "role": "user",
        "content": [{"type": "text", "text": "Context summary:\n\nCounting; `false` exits 1."}],
        "metadata": {"kind": "compaction_summary", "displayRole": "system", "summary": "Counting"},
    }
    state = {
        "version": 1,
        "updated_at": "2026-12-07T11:42:16.160Z",
        "conversation_id": SESSION,
        "source_message_count": count,
        "source_prefix_hash": _source_hash(messages, count),
        "source_last_message_key": f"id:{messages[count - 1]['id']}",
        "messages": [summary, *messages[count - kept : count]],
        **fields,
    }
    compaction_path(path).write_text(json.dumps(state))


def _text(event: Any) -> str:
    return "".join(p.text for p in event.content if isinstance(p, TextPart))


def _load(path: Path, **options: Any) -> Any:
    (session,) = load_sessions(path, **options)
    return session


class TestMessages:
    def test_the_session_as_cline_sends_it(self, tmp_path: Path) -> None:
        path = _write(tmp_path, _messages())
        assert detect_format(read_raw(path)) == "cline"
        session = _load(path)
        kinds = [type(e) for e in session.events]
        assert kinds == [
            SystemPrompt,
            UserTurn,
            AssistantTurn,
            ToolResult,
            AssistantTurn,
            ToolResult,
            AssistantTurn,
        ]
        system, user, first, output, _, failed, last = session.events
        assert _text(system) == "You are Cline, an AI coding agent."
        assert _text(user) == "Count with seq."
        assert first.model == "gpt-5.5" and first.meta["usage"]["inputTokens"] == 4630
        assert [c.name for c in first.tool_calls] == ["run_commands"]
        # The tool's JSON output as JSON.stringify writes it: no spaces, newlines escaped.
        assert _text(output) == '[{"query":"seq 1 3","result":"1\\n2\\n3\\n"}]'
        assert failed.is_error and not output.is_error
        assert _text(last) == "All done: «1 2 3»."
        assert user.timestamp == "2026-12-07T11:15:26.504000+00:00"
        assert session.name == SESSION and session.meta["session_id"] == SESSION

    def test_typed_blocks_and_plain_text_outputs_stay_as_they_are(self, tmp_path: Path) -> None:
        messages = [
            _user("go"),
            _call("a1", "c1", "ls"),
            _result("r1", "c1", "a.txt\n"),
            _call("a2", "c2", "cat a.txt"),
            _result("r2", "c2", [{"type": "text", "text": "hello"}]),
        ]
        events = _load(_write(tmp_path, messages)).events
        assert [_text(e) for e in events if isinstance(e, ToolResult)] == ["a.txt\n", "hello"]

    def test_messages_only_shown_to_the_user_are_left_out(self, tmp_path: Path) -> None:
        messages = _messages()
        messages.insert(1, _user("Cline is thinking…", "d1", metadata={"displayOnly": True}))
        session = _load(_write(tmp_path, messages))
        assert "Cline is thinking…" not in [_text(e) for e in session.events]
        assert session.meta["display_only"] == 1

    def test_a_slash_command_is_the_command_again(self) -> None:
        assert (
            user_text('<user_command slash="compact">keep the tests</user_command>')
            == "/compact keep the tests"
        )
        assert user_text('<user_input mode="plan">Plan it.</user_input>') == "Plan it."
        assert user_text("no wrapper") == "no wrapper"


class TestCompaction:
    def test_the_summary_stands_for_the_messages_before_those_it_kept(self, tmp_path: Path) -> None:
        messages = _messages()
        path = _write(tmp_path, messages)
        _compact(path, messages, count=5, kept=2)
        session = _load(path)
        (summary,) = [e for e in session.events if isinstance(e, Compaction)]
        assert summary.origin == "cline"
        assert _text(summary) == "Context summary:\n\nCounting; `false` exits 1."
        position = session.events.index(summary)
        # Three messages (one user turn, a call and its result) before it, then the kept two.
        after = session.events[position + 1 :]
        assert [type(e) for e in after] == [AssistantTurn, ToolResult, AssistantTurn]
        assert session.meta["compaction"] == "applied: 3 messages summarized, 2 kept"

    def test_a_compaction_of_messages_changed_since_is_left_out(self, tmp_path: Path) -> None:
        messages = _messages()
        path = _write(tmp_path, messages)
        _compact(path, messages, count=5, kept=2)
        messages[2] = _result("r1", "call_1", [{"query": "seq 1 3", "result": "edited"}])
        _write(tmp_path, messages)
        session = _load(path)
        assert not any(isinstance(e, Compaction) for e in session.events)
        assert session.meta["compaction"].startswith("stale")

    def test_without_a_hash_the_last_messages_key_decides(self, tmp_path: Path) -> None:
        messages = _messages()
        path = _write(tmp_path, messages)
        _compact(path, messages, count=4, kept=0, source_prefix_hash=None)
        state = json.loads(compaction_path(path).read_text())
        del state["source_prefix_hash"]
        compaction_path(path).write_text(json.dumps(state))
        assert any(isinstance(e, Compaction) for e in _load(path).events)
        state["source_last_message_key"] = "id:someone-else"
        compaction_path(path).write_text(json.dumps(state))
        assert not any(isinstance(e, Compaction) for e in _load(path).events)

    def test_an_unreadable_compaction_file_is_said_and_left_out(self, tmp_path: Path) -> None:
        path = _write(tmp_path, _messages())
        compaction_path(path).write_text("{not json")
        session = _load(path)
        assert session.meta["compaction"].startswith("unreadable")
        compaction_path(path).write_text(json.dumps({"version": 2, "messages": []}))
        assert _load(path).meta["compaction"].startswith("not a compaction")

    @given(
        count=st.integers(min_value=1, max_value=6),
        kept=st.integers(min_value=0, max_value=3),
        changed=st.one_of(st.none(), st.integers(min_value=0, max_value=5)),
    )
    @settings(
        max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
    )
    def test_applied_exactly_while_its_messages_are_unchanged(
        self, tmp_path: Path, count: int, kept: int, changed: int | None
    ) -> None:
        kept = min(kept, count)
        messages = _messages()
        folder = tmp_path / f"{count}-{kept}-{changed}"
        path = _write(folder, messages)
        _compact(path, messages, count=count, kept=kept)
        if changed is not None:
            # A field Cline hashes (its `id` and `ts` it does not).
            messages[changed] = {**messages[changed], "metadata": {"edited": True}}
            _write(folder, messages)
        session = _load(path)
        compactions = [e for e in session.events if isinstance(e, Compaction)]
        stale = changed is not None and changed < count
        assert len(compactions) == (0 if stale else 1)
        if not stale:
            # What follows the summary is what Cline sends after it: the kept messages
            # and every message after the compaction's.
            after = session.events[session.events.index(compactions[0]) + 1 :]
            assert len(after) >= len(messages) - count + kept


# As the real Cline 3.0.65 wrote `<id>.json` beside a session's messages (the fields the
# import reads, and others it leaves).
INFO = {
    "version": 1,
    "session_id": SESSION,
    "source": "cli",
    "pid": 6624,
    "started_at": "2026-12-07T16:34:50.456Z",
    "ended_at": "2026-12-07T16:34:52.563Z",
    "exit_code": 0,
    "status": "completed",
    "interactive": False,
    "provider": "openai-compatible",
    "model": "test-model",
    "cwd": "/home/dev/project",
    "workspace_root": "/home/dev/project",
    "prompt": "Run things.",
    "metadata": {
        "sessionHistoryOrigin": {"mode": "user", "version": "3.0.65"},
        "title": "Run things.",
        "usage": {"inputTokens": 29060, "outputTokens": 30},
    },
}


class TestSessionInfo:
    """Cline's `<id>.json` says where and how the session ran: the session's meta."""

    def test_where_and_how_it_ran(self, tmp_path: Path) -> None:
        path = _write(tmp_path, _messages())
        info_path(path).write_text(json.dumps(INFO))
        meta = _load(path).meta
        assert {k: meta.get(k) for k in ("cwd", "provider", "status", "title", "version")} == {
            "cwd": "/home/dev/project",
            "provider": "openai-compatible",
            "status": "completed",
            "title": "Run things.",
            "version": "3.0.65",
        }
        assert (meta["started_at"], meta["ended_at"]) == (INFO["started_at"], INFO["ended_at"])
        assert "session_info" not in meta

    def test_without_it_the_session_is_the_same(self, tmp_path: Path) -> None:
        path = _write(tmp_path, _messages())
        without = _load(path)
        info_path(path).write_text(json.dumps(INFO))
        with_info = _load(path)
        assert with_info.events == without.events
        assert "cwd" not in without.meta

    @pytest.mark.parametrize(
        ("text", "said"),
        [
            ("{not json", "unreadable (JSONDecodeError): left out"),
            ("[" * 100_000, "unreadable (RecursionError): left out"),
            (b"\xff\xfe{}", "unreadable (UnicodeDecodeError): left out"),
            ('["a list"]', "not a session file Cline writes: left out"),
        ],
    )
    def test_an_unreadable_one_is_said_and_changes_nothing_else(
        self, tmp_path: Path, text: str | bytes, said: str
    ) -> None:
        path = _write(tmp_path, _messages())
        expected = _load(path)
        if isinstance(text, bytes):
            info_path(path).write_bytes(text)
        else:
            info_path(path).write_text(text)
        session = _load(path)
        assert session.meta["session_info"] == said
        assert session.events == expected.events

    def test_fields_of_another_type_are_left_out(self, tmp_path: Path) -> None:
        path = _write(tmp_path, _messages())
        odd = {**INFO, "cwd": ["/x"], "status": 3, "metadata": {"title": {"t": 1}}}
        info_path(path).write_text(json.dumps(odd))
        meta = _load(path).meta
        assert "cwd" not in meta and "status" not in meta and "title" not in meta
        assert meta["provider"] == "openai-compatible"


class TestHostileInput:
    @pytest.mark.parametrize(
        ("messages", "place"),
        [
            ([_user("go"), "not a message"], "messages[1]"),
            ([_user("go"), {"id": "x", "role": "system", "content": "hi"}], "messages[1].role"),
            (
                [_user("go"), {"id": "x", "role": "assistant", "content": [{"type": "video"}]}],
                "messages[1].content[0].type",
            ),
        ],
    )
    def test_a_malformed_message_is_refused_with_its_place(
        self, tmp_path: Path, messages: list[Any], place: str
    ) -> None:
        with pytest.raises(IngestError) as caught:
            load_sessions(_write(tmp_path, messages))
        assert caught.value.location.path == place

    def test_a_role_of_the_wrong_type_is_refused(self, tmp_path: Path) -> None:
        message = {"id": "x", "role": ["user"], "content": "hi"}
        with pytest.raises(IngestError) as caught:
            load_sessions(_write(tmp_path, [_user("go"), message]))
        assert caught.value.location.path == "messages[1].role"

    def test_an_output_with_an_odd_block_type_is_its_json_text(self, tmp_path: Path) -> None:
        odd = [{"type": ["text"], "text": "x"}]
        messages = [_user("go"), _call("a", "c", "ls"), _result("r", "c", odd)]
        (result,) = [
            e for e in _load(_write(tmp_path, messages)).events if isinstance(e, ToolResult)
        ]
        assert _text(result) == json.dumps(odd, separators=(",", ":"))

    def test_a_file_read_as_cline_without_a_session_id_is_refused(self, tmp_path: Path) -> None:
        path = _write(tmp_path, _messages())
        body = json.loads(path.read_text())
        del body["sessionId"]
        path.write_text(json.dumps(body))
        with pytest.raises(IngestError, match="sessionId"):
            load_sessions(path, format="cline")

    def test_messages_not_a_list_is_no_cline_session(self, tmp_path: Path) -> None:
        path = _write(tmp_path, [])
        body = json.loads(path.read_text())
        body["messages"] = {"0": _user("go")}
        path.write_text(json.dumps(body))
        assert not cline.sniff(read_raw(path))

    def test_a_result_no_call_asked_for(self, tmp_path: Path) -> None:
        path = _write(tmp_path, [_user("go"), _result("r1", "nobody", "out")])
        with pytest.raises(IngestError, match="no matching tool_use"):
            load_sessions(path)
        session = _load(path, strict=False)
        assert isinstance(session.events[-1], Note) and len(session.strays) == 1

    def test_an_anthropic_request_body_is_still_one(self, tmp_path: Path) -> None:
        # Cline's messages are Anthropic's shape: a body of them, without the session's
        # `sessionId` and `version`, is the Anthropic reader's.
        path = tmp_path / "body.json"
        body = {"model": "claude", "max_tokens": 9, "system": "Be brief.", "messages": _messages()}
        path.write_text(json.dumps(body))
        assert detect_format(read_raw(path)) == "anthropic"


class TestKeptMessagesElsewhere:
    def test_a_summary_whose_kept_messages_are_not_the_newest_stands_for_all(
        self, tmp_path: Path
    ) -> None:
        messages = _messages()
        path = _write(tmp_path, messages)
        _compact(path, messages, count=5, kept=0)
        state = json.loads(compaction_path(path).read_text())
        state["messages"].append(_answer("x1", "A note Cline kept from elsewhere."))
        compaction_path(path).write_text(json.dumps(state))
        session = _load(path)
        (summary,) = [e for e in session.events if isinstance(e, Compaction)]
        assert "A note Cline kept from elsewhere." in _text(summary)
        assert session.meta["compaction"] == "applied: 5 messages summarized, 0 kept"
        assert [type(e) for e in session.events[session.events.index(summary) + 1 :]] == [
            AssistantTurn
        ]
