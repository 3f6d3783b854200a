"""Claude Code's `attachment` records and `file_unchanged` reads (`_claude_code_attachments`).

The records are shaped as Claude Code 2.1.197 writes them (test_claude_code_real.py records
them with the real CLI); the texts in them are ours.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from context_graph.errors import IngestError
from context_graph.graph.content import TextPart
from context_graph.graph.context_graph import ContextGraph
from context_graph.graph.events import FileRead, Note, ToolResult, UserTurn
from context_graph.graph.nodes import FileNode
from context_graph.importers import load_sessions
from context_graph.render import Renderer
from context_graph.testing import WordCounter, graph_snapshot
from tests.context_graph.importers.test_claude_code import (
    _SESSION,
    _assistant,
    _result,
    _text,
    _use,
    _user,
    _write,
)

Record = dict[str, Any]


def _attached(uuid: str, attachment: Record) -> Record:
    return {
        "type": "attachment",
        "uuid": uuid,
        "timestamp": "2026-01-01T00:00:01Z",
        **_SESSION,
        "attachment": attachment,
    }


def _file(path: str, text: str, start: int = 1, lines: int = 3, total: int = 3) -> Record:
    info = {
        "filePath": path,
        "content": text,
        "numLines": lines,
        "startLine": start,
        "totalLines": total,
    }
    return {"type": "file", "filename": path, "content": {"type": "text", "file": info}}


def _memory(path: str, text: str) -> Record:
    content = {"path": path, "type": "Project", "content": text, "contentDiffersFromDisk": False}
    return {"type": "nested_memory", "path": path, "content": content}


def _queued(prompt: str, mode: str = "prompt") -> Record:
    return {
        "type": "queued_command",
        "prompt": prompt,
        "commandMode": mode,
        "timestamp": "2026-01-01T00:00:02Z",
    }


def _load(path: Path) -> Any:
    return load_sessions(path, format="claude_code", strict=True)[0]


class TestAttachments:
    def test_a_named_file_becomes_a_read_of_it(self, tmp_path: Path) -> None:
        """`@notes.txt` is a read of the file, answering no call, with its text as written."""
        session = _load(
            _write(
                tmp_path,
                [
                    _user("u1", "Summarize @notes.txt"),
                    _attached("x1", _file("/repo/notes.txt", "alpha\nbudget cap is $500\n")),
                    _assistant("a1", "msg_1", _text("Done.")),
                ],
            )
        )
        read = session.events[1]
        assert isinstance(read, FileRead)
        assert (read.path, read.call_id, read.line_range) == ("/repo/notes.txt", None, None)
        assert read.content == (TextPart(text="alpha\nbudget cap is $500\n"),)
        assert read.meta == {"uuid": "x1", "attachment": "file"}
        assert read.source is not None and read.source.line == 2

    def test_part_of_a_file_keeps_its_lines(self, tmp_path: Path) -> None:
        """A file attached from line 10 on, 5 of its 40 lines: the read covers 10 to 14."""
        attachment = _file("/repo/a.py", "x", start=10, lines=5, total=40)
        session = _load(
            _write(tmp_path, [_user("u1", "see @a.py#L10-14"), _attached("x1", attachment)])
        )
        assert session.events[1].line_range == (10, 14)

    def test_a_folders_claude_md_is_a_pinned_note(self, tmp_path: Path) -> None:
        """A sub-folder's CLAUDE.md, loaded when the agent read there, is a pinned note."""
        session = _load(
            _write(
                tmp_path,
                [
                    _user("u1", "go"),
                    _assistant("a1", "msg_1", _use("t1", "Read", file_path="/repo/sub/x.txt")),
                    _user("u2", [_result("t1", "x")]),
                    _attached("x1", _memory("/repo/sub/CLAUDE.md", "Never touch sub/.\n")),
                    _assistant("a2", "msg_2", _text("ok")),
                ],
            )
        )
        note = session.events[3]
        assert isinstance(note, Note) and note.pinned
        assert note.content == (
            TextPart(text="Contents of /repo/sub/CLAUDE.md:\n\nNever touch sub/.\n"),
        )
        assert note.meta["path"] == "/repo/sub/CLAUDE.md"

    def test_a_message_typed_while_the_agent_worked_is_the_users(self, tmp_path: Path) -> None:
        """A queued prompt is a user turn (not a notice), at the time it was typed."""
        session = _load(
            _write(
                tmp_path,
                [
                    _user("u1", "Count."),
                    _assistant("a1", "msg_1", _use("t1")),
                    _user("u2", [_result("t1", "1")]),
                    _attached("x1", _queued("The budget cap is now $900.")),
                    _assistant("a2", "msg_2", _text("Noted.")),
                ],
            )
        )
        turn = session.events[3]
        assert isinstance(turn, UserTurn) and not turn.notice
        assert turn.content == (TextPart(text="The budget cap is now $900."),)
        assert turn.timestamp == "2026-01-01T00:00:02Z"
        assert turn.meta["command_mode"] == "prompt"

    def test_a_queued_shell_command_is_a_notice(self, tmp_path: Path) -> None:
        """A queued command of another mode than a prompt is the harness's notice."""
        records = [_user("u1", "go"), _attached("x1", _queued("ls", mode="bash"))]
        turn = _load(_write(tmp_path, records)).events[1]
        assert isinstance(turn, UserTurn) and turn.notice

    def test_a_named_folder_is_a_notice_with_its_listing(self, tmp_path: Path) -> None:
        """`@sub/` is the harness's listing of the folder: a notice."""
        attachment = {"type": "directory", "path": "/repo/sub", "content": "a.py\nb.py"}
        turn = _load(
            _write(tmp_path, [_user("u1", "see @sub/"), _attached("x1", attachment)])
        ).events[1]
        assert isinstance(turn, UserTurn) and turn.notice
        assert turn.content == (TextPart(text="Listing of /repo/sub:\na.py\nb.py"),)

    def test_what_the_users_hooks_add_is_a_notice(self, tmp_path: Path) -> None:
        """A SessionStart or UserPromptSubmit hook's output, which the model is given, is a
        notice with it; another hook's success, which it is not, is counted."""
        start = {
            "type": "hook_success",
            "hookName": "SessionStart:startup",
            "hookEvent": "SessionStart",
            "content": "The repo uses tabs.",
            "stdout": "The repo uses tabs.\n",
            "exitCode": 0,
        }
        added = {
            "type": "hook_additional_context",
            "content": ["Deploy freeze until Friday."],
            "hookName": "UserPromptSubmit",
            "hookEvent": "UserPromptSubmit",
        }
        after_tool = start | {"hookEvent": "PostToolUse", "hookName": "PostToolUse:Bash"}
        empty = start | {"content": ""}
        session = _load(
            _write(
                tmp_path,
                [
                    _attached("x1", start),
                    _user("u1", "go"),
                    _attached("x2", added),
                    _attached("x3", after_tool),
                    _attached("x4", empty),
                ],
            )
        )
        texts = [(e.notice, e.content[0].text) for e in session.events]
        assert texts == [
            (True, "Context from the SessionStart hook:\nThe repo uses tabs."),
            (False, "go"),
            (True, "Context from the UserPromptSubmit hook:\nDeploy freeze until Friday."),
        ]
        assert session.meta["skipped_records"] == {"attachment:hook_success": 2}

    def test_other_kinds_are_counted_and_left_out(self, tmp_path: Path) -> None:
        """The harness's listings and reminders reach no event; the session counts them."""
        session = _load(
            _write(
                tmp_path,
                [
                    _user("u1", "go"),
                    _attached("x1", {"type": "skill_listing", "content": "- a skill"}),
                    _attached("x2", {"type": "agent_listing_delta", "addedTypes": []}),
                    _attached("x3", {"type": "skill_listing", "content": "- another"}),
                    _attached("x4", {"kind": "no type"}),
                    _attached("x5", {"type": "file", "content": {"type": "image"}}),
                ],
            )
        )
        assert [e.type for e in session.events] == ["user"]
        assert session.meta["skipped_records"] == {
            "attachment:?": 1,
            "attachment:agent_listing_delta": 1,
            "attachment:file": 1,
            "attachment:skill_listing": 2,
        }

    def test_what_is_attached_inside_a_turn_follows_its_results(self, tmp_path: Path) -> None:
        """An attachment between the lines of one message comes after all its results."""
        session = _load(
            _write(
                tmp_path,
                [
                    _user("u1", "go"),
                    _assistant("a1", "msg_1", _use("t1", "Read", file_path="/repo/sub/a.py")),
                    _user("u2", [_result("t1", "a")]),
                    _attached("x1", _memory("/repo/sub/CLAUDE.md", "rule")),
                    _attached("x2", _queued("and then stop")),
                    _assistant("a2", "msg_1", _use("t2")),
                    _user("u3", [_result("t2", "b")]),
                    _assistant("a3", "msg_2", _text("ok")),
                ],
            )
        )
        assert [e.type for e in session.events] == [
            "user",
            "assistant",
            "file_read",
            "tool_result",
            "note",
            "user",
            "assistant",
        ]
        graph = ContextGraph(counter=WordCounter())
        graph.ingest(session.events)  # a valid conversation: every call answered in place

    @settings(max_examples=60, deadline=None)
    @given(
        st.lists(
            st.sampled_from(["file", "memory", "queued", "folder", "listing", "edited", "todo"]),
            max_size=6,
        ),
        st.lists(st.integers(min_value=0, max_value=6), max_size=6),
    )
    def test_attachments_anywhere_keep_the_session_valid(
        self, kinds: list[str], places: list[int]
    ) -> None:
        """Attachments placed anywhere in a session with parallel calls import, and every
        tool result still directly follows the turn that called it."""
        made = {
            "file": lambda: _file("/repo/n.txt", "n"),
            "memory": lambda: _memory("/repo/CLAUDE.md", "rule"),
            "queued": lambda: _queued("more"),
            "folder": lambda: {"type": "directory", "path": "/repo", "content": "n.txt"},
            "listing": lambda: {"type": "skill_listing", "content": "- s"},
            "edited": lambda: {
                "type": "edited_text_file",
                "filename": "/repo/n.txt",
                "snippet": "1\tm",
            },
            "todo": lambda: {"type": "todo_reminder", "content": [], "itemCount": 0},
        }
        records: list[Record] = [
            _user("u1", "go"),
            _assistant("a1", "msg_1", _text("Two calls.")),
            _assistant("a2", "msg_1", _use("t1")),
            _user("u2", [_result("t1", "one")]),
            _assistant("a3", "msg_1", _use("t2")),
            _user("u3", [_result("t2", "two")]),
            _assistant("a4", "msg_2", _text("Done.")),
        ]
        for number, (kind, place) in enumerate(zip(kinds, places, strict=False)):
            records.insert(min(place + 1, len(records)), _attached(f"x{number}", made[kind]()))
        with tempfile.TemporaryDirectory() as folder:
            session = _load(_write(Path(folder), records))
        types = [e.type for e in session.events]
        turns = [i for i, t in enumerate(types) if t == "assistant"]
        assert types[turns[0] + 1 : turns[0] + 3] == ["tool_result", "tool_result"]
        ContextGraph(counter=WordCounter()).ingest(session.events)

    @pytest.mark.parametrize(
        ("attachment", "path"),
        [
            ({"type": "file", "content": "text"}, "attachment.content"),
            ({"type": "file", "content": {"type": "text", "file": 3}}, "attachment.content.file"),
            (_file("", "x"), "attachment.content.file.filePath"),
            (
                {"type": "file", "content": {"type": "text", "file": {"filePath": "/a"}}},
                "attachment.content.file.content",
            ),
            (
                {"type": "nested_memory", "content": {"path": "/a", "content": 1}},
                "attachment.content.content",
            ),
            ({"type": "queued_command", "prompt": ["x"]}, "attachment.prompt"),
            ({"type": "queued_command", "prompt": "x", "commandMode": 2}, "attachment.commandMode"),
            ({"type": "directory", "path": "/a"}, "attachment.content"),
            ({"type": "hook_additional_context", "content": [3]}, "attachment.content"),
            (
                {"type": "hook_success", "hookEvent": "SessionStart", "content": {"a": 1}},
                "attachment.content",
            ),
        ],
        ids=[
            "file content not an object",
            "file info not an object",
            "empty path",
            "file text missing",
            "memory text not a string",
            "prompt not a string",
            "mode not a string",
            "listing missing",
            "hook context not text",
            "hook output not text",
        ],
    )
    def test_a_malformed_attachment_names_its_line_and_field(
        self, tmp_path: Path, attachment: Record, path: str
    ) -> None:
        """An attachment of a kind read here that lacks what it needs is refused, naming
        the line and the field; a graph given the session is left as it was."""
        file = _write(tmp_path, [_user("u1", "hi"), _attached("x1", attachment)])
        with pytest.raises(IngestError) as info:
            load_sessions(file, format="claude_code")
        assert (info.value.location.line, info.value.location.path) == (2, path)
        graph = ContextGraph(counter=WordCounter())
        graph.add_user("earlier")
        before = graph_snapshot(graph)
        with pytest.raises(IngestError):
            graph.ingest(load_sessions(file, format="claude_code")[0].events)
        assert graph_snapshot(graph) == before


_SNIPPET = "2\tbeta budget cap is $800"

#: One attachment of each kind read as a notice (the fields Claude Code 2.1.197 builds its
#: message from), with a piece of the notice it must become.
_REMINDERS: list[tuple[Record, str]] = [
    (
        {"type": "edited_text_file", "filename": "/repo/notes.txt", "snippet": _SNIPPET},
        "/repo/notes.txt was changed outside the agent (by the user or a tool such as a "
        "linter) since it was read; the change is intended and stays.\nThe changed lines:\n"
        + _SNIPPET,
    ),
    (
        {"type": "edited_text_file", "filename": "/repo/notes.txt", "snippet": ""},
        "the change is intended and stays.",
    ),
    (
        {
            "type": "selected_lines_in_ide",
            "ideName": "VS Code",
            "lineStart": 3,
            "lineEnd": 4,
            "filename": "/repo/a.py",
            "content": "x = 1\ny = 2",
        },
        "The user selected lines 3-4 of /repo/a.py in the IDE:\nx = 1\ny = 2",
    ),
    (
        {"type": "selected_lines_in_diff", "lineCount": 1, "content": "+ x = 2"},
        "the diff view:\n+ x = 2",
    ),
    ({"type": "opened_file_in_ide", "filename": "/repo/b.py"}, "The user opened /repo/b.py"),
    (
        {
            "type": "plan_file_reference",
            "planFilePath": "/home/u/.claude/plans/p.md",
            "planContent": "1. Fix the parser",
        },
        "The plan, from /home/u/.claude/plans/p.md:\n1. Fix the parser",
    ),
    (
        {
            "type": "todo_reminder",
            "content": [
                {"content": "Write the test", "status": "completed", "activeForm": "Writing"},
                {"content": "Fix the bug", "status": "in_progress", "activeForm": "Fixing"},
            ],
            "itemCount": 2,
        },
        "The todo list:\n1. [completed] Write the test\n2. [in_progress] Fix the bug",
    ),
    (
        {"type": "task_reminder", "content": [{"id": "7", "status": "pending", "subject": "Ship"}]},
        "The task list:\n#7 [pending] Ship",
    ),
    (
        {
            "type": "relevant_memories",
            "memories": [{"path": "/m/db.md", "content": "Use port 5433.", "mtimeMs": 1}],
        },
        "Memory file /m/db.md:\nUse port 5433.",
    ),
    (
        {
            "type": "diagnostics",
            "files": [
                {
                    "uri": "file:///repo/a.py",
                    "diagnostics": [
                        {
                            "message": "Undefined name 'y'",
                            "severity": "Error",
                            "range": {
                                "start": {"line": 4, "character": 0},
                                "end": {"line": 4, "character": 1},
                            },
                            "code": "F821",
                            "source": "ruff",
                        }
                    ],
                }
            ],
            "isNew": True,
        },
        "file:///repo/a.py:\n  Error at line 5, column 1: Undefined name 'y' [F821] (ruff)",
    ),
    (
        {
            "type": "mcp_resource",
            "server": "docs",
            "uri": "docs://api",
            "name": "api",
            "content": {"contents": [{"uri": "docs://api", "text": "GET /v2/items"}]},
        },
        "The resource docs://api of the MCP server docs:\nGET /v2/items",
    ),
    (
        {
            "type": "invoked_skills",
            "skills": [{"name": "deploy", "path": "/s/deploy.md", "content": "Tag first."}],
        },
        "Skill deploy:\nTag first.",
    ),
    ({"type": "critical_system_reminder", "content": "Never push."}, "Never push."),
    ({"type": "date_change", "newDate": "2026-12-08"}, "The date is now 2026-12-08."),
    ({"type": "agent_mention", "agentType": "Explore"}, "the Explore agent"),
    ({"type": "compact_file_reference", "filename": "/repo/big.py"}, "/repo/big.py was read"),
    (
        {"type": "pdf_reference", "filename": "/d/spec.pdf", "pageCount": 90, "fileSize": 1},
        "/d/spec.pdf is a PDF",
    ),
    (
        {"type": "plan_mode", "reminderType": "full", "planFilePath": "/p.md", "planExists": False},
        "Plan mode is on: read only, no edits or commands that change anything except the "
        "plan file /p.md.",
    ),
    ({"type": "plan_mode_exit", "planFilePath": "/p.md", "planExists": True}, "Plan mode is off"),
    (
        {
            "type": "task_status",
            "taskId": "b1",
            "taskType": "local_bash",
            "description": "npm test",
            "status": "completed",
            "deltaSummary": "3 failed",
        },
        "Background task b1 (npm test): completed. 3 failed",
    ),
    (
        {
            "type": "hook_blocking_error",
            "hookName": "PreToolUse:Bash",
            "blockingError": {"command": "./guard.sh", "blockingError": "no rm -rf"},
        },
        "The PreToolUse:Bash hook blocked (command ./guard.sh): no rm -rf",
    ),
    (
        {"type": "hook_stopped_continuation", "hookName": "Stop", "message": "tests failing"},
        "The Stop hook stopped the agent: tests failing",
    ),
]


class TestReminders:
    @pytest.mark.parametrize(
        ("attachment", "told"),
        _REMINDERS,
        ids=[f"{number}-{record['type']}" for number, (record, _) in enumerate(_REMINDERS)],
    )
    def test_what_the_harness_told_the_model_is_a_notice(
        self, tmp_path: Path, attachment: Record, told: str
    ) -> None:
        """A file the user edited, the IDE's selection, the plan, the todo list, the
        diagnostics, the mode...: what the model was told about the session's state is a
        notice holding it, after the user's turn, marked with its kind."""
        session = _load(_write(tmp_path, [_user("u1", "go"), _attached("x1", attachment)]))
        turn = session.events[1]
        assert isinstance(turn, UserTurn) and turn.notice
        assert told in turn.content[0].text
        assert turn.meta["attachment"] == attachment["type"]
        assert "skipped_records" not in session.meta or not any(
            key.startswith("attachment:") for key in session.meta["skipped_records"]
        )

    def test_an_edit_on_disk_reaches_the_request(self, tmp_path: Path) -> None:
        """The value a user's edit put in a file the agent read reaches the model."""
        edited = {"type": "edited_text_file", "filename": "/repo/notes.txt", "snippet": _SNIPPET}
        session = _load(
            _write(
                tmp_path,
                [
                    _user("u1", "go"),
                    _assistant("a1", "msg_1", _use("t1", "Read", file_path="/repo/notes.txt")),
                    _user("u2", [_result("t1", "1\talpha\n2\tbeta budget cap is $500")]),
                    _assistant("a2", "msg_2", _text("Read it.")),
                    _user("u3", "and now?"),
                    _attached("x1", edited),
                ],
            )
        )
        graph = ContextGraph(counter=WordCounter())
        graph.ingest(session.events)
        rendered = str(Renderer(format="anthropic").render(graph).payload)
        assert "$800" in rendered and "$500" in rendered

    def test_nothing_to_tell_is_counted(self, tmp_path: Path) -> None:
        """An empty todo list, no memories, no diagnostics: no notice; the session counts
        each as a record it did not read."""
        empty = [
            {"type": "todo_reminder", "content": [], "itemCount": 0},
            {"type": "relevant_memories", "memories": []},
            {"type": "diagnostics", "files": [{"uri": "file:///a", "diagnostics": []}]},
        ]
        records = [_user("u1", "go")]
        records += [_attached(f"x{n}", attachment) for n, attachment in enumerate(empty)]
        session = _load(_write(tmp_path, records))
        assert [e.type for e in session.events] == ["user"]
        assert session.meta["skipped_records"] == {
            "attachment:diagnostics": 1,
            "attachment:relevant_memories": 1,
            "attachment:todo_reminder": 1,
        }

    @pytest.mark.parametrize(
        ("attachment", "path"),
        [
            ({"type": "edited_text_file", "filename": "/a"}, "attachment.snippet"),
            (
                {"type": "selected_lines_in_ide", "filename": "/a", "lineStart": "3"},
                "attachment.lineStart",
            ),
            ({"type": "todo_reminder", "content": "x"}, "attachment.content"),
            ({"type": "todo_reminder", "content": [3]}, "attachment.content[0]"),
            (
                {"type": "todo_reminder", "content": [{"content": "a", "status": None}]},
                "attachment.content[0].status",
            ),
            (
                {
                    "type": "diagnostics",
                    "files": [{"uri": "u", "diagnostics": [{"message": "m", "range": {}}]}],
                },
                "attachment.files[0].diagnostics[0].range.start",
            ),
            (
                {
                    "type": "mcp_resource",
                    "server": "s",
                    "uri": "u",
                    "content": {"contents": [{"text": 5}]},
                },
                "attachment.content.contents[0].text",
            ),
            (
                {"type": "hook_blocking_error", "hookName": "H", "blockingError": "x"},
                "attachment.blockingError",
            ),
            ({"type": "date_change", "newDate": 20261208}, "attachment.newDate"),
        ],
        ids=[
            "snippet missing",
            "line not a number",
            "todo list not a list",
            "todo entry not an object",
            "todo status not text",
            "diagnostic range without start",
            "resource text not text",
            "hook error not an object",
            "date not text",
        ],
    )
    def test_a_malformed_reminder_names_its_line_and_field(
        self, tmp_path: Path, attachment: Record, path: str
    ) -> None:
        """A reminder that lacks what its notice is made of is refused, naming the line
        and the field."""
        file = _write(tmp_path, [_user("u1", "hi"), _attached("x1", attachment)])
        with pytest.raises(IngestError) as info:
            load_sessions(file, format="claude_code")
        assert (info.value.location.line, info.value.location.path) == (2, path)


class TestUnchangedRead:
    def test_a_read_of_an_unchanged_file_stays_a_result(self, tmp_path: Path) -> None:
        """Claude Code answers a second read of an unchanged file with a note, not the
        file: a plain result, which leaves the first read the file's latest version."""
        info = {
            "filePath": "/repo/a.py",
            "content": "x",
            "numLines": 1,
            "startLine": 1,
            "totalLines": 1,
        }
        session = _load(
            _write(
                tmp_path,
                [
                    _user("u1", "go"),
                    _assistant("a1", "msg_1", _use("t1", "Read", file_path="/repo/a.py")),
                    _user(
                        "u2", [_result("t1", "1\tx")], toolUseResult={"type": "text", "file": info}
                    ),
                    _assistant("a2", "msg_2", _use("t2", "Read", file_path="/repo/a.py")),
                    _user(
                        "u3",
                        [_result("t2", "File unchanged since your last Read.")],
                        toolUseResult={
                            "type": "file_unchanged",
                            "file": {"filePath": "/repo/a.py"},
                        },
                    ),
                ],
            )
        )
        first, second = session.events[2], session.events[4]
        assert isinstance(first, FileRead)
        assert isinstance(second, ToolResult) and not isinstance(second, FileRead)
        graph = ContextGraph(counter=WordCounter())
        graph.ingest(session.events)
        (read,) = graph.by_path("/repo/a.py")
        node = graph[read]
        assert isinstance(node, FileNode) and node.text.endswith("1\tx")
        assert graph.sources(read, "supersedes") == ()
