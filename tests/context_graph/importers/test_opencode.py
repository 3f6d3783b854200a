"""opencode sessions as `opencode export` writes them (`context_graph.importers.opencode`).

The shapes are those opencode 1.18.33 writes (test_opencode_real.py exports one made by
the real CLI); the texts are ours.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from context_graph.errors import IngestError
from context_graph.graph.content import TextPart, ThinkingPart
from context_graph.graph.context_graph import ContextGraph
from context_graph.graph.events import AssistantTurn, ToolResult, UserTurn
from context_graph.importers import detect_format, load_sessions, opencode
from context_graph.importers._base import RawInput, read_raw
from context_graph.testing import WordCounter, graph_snapshot

Record = dict[str, Any]


def _user(*parts: Record, message_id: str = "msg_u") -> Record:
    info = {"role": "user", "time": {"created": 1796613935015}, "id": message_id}
    return {"info": info, "parts": list(parts)}


def _assistant(*parts: Record, message_id: str = "msg_a") -> Record:
    info = {
        "role": "assistant",
        "id": message_id,
        "modelID": "test-model",
        "time": {"created": 1796613936314, "completed": 1796613937894},
        "tokens": {"total": 10, "input": 8, "output": 2, "cache": {"read": 4, "write": 0}},
    }
    return {"info": info, "parts": [{"type": "step-start"}, *parts, {"type": "step-finish"}]}


def _text(text: str, **extra: Any) -> Record:
    return {"type": "text", "text": text, **extra}


def _tool(call_id: str, name: str = "bash", status: str = "completed", **state: Any) -> Record:
    body: Record = {"status": status, "input": {"command": "echo hi"}}
    if status == "completed":
        body |= {"output": f"out of {call_id}", "metadata": {"exit": 0}}
    elif status == "error":
        body["error"] = f"failed {call_id}"
    body |= state
    return {"type": "tool", "tool": name, "callID": call_id, "state": body}


def _export(*messages: Record) -> Record:
    info = {"id": "ses_1", "title": "Notes", "directory": "/repo", "version": "1.18.33"}
    return {"info": info, "messages": list(messages)}


def _session(data: Any) -> Any:
    (session,) = load_sessions(RawInput(data), format="opencode")
    return session


def _words(event: Any) -> str:
    return "".join(p.text for p in event.content if isinstance(p, TextPart))


class TestExport:
    def test_an_export_is_detected(self, tmp_path: Path) -> None:
        """`{info: {id}, messages: [{info, parts}]}` is an opencode export."""
        path = tmp_path / "ses.json"
        path.write_text(json.dumps(_export(_user(_text("hi")))), "utf-8")
        assert detect_format(read_raw(path)) == "opencode"
        chat = {"info": {"id": "x"}, "messages": [{"role": "user", "content": "hi"}]}
        assert not opencode.sniff(RawInput(chat))
        assert not opencode.sniff(RawInput([_user(_text("hi"))]))

    def test_a_step_is_a_turn_and_its_finished_calls_results(self) -> None:
        """An assistant message is one turn (its text, reasoning and calls), then a result
        per finished call: the output, the error, the shell's exit status."""
        session = _session(
            _export(
                _user(_text("Fix it.")),
                _assistant(
                    {"type": "reasoning", "text": "Look first."},
                    _text("Reading."),
                    _tool("c1", "read", status="error"),
                    _tool("c2", metadata={"exit": 1}),
                    _tool("c3", status="running"),
                ),
            )
        )
        user, turn, *results = session.events
        assert isinstance(user, UserTurn) and _words(user) == "Fix it."
        assert isinstance(turn, AssistantTurn)
        assert turn.content == (
            ThinkingPart(thinking="Look first."),
            TextPart(text="Reading."),
        )
        assert [c.id for c in turn.tool_calls] == ["c1", "c2", "c3"]
        assert json.loads(turn.tool_calls[1].arguments) == {"command": "echo hi"}
        assert turn.model == "test-model"
        assert turn.meta["usage"] == {
            "total": 10,
            "input": 8,
            "output": 2,
            "cache_read": 4,
            "cache_write": 0,
        }
        assert [(r.call_id, r.is_error, r.exit_code, _words(r)) for r in results] == [
            ("c1", True, None, "failed c1"),
            ("c2", False, 1, "out of c2"),
        ]
        assert session.meta["skipped_parts"] == {"step-finish": 1, "step-start": 1}
        assert user.timestamp is not None and user.timestamp.startswith("2026-12-")

    def test_what_opencode_wrote_for_the_user_is_a_notice(self) -> None:
        """A user message's synthetic text (a file read for an `@` mention) is a notice
        after the user's own words."""
        session = _session(
            _export(_user(_text("See @a.py"), _text("a.py holds x = 1", synthetic=True)))
        )
        assert [(e.notice, _words(e)) for e in session.events] == [
            (False, "See @a.py"),
            (True, "a.py holds x = 1"),
        ]

    def test_the_session_ingests_and_renders_paired(self) -> None:
        session = _session(
            _export(
                _user(_text("go")),
                _assistant(_tool("c1"), _tool("c2"), message_id="a1"),
                _assistant(_text("Done."), message_id="a2"),
            )
        )
        graph = ContextGraph(counter=WordCounter())
        graph.ingest(session.events)
        assert [type(e).__name__ for e in session.events] == [
            "UserTurn",
            "AssistantTurn",
            "ToolResult",
            "ToolResult",
            "AssistantTurn",
        ]

    @settings(max_examples=60, deadline=None)
    @given(
        st.lists(
            st.lists(st.sampled_from(["completed", "error", "running", "pending"]), max_size=3),
            min_size=1,
            max_size=5,
        )
    )
    def test_every_finished_call_is_answered_after_its_turn(self, steps: list[list[str]]) -> None:
        """Whatever the calls' states, each finished call is answered right after its
        turn, the others are left open, and a graph takes the session."""
        messages = [_user(_text("go"))]
        for n, states in enumerate(steps):
            tools = [_tool(f"c{n}_{k}", status=s) for k, s in enumerate(states)]
            messages.append(_assistant(*tools, message_id=f"a{n}"))
            if any(s in ("running", "pending") for s in states):
                break  # a session ends in the step whose calls are still running
        session = _session(_export(*messages))
        finished = [
            f"c{n}_{k}"
            for n, states in enumerate(steps[: len(messages) - 1])
            for k, s in enumerate(states)
            if s in ("completed", "error")
        ]
        assert [e.call_id for e in session.events if isinstance(e, ToolResult)] == finished
        ContextGraph(counter=WordCounter()).ingest(session.events)

    @pytest.mark.parametrize(
        ("data", "path"),
        [
            ({"info": {"id": 1}, "messages": []}, "info.id"),
            (_export() | {"messages": 3}, "messages"),
            (_export(_user() | {"info": {"role": "system"}}), "messages[0].info.role"),
            (_export(_user() | {"parts": 3}), "messages[0].parts"),
            (_export(_user(_text(3))), "messages[0].parts[0].text"),  # type: ignore[arg-type]
            (_export(_assistant(_tool(""))), "messages[0].parts[1].callID"),
            (_export(_assistant(_tool("c1", name=""))), "messages[0].parts[1].tool"),
            (_export(_assistant(_tool("c1", input=[1]))), "messages[0].parts[1].state.input"),
            (_export(_assistant(_tool("c1", output=5))), "messages[0].parts[1].state.output"),
            (
                _export(_assistant({"type": "tool", "tool": "bash", "callID": "c"})),
                "messages[0].parts[1].state",
            ),
        ],
        ids=[
            "id",
            "messages",
            "role",
            "parts",
            "text",
            "call id",
            "tool name",
            "input",
            "output",
            "state",
        ],
    )
    def test_a_malformed_export_names_the_field(self, data: Any, path: str) -> None:
        """A malformed export is refused naming the message, part and field; a graph
        given it is left as it was."""
        with pytest.raises(IngestError) as info:
            load_sessions(RawInput(data), format="opencode")
        assert info.value.location.path == path
        graph = ContextGraph(counter=WordCounter())
        graph.add_user("earlier")
        before = graph_snapshot(graph)
        with pytest.raises(IngestError):
            graph.ingest(load_sessions(RawInput(data), format="opencode")[0].events)
        assert graph_snapshot(graph) == before


def _database(path: Path, sessions: list[Record]) -> Path:
    """An opencode database holding `sessions` (exports), with opencode's own columns."""
    with sqlite3.connect(path) as db:
        db.execute("pragma journal_mode=wal")
        db.execute(
            "create table session (id text primary key, project_id text, parent_id text,"
            " slug text, directory text, title text, version text, time_created integer)"
        )
        db.execute(
            "create table message (id text primary key, session_id text, time_created integer,"
            " time_updated integer, data text)"
        )
        db.execute(
            "create table part (id text primary key, message_id text, session_id text,"
            " time_created integer, time_updated integer, data text)"
        )
        for n, export in enumerate(sessions):
            info = export["info"]
            db.execute(
                "insert into session values (?, 'global', ?, 'slug', ?, ?, ?, ?)",
                (info["id"], info.get("parentID"), info["directory"], info["title"], "1.18.33", n),
            )
            for k, message in enumerate(export["messages"]):
                body = {key: v for key, v in message["info"].items() if key != "id"}
                db.execute(
                    "insert into message values (?, ?, ?, ?, ?)",
                    (message["info"]["id"], info["id"], k, k, json.dumps(body)),
                )
                for j, part in enumerate(message["parts"]):
                    db.execute(
                        "insert into part values (?, ?, ?, ?, ?, ?)",
                        (
                            f"prt_{n}_{k:03}_{j:03}",
                            message["info"]["id"],
                            info["id"],
                            j,
                            j,
                            json.dumps(part),
                        ),
                    )
    return path


class TestDatabase:
    def test_every_session_reads_as_its_export(self, tmp_path: Path) -> None:
        """The database gives each session, oldest first, with the events its export gives."""
        first = _export(
            _user(_text("go"), message_id="m1"), _assistant(_tool("c1"), message_id="m2")
        )
        second = _export(_user(_text("again"), message_id="m3"))
        second["info"] |= {"id": "ses_2", "parentID": "ses_1"}
        path = _database(tmp_path / "opencode.db", [first, second])
        assert detect_format(read_raw(path)) == "opencode"
        sessions = load_sessions(path)
        assert [s.name for s in sessions] == ["ses_1", "ses_2"]
        assert sessions[1].meta["parentID"] == "ses_1"
        alone = _session(first)
        assert [e.model_dump(exclude={"source"}) for e in sessions[0].events] == [
            e.model_dump(exclude={"source"}) for e in alone.events
        ]

    def test_another_database_is_refused(self, tmp_path: Path) -> None:
        """A SQLite file without opencode's tables is refused, saying which are missing."""
        path = tmp_path / "other.db"
        with sqlite3.connect(path) as db:
            db.execute("create table session (id text)")
        with pytest.raises(IngestError, match="not opencode's: no `message`, `part` table"):
            read_raw(path)

    def test_a_row_that_is_not_json_names_its_row(self, tmp_path: Path) -> None:
        """A message row whose data is not a JSON object is refused naming the row."""
        path = _database(tmp_path / "opencode.db", [_export(_user(_text("go"), message_id="m1"))])
        with sqlite3.connect(path) as db:
            db.execute("update message set data = '[1]' where id = 'm1'")
        with pytest.raises(IngestError) as info:
            load_sessions(path)
        assert info.value.location.path == "message[m1].data"


class TestCompaction:
    def _pair(self, tail: str | None, summary: str, n: int) -> list[Record]:
        part: Record = {"type": "compaction", "auto": True, "overflow": False}
        if tail is not None:
            part["tail_start_id"] = tail
        request = _user(part, message_id=f"mc{n}")
        answer = _assistant(_text(summary), message_id=f"ms{n}")
        answer["info"] |= {"summary": True, "mode": "compaction", "agent": "compaction"}
        return [request, answer]

    def test_the_summary_stands_before_the_tail_the_model_kept(self) -> None:
        """opencode's compaction request and summary are one Compaction, placed before the
        message its `tail_start_id` names: the model is sent the summary, then that tail."""
        session = _session(
            _export(
                _user(_text("go"), message_id="m1"),
                _assistant(_tool("c1"), message_id="m2"),
                _assistant(_tool("c2"), message_id="m3"),
                *self._pair("m3", "Ran c1; c2 next.", 1),
                _assistant(_text("Done."), message_id="m4"),
            )
        )
        kinds = [type(e).__name__ for e in session.events]
        assert kinds == [
            "UserTurn",
            "AssistantTurn",
            "ToolResult",
            "Compaction",
            "AssistantTurn",
            "ToolResult",
            "AssistantTurn",
        ]
        compaction = session.events[3]
        assert compaction.origin == "opencode" and _words(compaction) == "Ran c1; c2 next."
        assert compaction.meta == {"tail_start_id": "m3", "message_id": "ms1"}
        assert (
            "skipped_parts" not in session.meta or "compaction" not in session.meta["skipped_parts"]
        )
        graph = ContextGraph(counter=WordCounter())
        graph.ingest(session.events)

    @pytest.mark.parametrize("tail", [None, "", "m9"])
    def test_without_a_known_tail_the_summary_stands_in_place(self, tail: str | None) -> None:
        """No tail, or one not among the earlier messages: the summary stands for all before."""
        session = _session(
            _export(
                _user(_text("go"), message_id="m1"),
                _assistant(_tool("c1"), message_id="m2"),
                *self._pair(tail, "All so far.", 1),
                _assistant(_text("Done."), message_id="m4"),
            )
        )
        kinds = [type(e).__name__ for e in session.events]
        assert kinds == ["UserTurn", "AssistantTurn", "ToolResult", "Compaction", "AssistantTurn"]

    def test_a_request_without_its_summary_is_no_compaction(self) -> None:
        """A compaction request the session ended before the summary of adds nothing."""
        request, _ = self._pair("m1", "unused", 1)
        session = _session(_export(_user(_text("go"), message_id="m1"), request))
        assert [type(e).__name__ for e in session.events] == ["UserTurn"]
