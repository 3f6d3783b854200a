"""gemini-cli 0.61's chat recording as a log of JSON lines (`gemini_cli._fold`).

The lines are shaped as gemini-cli 0.61.0 writes them (test_gemini_cli_real.py records
them with the real CLI); the texts in them are ours.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from context_graph.errors import IngestError
from context_graph.graph.context_graph import ContextGraph
from context_graph.graph.events import AssistantTurn, Note, ToolResult, UserTurn
from context_graph.importers import detect_format, load_sessions
from context_graph.importers._base import read_raw
from context_graph.testing import WordCounter, graph_snapshot
from tests.context_graph.importers.test_gemini_cli import _call, _text, _user

HEADER = {"sessionId": "s-1", "projectHash": "p", "startTime": "t0", "lastUpdated": "t0"}


def _model(message_id: str, text: str = "", *calls: dict[str, Any]) -> dict[str, Any]:
    message: dict[str, Any] = {"id": message_id, "timestamp": "t1", "type": "gemini"}
    message |= {"content": text, "thoughts": [], "model": "gemini-2.5-flash"}
    if calls:
        message["toolCalls"] = list(calls)
    return message


def _responses(message_id: str, *calls: dict[str, Any]) -> dict[str, Any]:
    """The user message the CLI records a round's results in, copied from the calls."""
    parts = [part for call in calls for part in call["result"]]
    return {"id": message_id, "timestamp": "t2", "type": "user", "content": parts}


def _log(folder: Path, *lines: Any, name: str = "session.jsonl") -> Path:
    path = folder / name
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), "utf-8")
    return path


def _load(path: Path, *, strict: bool = True) -> Any:
    (session,) = load_sessions(path, strict=strict)
    return session


class TestLog:
    def test_a_log_is_detected_and_read_back(self, tmp_path: Path) -> None:
        """A model turn written as it starts, then again with its calls, is one turn in its
        first place; the results' user message is the log's copy of them."""
        call = _call("c1")
        path = _log(
            tmp_path,
            HEADER,
            {"$set": {"messages": [_user("context") | {"id": "u0"}]}},
            _user("Read it.") | {"id": "u1"},
            {"$set": {"lastUpdated": "t1"}},
            _model("g1"),
            _model("g1", "", call),
            _responses("u2", call),
            _model("g2", "Done."),
        )
        assert detect_format(read_raw(path)) == "gemini_cli"
        session = _load(path)
        kinds = [type(e).__name__ for e in session.events]
        assert kinds == ["UserTurn", "UserTurn", "AssistantTurn", "ToolResult", "AssistantTurn"]
        assert [c.id for c in session.events[2].tool_calls] == ["c1"]
        assert _text(session.events[3]) == "out of c1"
        assert session.meta["skipped_messages"] == {"function_response": 1}
        assert session.meta["session_id"] == "s-1"
        # Each event names the line its message was last written on.
        assert [e.source.line for e in session.events] == [2, 3, 6, 6, 8]
        assert session.events[0].source.path == "$set.messages[0]"

    def test_the_session_context_is_a_notice(self, tmp_path: Path) -> None:
        """The CLI's `<session_context>` message is its own, not the user's request."""
        context = _user("<session_context>\nToday is Monday.\n</session_context>")
        path = _log(tmp_path, HEADER, context | {"id": "u0"}, _user("Fix it.") | {"id": "u1"})
        assert [e.notice for e in _load(path).events] == [True, False]

    def test_set_messages_replaces_them_all(self, tmp_path: Path) -> None:
        """A `$set` of `messages` replaces every message recorded before it."""
        path = _log(
            tmp_path,
            HEADER,
            _user("old") | {"id": "u1"},
            {"$set": {"messages": [_user("new") | {"id": "u2"}]}},
        )
        assert [_text(e) for e in _load(path).events] == ["new"]

    @pytest.mark.parametrize(
        ("target", "left"), [("g1", ["first"]), ("u2", ["first", ""]), ("nowhere", [])]
    )
    def test_a_rewind_takes_back_its_message_and_the_later_ones(
        self, tmp_path: Path, target: str, left: list[str]
    ) -> None:
        """`$rewindTo` drops the message it names and every later one; all of them when
        it names none recorded (as the CLI reads its log back)."""
        path = _log(
            tmp_path,
            HEADER,
            _user("first") | {"id": "u1"},
            _model("g1", ""),
            _user("second") | {"id": "u2"},
            {"$rewindTo": target},
        )
        assert [_text(e) for e in _load(path).events] == left

    def test_a_response_answers_a_call_recorded_without_result(self, tmp_path: Path) -> None:
        """A call written before its result: the results' user message answers it."""
        call = _call("c1")
        bare = {k: v for k, v in call.items() if k != "result"}
        session = _load(
            _log(
                tmp_path,
                HEADER,
                _user() | {"id": "u1"},
                _model("g1", "", bare),
                _responses("u2", call),
            )
        )
        assert [type(e).__name__ for e in session.events] == [
            "UserTurn",
            "AssistantTurn",
            "ToolResult",
        ]
        assert session.events[2].call_id == "c1"
        ContextGraph(counter=WordCounter()).ingest(session.events)

    def test_text_beside_responses_stays_the_users(self, tmp_path: Path) -> None:
        """A user message holding results and words: the words are a turn of their own."""
        call = _call("c1")
        mixed = _responses("u2", call)
        mixed["content"] = [*mixed["content"], {"text": "and stop after this"}]
        session = _load(
            _log(tmp_path, HEADER, _user() | {"id": "u1"}, _model("g1", "", call), mixed)
        )
        last = session.events[-1]
        assert isinstance(last, UserTurn) and _text(last) == "and stop after this"

    def test_a_response_to_no_call_is_a_stray(self, tmp_path: Path) -> None:
        """A result answering no call recorded before it: refused by a strict read, a note
        in a lenient one."""
        path = _log(tmp_path, HEADER, _user() | {"id": "u1"}, _responses("u2", _call("ghost")))
        with pytest.raises(IngestError) as info:
            _load(path)
        assert (info.value.location.line, info.value.location.path) == (
            3,
            "content[0].functionResponse",
        )
        session = _load(path, strict=False)
        assert isinstance(session.events[-1], Note) and "ghost" in _text(session.events[-1])

    def test_unknown_lines_are_counted(self, tmp_path: Path) -> None:
        """A line of no kind the log has is counted, not read."""
        path = _log(tmp_path, HEADER, {"$push": {"x": 1}}, _user() | {"id": "u1"})
        session = _load(path)
        assert session.meta["skipped_records"] == {"$push": 1}
        assert len(session.events) == 1

    @pytest.mark.parametrize(
        ("line", "path", "reason"),
        [
            ([1], None, "must be an object"),
            ({"$set": 3}, "$set", "must be an object"),
            ({"$set": {"messages": 3}}, "$set.messages", "must be an array"),
            ({"$set": {"messages": [{"type": "user"}]}}, "$set.messages[0].id", "must be a string"),
            ({"$rewindTo": 7}, "$rewindTo", "must be a string"),
            (HEADER | {"messages": 5}, "messages", "must be an array"),
            (_user() | {"id": ""}, "id", "must not be empty"),
            (_user() | {"id": "u9", "content": 5}, "content", "array"),
        ],
        ids=[
            "not an object",
            "set",
            "set messages",
            "set message id",
            "rewind",
            "header messages",
            "empty id",
            "content",
        ],
    )
    def test_a_bad_line_names_its_line(
        self, tmp_path: Path, line: Any, path: str | None, reason: str
    ) -> None:
        """A malformed line is refused naming the file's line and the field; nothing is added
        to a graph given the session."""
        file = _log(tmp_path, HEADER, _user() | {"id": "u1"}, line)
        with pytest.raises(IngestError) as info:
            load_sessions(file, format="gemini_cli")
        where = info.value.location
        assert (where.file, where.line, where.path) == (str(file), 3, path)
        assert reason in str(info.value)
        graph = ContextGraph(counter=WordCounter())
        graph.add_user("earlier")
        before = graph_snapshot(graph)
        with pytest.raises(IngestError):
            graph.ingest(load_sessions(file, format="gemini_cli")[0].events)
        assert graph_snapshot(graph) == before

    @settings(max_examples=60, deadline=None)
    @given(st.lists(st.integers(min_value=0, max_value=3), min_size=1, max_size=8))
    def test_a_log_reads_as_the_recording_it_builds(self, writes: list[int]) -> None:
        """Messages written in any order of first writes and rewrites (a model turn again
        with its calls, its results copied in a user message) import as the one-object
        recording of the final messages does."""
        calls = [_call(f"c{n}", at=f"t{n}") for n in range(4)]
        final: dict[str, dict[str, Any]] = {}
        lines: list[Any] = [HEADER, _user("go") | {"id": "u0"}]
        final["u0"] = lines[-1]
        for n in writes:
            message = _model(f"g{n}", "", calls[n])
            first = f"g{n}" not in final
            lines.append(_model(f"g{n}") if first else message)
            lines.append(message)
            final[f"g{n}"] = message
            if first:
                lines.append(_responses(f"r{n}", calls[n]))
        recording = HEADER | {"messages": list(final.values())}
        with tempfile.TemporaryDirectory() as folder:
            as_log = _load(_log(Path(folder), *lines))
            single = Path(folder) / "one.json"
            single.write_text(json.dumps(recording), "utf-8")
            as_object = _load(single)
        assert [e.model_dump(exclude={"source"}) for e in as_log.events] == [
            e.model_dump(exclude={"source"}) for e in as_object.events
        ]
        turns = [e for e in as_log.events if isinstance(e, AssistantTurn)]
        results = [e for e in as_log.events if isinstance(e, ToolResult)]
        assert [c.id for t in turns for c in t.tool_calls] == [r.call_id for r in results]
        ContextGraph(counter=WordCounter()).ingest(as_log.events)
