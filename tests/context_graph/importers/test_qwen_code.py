"""Qwen Code session files, hand-made in the shape Qwen Code 0.24 writes them.

The real CLI's own files are imported in test_qwen_code_real.py; here each rule of the
history Qwen Code rebuilds on resume gets records of its own: the `parentUuid` chain
(rewinds, a lost parent), records sharing a uuid, compressions, local slash commands,
what the user typed while tools ran, notices, and the records that are refused.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from context_graph.errors import IngestError
from context_graph.graph.content import TextPart
from context_graph.graph.events import AssistantTurn, Compaction, Note, ToolResult, UserTurn
from context_graph.importers import detect_format, load_sessions
from orchestrator import ContextManager

SESSION = "7cb1ebfe-fa34-42a6-825e-db55936016cb"


class Log:
    """Records as Qwen Code appends them: each one's parent is the one before, by default."""

    def __init__(self) -> None:
        self.records: list[dict[str, Any]] = []
        self.last: str | None = None
        self._count = 0

    def add(self, kind: str, parent: str | bool | None = True, **fields: Any) -> str:
        self._count += 1
        uuid = fields.pop("uuid", f"u{self._count:03d}")
        record = {
            "uuid": uuid,
            "parentUuid": self.last if parent is True else parent,
            "sessionId": SESSION,
            "timestamp": f"2026-12-07T10:{self._count // 60:02d}:{self._count % 60:02d}.000Z",
            "type": kind,
            "cwd": "/repo",
            "version": "0.24.4",
            **fields,
        }
        self.records.append(record)
        self.last = uuid
        return uuid

    def user(self, text: str, parent: str | bool | None = True, **fields: Any) -> str:
        fields.setdefault("provenance", "real_user")
        message = {"role": "user", "parts": [{"text": text}]}
        return self.add("user", parent, message=message, **fields)

    def model(self, text: str, *calls: tuple[str, str, dict[str, Any]], **fields: Any) -> str:
        parts: list[dict[str, Any]] = [{"text": text}] if text else []
        parts += [{"functionCall": {"id": i, "name": n, "args": a}} for i, n, a in calls]
        fields.setdefault("model", "qwen3-coder-plus")
        return self.add("assistant", message={"role": "model", "parts": parts}, **fields)

    def result(self, call_id: str, name: str, output: str, status: str = "success") -> str:
        response = {"id": call_id, "name": name, "response": {"output": output}}
        return self.add(
            "tool_result",
            message={"role": "user", "parts": [{"functionResponse": response}]},
            toolCallResult={"callId": call_id, "status": status},
        )

    def system(self, subtype: str, payload: Any = None, **fields: Any) -> str:
        extra = {} if payload is None else {"systemPayload": payload}
        return self.add("system", subtype=subtype, **extra, **fields)

    def write(self, folder: Path, name: str = f"{SESSION}.jsonl") -> Path:
        path = folder / name
        path.write_text("".join(json.dumps(r) + "\n" for r in self.records), "utf-8")
        return path


def _texts(events: list[Any]) -> list[str]:
    out = []
    for event in events:
        text = "".join(p.text for p in getattr(event, "content", ()) if isinstance(p, TextPart))
        out.append(f"{type(event).__name__}:{text}")
    return out


def _load(log: Log, folder: Path, strict: bool = True) -> Any:
    (session,) = load_sessions(log.write(folder), strict=strict)
    return session


def _task(log: Log) -> None:
    log.user("Fix the failing test.")
    log.system("attribution_snapshot", {"snapshot": {}})
    log.model("Running it.", ("c1", "run_shell_command", {"command": "pytest"}))
    log.result("c1", "run_shell_command", "1 failed", status="error")
    log.model("Fixed.")


class TestTheConversation:
    def test_a_session_reads_as_qwen_code_not_claude_code(self, tmp_path: Path) -> None:
        """Its records carry Claude Code's ids; before, Claude Code's importer took the
        file and refused its first line ("message has no `content`")."""
        log = Log()
        _task(log)
        assert detect_format(log.write(tmp_path)) == "qwen_code"
        session = _load(log, tmp_path)
        assert _texts(session.events) == [
            "UserTurn:Fix the failing test.",
            "AssistantTurn:Running it.",
            "ToolResult:1 failed",
            "AssistantTurn:Fixed.",
        ]
        turn = session.events[1]
        assert turn.model == "qwen3-coder-plus"
        assert [(c.id, c.name, json.loads(c.arguments)) for c in turn.tool_calls] == [
            ("c1", "run_shell_command", {"command": "pytest"})
        ]
        result = session.events[2]
        assert result.call_id == "c1" and result.is_error  # its record's status: error
        assert session.events[0].timestamp == "2026-12-07T10:00:01.000Z"
        assert session.meta["format"] == "qwen_code"
        assert session.meta["session_id"] == SESSION
        assert session.meta["skipped_records"] == {"system:attribution_snapshot": 1}
        assert session.name == SESSION

    def test_usage_and_thoughts_are_kept(self, tmp_path: Path) -> None:
        log = Log()
        log.user("Hi.")
        usage = {"promptTokenCount": 16397, "candidatesTokenCount": 5, "totalTokenCount": 16402}
        log.add(
            "assistant",
            message={
                "role": "model",
                "parts": [{"text": "Think.", "thought": True}, {"text": "Hello."}],
            },
            model="qwen3",
            usageMetadata=usage,
        )
        (_user, turn) = _load(log, tmp_path).events
        assert turn.meta["usage"] == usage
        assert [p.type for p in turn.content] == ["thinking", "text"]

    def test_a_rewind_leaves_the_abandoned_turns_out(self, tmp_path: Path) -> None:
        """Qwen Code rewinds by linking a `rewind` record to the record before the turn
        it goes back to; the turns after it stay in the file, on a dead branch."""
        log = Log()
        log.user("Count to three.")
        log.model("One, two, three.")
        before_second = log.last
        log.user("Now delete the repository.")
        log.model("Deleting.", ("c1", "run_shell_command", {"command": "rm -rf ."}))
        log.result("c1", "run_shell_command", "done")
        log.system("rewind", {"targetTurnIndex": 1}, parent=before_second)
        log.user("Now count to four.")
        log.model("One, two, three, four.")
        session = _load(log, tmp_path)
        assert _texts(session.events) == [
            "UserTurn:Count to three.",
            "AssistantTurn:One, two, three.",
            "UserTurn:Now count to four.",
            "AssistantTurn:One, two, three, four.",
        ]
        assert session.meta["abandoned_records"] == 3

    def test_records_of_one_uuid_are_one_message(self, tmp_path: Path) -> None:
        log = Log()
        log.user("Read both.")
        log.model("Reading.", ("c1", "read_file", {"path": "a"}))
        log.records.append(
            {
                **log.records[-1],
                "message": {
                    "role": "model",
                    "parts": [
                        {"functionCall": {"id": "c2", "name": "read_file", "args": {"path": "b"}}}
                    ],
                },
            }
        )
        log.result("c1", "read_file", "A")
        log.result("c2", "read_file", "B")
        events = _load(log, tmp_path).events
        (assistant,) = [e for e in events if isinstance(e, AssistantTurn)]
        assert [c.id for c in assistant.tool_calls] == ["c1", "c2"]
        assert [e.call_id for e in events if isinstance(e, ToolResult)] == ["c1", "c2"]

    def test_a_missing_parent_ends_the_chain_as_qwen_code_ends_it(self, tmp_path: Path) -> None:
        log = Log()
        log.user("First.")
        log.model("One.")
        log.user("Second.", parent="lost-record")
        log.model("Two.")
        session = _load(log, tmp_path)
        assert _texts(session.events) == ["UserTurn:Second.", "AssistantTurn:Two."]
        assert session.meta["history_gap"] == "lost-record"

    def test_a_parent_cycle_ends_the_chain(self, tmp_path: Path) -> None:
        log = Log()
        log.user("First.", parent="u002")
        log.model("One.")
        assert _texts(_load(log, tmp_path).events) == ["UserTurn:First.", "AssistantTurn:One."]

    def test_artifact_records_are_not_the_leaf(self, tmp_path: Path) -> None:
        """A record after the conversation that is not part of it (a sources snapshot,
        linked to nothing) does not hide the conversation."""
        log = Log()
        _task(log)
        log.system("session_sources_snapshot", {"sources": []}, parent=None)
        log.system("session_artifact_event", {"event": {}}, parent=None)
        assert len(_load(log, tmp_path).events) == 4


class TestWhatQwenCodeSends:
    def test_a_compression_is_a_compaction_of_its_summary(self, tmp_path: Path) -> None:
        """The history a `chat_compression` record names replaced everything before it:
        its user-role text (the summary, the files it restores) is the compaction; the
        model's acknowledgement and the call still waiting are not."""
        log = Log()
        log.user("Count with seq.")
        log.model("Step 1.", ("c1", "run_shell_command", {"command": "seq 1 9"}))
        log.result("c1", "run_shell_command", "1 2 3")
        log.model("Step 2.", ("c2", "run_shell_command", {"command": "seq 2 9"}))
        snapshot = "<state_snapshot>\n<overall_goal>Count.</overall_goal>\n</state_snapshot>"
        history = [
            {"role": "user", "parts": [{"text": snapshot}]},
            {"role": "model", "parts": [{"text": "Got it. Thanks for the additional context!"}]},
            {"role": "user", "parts": [{"text": "<restored file a.py>print(1)</restored>"}]},
            {
                "role": "model",
                "parts": [{"functionCall": {"id": "c2", "name": "run_shell_command", "args": {}}}],
            },
        ]
        log.system(
            "chat_compression", {"info": {"compressionStatus": 1}, "compressedHistory": history}
        )
        log.result("c2", "run_shell_command", "2 3")
        log.model("Done.")
        events = _load(log, tmp_path).events
        (compaction,) = [e for e in events if isinstance(e, Compaction)]
        assert compaction.origin == "qwen_code"
        assert [p.text for p in compaction.content] == [
            snapshot,
            "<restored file a.py>print(1)</restored>",
        ]
        assert _texts(events)[-3:] == [
            _texts([compaction])[0],
            "ToolResult:2 3",
            "AssistantTurn:Done.",
        ]
        # Rendered, the summary stands for the history before it; the call still waiting
        # keeps its result.
        manager = ContextManager("openai", None)
        manager.ingest(events)
        body = json.dumps(manager.render_sync().payload)
        assert "<overall_goal>Count.</overall_goal>" in body and "1 2 3" not in body
        assert "Step 2." in body and '"2 3"' in body

    def test_a_compression_without_history_is_skipped(self, tmp_path: Path) -> None:
        """A compression that failed records no history: Qwen Code kept the whole one."""
        log = Log()
        _task(log)
        log.system("chat_compression", {"info": {"compressionStatus": 2}})
        session = _load(log, tmp_path)
        assert not any(isinstance(e, Compaction) for e in session.events)
        assert session.meta["skipped_records"]["system:chat_compression"] == 1

    def test_a_local_slash_command_leaves_the_history(self, tmp_path: Path) -> None:
        log = Log()
        log.user("Hello.")
        log.model("Hi.")
        log.user("/stats")
        result = {
            "phase": "result",
            "rawCommand": "/stats",
            "outputHistoryItems": [{"type": "assistant", "text": "12 requests"}],
        }
        log.system("slash_command", result)
        log.user("Go on.")
        events = _load(log, tmp_path).events
        assert _texts(events) == ["UserTurn:Hello.", "AssistantTurn:Hi.", "UserTurn:Go on."]

    def test_a_slash_command_sent_to_the_model_stays(self, tmp_path: Path) -> None:
        log = Log()
        log.user("/review")
        log.system(
            "slash_command",
            {
                "phase": "result",
                "rawCommand": "/review",
                "sentToModel": True,
                "outputHistoryItems": [{"type": "assistant"}],
            },
        )
        log.model("Reviewing.")
        assert _texts(_load(log, tmp_path).events)[0] == "UserTurn:/review"

    def test_what_the_user_typed_while_tools_ran_joins_their_results(self, tmp_path: Path) -> None:
        log = Log()
        log.user("Run the tests.")
        log.model("Running.", ("c1", "run_shell_command", {"command": "pytest"}))
        log.result("c1", "run_shell_command", "ok")
        log.add(
            "user",
            subtype="mid_turn_user_message",
            provenance="real_user",
            message={"role": "user", "parts": [{"text": "Also check the docs."}]},
        )
        log.model("Checking the docs.")
        events = _load(log, tmp_path).events
        assert _texts(events)[2:4] == ["ToolResult:ok", "UserTurn:Also check the docs."]
        # Rendered for Gemini: one user content, the result and the words, as sent.
        manager = ContextManager("gemini", None)
        manager.ingest(events)
        contents = manager.render_sync().payload["contents"]
        joined = [c for c in contents if any("functionResponse" in p for p in c["parts"])]
        assert "Also check the docs." in json.dumps(joined)

    def test_notifications_and_cron_prompts_are_notices(self, tmp_path: Path) -> None:
        log = Log()
        log.user("Watch the build.")
        log.model("Watching.")
        log.user(
            "<task-notification>build finished</task-notification>",
            provenance="system",
            subtype="notification",
        )
        log.user("every hour: check the queue", provenance="system", subtype="cron")
        log.model("The build finished.")
        users = [e for e in _load(log, tmp_path).events if isinstance(e, UserTurn)]
        assert [u.notice for u in users] == [False, True, True]

    def test_realtime_messages_are_left_out(self, tmp_path: Path) -> None:
        log = Log()
        log.user("Hi.")
        log.add(
            "user",
            subtype="realtime_message",
            message={"role": "user", "parts": [{"text": "(audio transcript)"}]},
        )
        log.model("Hello.")
        session = _load(log, tmp_path)
        assert _texts(session.events) == ["UserTurn:Hi.", "AssistantTurn:Hello."]


class TestRefused:
    @pytest.mark.parametrize(
        ("damage", "said"),
        [
            ({"uuid": 7}, "`uuid`"),
            ({"sessionId": ""}, "`sessionId`"),
            ({"parentUuid": 3}, "`parentUuid`"),
            ({"type": None}, "`type`"),
            ({"message": {"role": "user", "parts": "hi"}}, "`message.parts`"),
            ({"message": "hi"}, "`message`"),
        ],
        ids=["uuid", "session", "parent", "type", "parts", "message"],
    )
    def test_a_malformed_record_is_named_by_its_line(
        self, tmp_path: Path, damage: dict[str, Any], said: str
    ) -> None:
        log = Log()
        _task(log)
        log.records[2] = {**log.records[2], **damage}
        path = log.write(tmp_path)
        for strict in (True, False):
            with pytest.raises(IngestError) as info:
                load_sessions(path, format="qwen_code", strict=strict)
            assert info.value.location.line == 3 and said in str(info.value)

    def test_a_line_that_is_no_object_is_named(self, tmp_path: Path) -> None:
        log = Log()
        _task(log)
        path = log.write(tmp_path)
        lines = path.read_text("utf-8").splitlines()
        path.write_text("\n".join([*lines[:2], "42", *lines[2:]]) + "\n", "utf-8")
        with pytest.raises(IngestError) as info:
            load_sessions(path)
        assert info.value.location.line == 3

    def test_two_sessions_in_one_file_are_refused(self, tmp_path: Path) -> None:
        log = Log()
        _task(log)
        log.records[3] = {**log.records[3], "sessionId": "another"}
        with pytest.raises(IngestError, match="two sessions") as info:
            _load(log, tmp_path)
        assert info.value.location.line == 4

    def test_a_compressed_history_that_is_not_a_list_is_refused(self, tmp_path: Path) -> None:
        log = Log()
        _task(log)
        log.system("chat_compression", {"compressedHistory": {"role": "user"}})
        with pytest.raises(IngestError, match="compressedHistory") as info:
            _load(log, tmp_path)
        assert info.value.location.line == 6

    def test_a_result_that_answers_no_call(self, tmp_path: Path) -> None:
        """Refused strictly; a lenient read keeps it as a note and lists it."""
        log = Log()
        log.user("Hi.")
        log.model("Hello.")
        log.result("nobody", "read_file", "contents")
        with pytest.raises(IngestError, match="no matching tool call"):
            ContextManager("openai", None).ingest(_load(log, tmp_path).events)
        session = _load(log, tmp_path, strict=False)
        assert len(session.strays) == 1 and isinstance(session.events[-1], Note)
        assert "arrived with no matching call" in _texts(session.events)[-1]

    def test_records_of_another_type_are_counted(self, tmp_path: Path) -> None:
        log = Log()
        _task(log)
        log.add("telemetry", parent=None)
        session = _load(log, tmp_path)
        assert session.meta["skipped_records"]["type:telemetry"] == 1
        assert len(session.events) == 4


# --- a property: abandoned branches never reach the import ----------------------------------


def _exchanges(count: int) -> Iterator[tuple[str, str]]:
    for n in range(count):
        yield f"Question {n}?", f"Answer {n}."


@settings(max_examples=60, deadline=None)
@given(
    kept=st.integers(min_value=1, max_value=6),
    forks=st.lists(
        st.tuples(st.integers(min_value=0, max_value=6), st.integers(min_value=1, max_value=3)),
        max_size=3,
    ),
)
def test_rewound_branches_anywhere_import_as_the_conversation_without_them(
    kept: int, forks: list[tuple[int, int]]
) -> None:
    """A conversation of `kept` exchanges; after any of its records, a branch of abandoned
    exchanges the user rewound away (its rewind record linked back to the fork). The
    import is the conversation alone, as Qwen Code resumes it."""
    log = Log()
    plain = Log()
    after: dict[int, list[int]] = {}
    for at, size in forks:
        after.setdefault(min(at, kept - 1), []).append(size)
    for n, (question, answer) in enumerate(_exchanges(kept)):
        for log_of in (log, plain):
            log_of.user(question)
            log_of.model(answer)
        for size in after.get(n, []):
            fork = log.last
            for question_x, answer_x in _exchanges(size):
                log.user(f"abandoned {question_x}")
                log.model(f"abandoned {answer_x}")
            log.system("rewind", {"targetTurnIndex": n + 1}, parent=fork)
    with tempfile.TemporaryDirectory() as folder:
        session = _load(log, Path(folder))
        expected = _load(plain, Path(folder))
    assert _texts(session.events) == _texts(expected.events)
    abandoned = sum(2 * size for sizes in after.values() for size in sizes)
    assert session.meta.get("abandoned_records", 0) == abandoned
