from __future__ import annotations

import functools
import itertools
import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from context_graph.errors import IngestError
from context_graph.graph.content import ImagePart, TextPart, ThinkingPart
from context_graph.graph.context_graph import ContextGraph
from context_graph.graph.events import (
    AssistantTurn,
    Compaction,
    FileRead,
    SubagentResult,
    ToolResult,
    UserTurn,
)
from context_graph.graph.nodes import (
    AssistantNode,
    FileNode,
    SubagentResultNode,
    SummaryNode,
    ToolCallNode,
    UserNode,
)
from context_graph.importers import (
    ImportedSession,
    RawInput,
    claude_code,
    detect_format,
    load_sessions,
)
from context_graph.testing import WordCounter, graph_snapshot

TRACES = Path(__file__).resolve().parents[3].parent / "shared" / "traces"
CLAUDE_CODE = TRACES / "claude_code"
ALL_FILES = sorted(CLAUDE_CODE.rglob("*.jsonl")) if CLAUDE_CODE.is_dir() else []
MAIN_FILES = [p for p in ALL_FILES if p.parent.name != "subagents"]
needs_traces = pytest.mark.skipif(not ALL_FILES, reason="shared Claude Code traces are absent")

Record = dict[str, Any]


# --- reading the raw JSONL independently of the importer -----------------------------------


@functools.cache
def _records(path: Path) -> list[tuple[int, Record]]:
    """Every record with its 1-based line number; blank and `//` lines skipped."""
    found = []
    for number, line in enumerate(path.read_text("utf-8").split("\n"), start=1):
        if line.strip() and not line.lstrip().startswith("//"):
            found.append((number, json.loads(line)))
    return found


def _blocks(record: Record) -> list[Record]:
    message = record.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    return content if isinstance(content, list) else []


def _conversation(path: Path) -> Iterator[tuple[int, Record]]:
    return ((n, r) for n, r in _records(path) if r.get("type") in ("user", "assistant"))


def _tool_uses(path: Path) -> dict[str, Record]:
    return {b["id"]: b for _, r in _records(path) for b in _blocks(r) if b["type"] == "tool_use"}


def _results(path: Path) -> Iterator[tuple[Record, Record, Record]]:
    """(record, tool_result block, its tool_use block) in file order."""
    uses = _tool_uses(path)
    for _, record in _conversation(path):
        for block in _blocks(record):
            if block["type"] == "tool_result":
                yield record, block, uses[block["tool_use_id"]]


def _assistant_segments(path: Path) -> list[tuple[str, int]]:
    """(message id, tool_use count) of each assistant message as Claude Code streamed it.

    A new message starts at an assistant line with another id; a user line with anything
    but tool results (a compaction summary included) or a compact boundary ends it.
    """
    segments: list[tuple[str, int]] = []
    current: str | None = None
    for _, record in _records(path):
        if record.get("subtype") == "compact_boundary":
            current = None
        elif record.get("type") == "assistant":
            uses = sum(1 for b in _blocks(record) if b["type"] == "tool_use")
            if record["message"]["id"] != current:
                current = record["message"]["id"]
                segments.append((current, 0))
            segments[-1] = (current, segments[-1][1] + uses)
        elif record.get("type") == "user":
            content = record["message"]["content"]
            if isinstance(content, str) or any(b["type"] != "tool_result" for b in content):
                current = None
    return segments


def _is_whole_read(record: Record, use: Record) -> bool:
    arguments = use["input"]
    if "offset" in arguments or "limit" in arguments:
        return False
    details = record.get("toolUseResult")
    info = details.get("file") if isinstance(details, dict) else None
    return info is None or (info["startLine"] == 1 and info["numLines"] >= info["totalLines"])


# --- loading -------------------------------------------------------------------------------


def _graph(session: ImportedSession) -> ContextGraph:
    graph = ContextGraph(counter=WordCounter())
    graph.ingest(session.events)
    return graph


@functools.cache
def _main(path: Path) -> tuple[ImportedSession, ContextGraph]:
    session = load_sessions(path)[0]
    return session, _graph(session)


def _nodes(graph: ContextGraph, cls: type[Any]) -> list[Any]:
    return [n for n in graph if isinstance(n, cls)]


def _call_node(graph: ContextGraph, call_id: str) -> ToolCallNode:
    (node,) = [n for n in _nodes(graph, ToolCallNode) if n.tool_call_id == call_id]
    return node


def _names(paths: list[Path]) -> list[str]:
    return [p.relative_to(CLAUDE_CODE).as_posix() for p in paths]


@needs_traces
class TestEveryTrace:
    @pytest.mark.parametrize("path", ALL_FILES, ids=_names(ALL_FILES))
    def test_every_session_ingests(self, path: Path) -> None:
        """Every file, main or sub-agent, is detected and each of its sessions ingests."""
        assert detect_format(path) == "claude_code"
        for session in load_sessions(path):
            assert len(_graph(session)) > 0

    @pytest.mark.parametrize("path", MAIN_FILES, ids=_names(MAIN_FILES))
    def test_subagent_transcripts_follow_the_main_session(self, path: Path) -> None:
        """The main session comes first, then one session per `subagents/agent-*.jsonl`."""
        folder = path.parent / path.stem / "subagents"
        expected = sorted(p.stem for p in folder.glob("agent-*.jsonl")) if folder.is_dir() else []
        sessions = load_sessions(path)
        assert [s.name for s in sessions] == [path.stem, *expected]
        for sub in sessions[1:]:
            assert sub.meta["parent_session"] == path.stem
            assert sub.meta["compaction_run"] is sub.name.startswith("agent-acompact")

    @pytest.mark.parametrize("path", ALL_FILES, ids=_names(ALL_FILES))
    def test_tool_calls_match_tool_use_blocks(self, path: Path) -> None:
        """There is one tool-call node per tool_use block, in file order."""
        uses = [b["id"] for _, r in _records(path) for b in _blocks(r) if b["type"] == "tool_use"]
        _, graph = _main(path)
        assert [n.tool_call_id for n in _nodes(graph, ToolCallNode)] == uses

    @pytest.mark.parametrize("path", ALL_FILES, ids=_names(ALL_FILES))
    def test_assistant_lines_merge_by_message_id(self, path: Path) -> None:
        """Lines sharing a message id make one turn holding all their calls.

        Turns equal distinct message ids, except where a resumed session writes an
        earlier message again after user input: that copy is a turn of its own.
        """
        segments = _assistant_segments(path)
        _, graph = _main(path)
        turns = _nodes(graph, AssistantNode)
        assert [(t.message_id, _calls(graph, t)) for t in turns] == segments
        ids = {r["message"]["id"] for _, r in _conversation(path) if r["type"] == "assistant"}
        assert {t.message_id for t in turns} == ids

    @pytest.mark.parametrize("path", ALL_FILES, ids=_names(ALL_FILES))
    def test_results_come_after_their_merged_turn(self, path: Path) -> None:
        """Every result sits after the turn that made its call, whatever the line order."""
        _, graph = _main(path)
        order = {node_id: i for i, node_id in enumerate(graph.transcript())}
        for call in _nodes(graph, ToolCallNode):
            answer = graph.answer_to(call.id)
            if answer is not None:
                assert order[answer.id] > order[call.assistant_id]

    @pytest.mark.parametrize("path", ALL_FILES, ids=_names(ALL_FILES))
    def test_reads_become_versioned_file_nodes(self, path: Path) -> None:
        """Each successful Read is a file node with its path and a per-path version."""
        expected = []
        seen: dict[str, int] = {}
        for record, block, use in _results(path):
            if use["name"] != "Read" or block.get("is_error"):
                continue
            details = record.get("toolUseResult")
            file_path = (
                details["file"]["filePath"]
                if isinstance(details, dict)
                else use["input"]["file_path"]
            )
            seen[file_path] = seen.get(file_path, 0) + 1
            expected.append((use["id"], file_path, seen[file_path]))
        _, graph = _main(path)
        files = _nodes(graph, FileNode)
        assert [(n.tool_call_id, n.path, n.version) for n in files] == expected

    def test_whole_file_rereads_supersede_the_previous_read(self) -> None:
        """A file read whole again supersedes its previous read (and traces have such rereads)."""
        checked = 0
        for path in ALL_FILES:
            reads: dict[str, list[bool]] = {}
            for record, block, use in _results(path):
                if use["name"] == "Read" and not block.get("is_error"):
                    reads.setdefault(use["input"]["file_path"], []).append(
                        _is_whole_read(record, use)
                    )
            _, graph = _main(path)
            for file_path, whole in reads.items():
                if len(whole) < 2 or not all(whole):
                    continue
                nodes = graph.by_path(file_path)
                for older, newer in itertools.pairwise(nodes):
                    assert graph.targets(newer, "supersedes") == (older,)
                    assert graph.is_superseded(older)
                    checked += 1
                assert not graph.is_superseded(nodes[-1])
        assert checked > 0

    @pytest.mark.parametrize("path", ALL_FILES, ids=_names(ALL_FILES))
    def test_subagent_results_link_call_and_transcript(self, path: Path) -> None:
        """A sub-agent run answers and is `spawned_by` its Task call, naming its transcript."""
        expected = []
        for record, block, use in _results(path):
            details = record.get("toolUseResult")
            if (
                use["name"] in ("Task", "Agent")
                and isinstance(details, dict)
                and not block.get("is_error")
            ):
                transcript = f"{path.stem}/subagents/agent-{details['agentId']}.jsonl"
                expected.append(
                    (
                        use["id"],
                        details["agentId"],
                        transcript if (path.parent / transcript).is_file() else None,
                    )
                )
        _, graph = _main(path)
        runs = _nodes(graph, SubagentResultNode)
        assert [(n.tool_call_id, n.agent_id, n.transcript) for n in runs] == expected
        for node in runs:
            call = _call_node(graph, node.tool_call_id)
            assert graph.targets(node.id, "spawned_by") == (call.id,)
            assert graph.call_of(node.id) == call

    def test_some_subagent_transcripts_are_linked(self) -> None:
        """The traces hold sub-agent runs whose transcript file is found and linked."""
        linked = [
            path.parent / n.transcript
            for path in MAIN_FILES
            for n in _nodes(_main(path)[1], SubagentResultNode)
            if n.transcript is not None
        ]
        assert linked
        assert all(t.is_file() for t in linked)

    def test_a_copied_session_imports_to_the_same_ids(self, tmp_path: Path) -> None:
        """The same session, with its sub-agents, read from another folder gives the same graph."""
        path = next(
            p
            for p in MAIN_FILES
            if any(n.transcript for n in _nodes(_main(p)[1], SubagentResultNode))
        )
        copy = tmp_path / "elsewhere" / path.name
        copy.parent.mkdir()
        copy.write_bytes(path.read_bytes())
        shutil.copytree(path.parent / path.stem, copy.parent / path.stem)
        dumped = [[e.model_dump() for e in s.events] for s in load_sessions(path)]
        assert [[e.model_dump() for e in s.events] for s in load_sessions(copy)] == dumped
        assert graph_snapshot(_main(copy)[1]) == graph_snapshot(_main(path)[1])

    @pytest.mark.parametrize("path", ALL_FILES, ids=_names(ALL_FILES))
    def test_thinking_signatures_survive_byte_for_byte(self, path: Path) -> None:
        """Every thinking block reaches the graph with its text and signature unchanged."""
        expected = [
            (b["thinking"], b.get("signature"))
            for _, r in _conversation(path)
            for b in _blocks(r)
            if b["type"] == "thinking"
        ]
        _, graph = _main(path)
        found = [
            (p.thinking, p.signature)
            for n in _nodes(graph, AssistantNode)
            for p in n.content
            if isinstance(p, ThinkingPart)
        ]
        assert found == expected

    @pytest.mark.parametrize("path", ALL_FILES, ids=_names(ALL_FILES))
    def test_compact_summary_becomes_a_summary_node(self, path: Path) -> None:
        """Claude Code's compaction summary is a summary node of origin claude_code."""
        expected = [
            r["message"]["content"] for _, r in _conversation(path) if r.get("isCompactSummary")
        ]
        _, graph = _main(path)
        summaries = _nodes(graph, SummaryNode)
        assert [(s.text, s.origin) for s in summaries] == [
            (text, "claude_code") for text in expected
        ]
        for summary in summaries:
            earlier = graph.transcript()[: graph.transcript().index(summary.id)]
            assert summary.abstracts == earlier

    def test_compaction_meta_comes_from_the_boundary(self) -> None:
        """The compaction event carries the boundary's trigger and token count."""
        checked = 0
        for path in MAIN_FILES:
            boundaries = [r for _, r in _records(path) if r.get("subtype") == "compact_boundary"]
            session, _ = _main(path)
            compactions = [e for e in session.events if isinstance(e, Compaction)]
            for boundary, event in zip(boundaries, compactions, strict=True):
                assert event.meta["trigger"] == boundary["compactMetadata"]["trigger"]
                assert event.meta["pre_tokens"] == boundary["compactMetadata"]["preTokens"]
                checked += 1
        assert checked > 0

    @pytest.mark.parametrize("path", ALL_FILES, ids=_names(ALL_FILES))
    def test_user_images_become_image_parts(self, path: Path) -> None:
        """Image blocks in user turns are image parts with their data."""
        expected = [
            (b["source"]["media_type"], b["source"]["data"])
            for _, r in _conversation(path)
            if r["type"] == "user"
            for b in _blocks(r)
            if b["type"] == "image"
        ]
        _, graph = _main(path)
        found = [
            (p.media_type, p.data)
            for n in _nodes(graph, UserNode)
            for p in n.content
            if isinstance(p, ImagePart)
        ]
        assert found == expected

    def test_traces_have_images(self) -> None:
        """At least one trace sends images, so the image test is not empty."""
        assert any(
            b["type"] == "image" for p in ALL_FILES for _, r in _conversation(p) for b in _blocks(r)
        )

    def test_comment_line_files_ingest_with_true_line_numbers(self) -> None:
        """Files that begin with `//` comment lines ingest, and events keep real line numbers."""
        commented = [p for p in ALL_FILES if p.read_text("utf-8").startswith("//")]
        assert commented
        for path in commented:
            session, graph = _main(path)
            first_line = next(n for n, _ in _conversation(path))
            assert session.events[0].source.line == first_line
            assert len(graph) > 0

    @pytest.mark.parametrize("path", ALL_FILES, ids=_names(ALL_FILES))
    def test_unanswered_calls_match_the_file(self, path: Path) -> None:
        """The calls that never got a result are the graph's unanswered calls, in order."""
        pending: list[str] = []
        for _, record in _conversation(path):
            for block in _blocks(record):
                if block["type"] == "tool_use":
                    pending.append(block["id"])
                elif block["type"] == "tool_result":
                    pending.remove(block["tool_use_id"])
        _, graph = _main(path)
        assert [graph[i].tool_call_id for i in graph.unanswered_calls()] == pending

    def test_a_session_ends_with_an_unanswered_call(self) -> None:
        """Some trace ends with a call that has no result, and the graph shows it open."""
        ending = []
        for path in MAIN_FILES:
            _, graph = _main(path)
            open_calls = graph.unanswered_calls()
            if open_calls and graph.transcript()[-1] == open_calls[-1]:
                ending.append(path)
        assert ending

    @pytest.mark.parametrize("path", ALL_FILES, ids=_names(ALL_FILES))
    def test_every_event_names_its_line(self, path: Path) -> None:
        """Every event's source names the file and the line of a conversation record."""
        lines = {n for n, _ in _conversation(path)}
        session, _ = _main(path)
        for event in session.events:
            assert event.source.file == str(path)
            assert event.source.line in lines

    @pytest.mark.parametrize("path", ALL_FILES, ids=_names(ALL_FILES))
    def test_session_meta_comes_from_the_records(self, path: Path) -> None:
        """Session id, working directory and models are taken from the records."""
        records = [r for _, r in _records(path)]
        session, _ = _main(path)
        assert session.meta["format"] == "claude_code"
        assert session.meta["session_id"] == next(
            r["sessionId"] for r in records if "sessionId" in r
        )
        assert session.meta["cwd"] == next(r["cwd"] for r in records if "cwd" in r)
        models = {r["message"]["model"] for r in records if r.get("type") == "assistant"}
        assert set(session.meta["models"]) == models - {"<synthetic>"}
        skipped = sum(1 for r in records if r["type"] not in ("user", "assistant"))
        boundaries = sum(1 for r in records if r.get("subtype") == "compact_boundary")
        assert sum(session.meta["skipped_records"].values()) == skipped - boundaries


# --- hand-made sessions --------------------------------------------------------------------

_SESSION = {"sessionId": "s-1", "cwd": "/repo", "gitBranch": "main", "version": "2.1.0"}


def _user(uuid: str, content: Any, **extra: Any) -> Record:
    message = {"role": "user", "content": content}
    return {
        "type": "user",
        "uuid": uuid,
        "timestamp": "2026-01-01T00:00:00Z",
        **_SESSION,
        "message": message,
        **extra,
    }


def _assistant(uuid: str, message_id: str, block: Record, **extra: Any) -> Record:
    message = {"id": message_id, "model": "claude-test", "role": "assistant", "content": [block]}
    return {
        "type": "assistant",
        "uuid": uuid,
        "requestId": "req_1",
        **_SESSION,
        "message": message,
        **extra,
    }


def _use(call_id: str, name: str = "Bash", **arguments: Any) -> Record:
    return {"type": "tool_use", "id": call_id, "name": name, "input": arguments}


def _result(call_id: str, content: Any = "ok", **extra: Any) -> Record:
    return {"type": "tool_result", "tool_use_id": call_id, "content": content, **extra}


def _text(text: str) -> Record:
    return {"type": "text", "text": text}


def _write(folder: Path, records: list[Any], name: str = "session.jsonl", head: str = "") -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(head + "".join(json.dumps(r) + "\n" for r in records), "utf-8")
    return path


def _events(path: Path) -> list[Any]:
    return list(load_sessions(path, format="claude_code")[0].events)


def _calls(graph: ContextGraph, turn: AssistantNode) -> int:
    return len(graph.sources(turn.id, "issued_by"))


class TestMerging:
    def test_results_between_lines_of_one_message(self, tmp_path: Path) -> None:
        """Lines of one message id are one turn; results read between them come after it."""
        path = _write(
            tmp_path,
            [
                _user("u1", "go"),
                _assistant("a1", "msg_1", _text("Two calls.")),
                _assistant("a2", "msg_1", _use("t1")),
                {"type": "progress", "uuid": "p1", **_SESSION, "data": {}},
                _user("u2", [_result("t1", "one")]),
                _assistant("a3", "msg_1", _use("t2")),
                _user("u3", [_result("t2", "two")]),
                _assistant("a4", "msg_2", _text("Done.")),
            ],
        )
        events = _events(path)
        assert [e.type for e in events] == [
            "user",
            "assistant",
            "tool_result",
            "tool_result",
            "assistant",
        ]
        turn = events[1]
        assert isinstance(turn, AssistantTurn)
        assert turn.content == (TextPart(text="Two calls."),)
        assert [c.id for c in turn.tool_calls] == ["t1", "t2"]
        assert turn.meta["uuids"] == ["a1", "a2", "a3"]
        assert turn.source.line == 2
        assert [e.source.line for e in events[2:4]] == [5, 7]

    def test_message_id_after_user_input_starts_a_new_turn(self, tmp_path: Path) -> None:
        """A message id seen again after user text (a resumed copy) is another turn."""
        path = _write(
            tmp_path,
            [
                _user("u1", "hi"),
                _assistant("a1", "msg_1", _text("hello")),
                _user("u2", "hi"),
                _assistant("a2", "msg_1", _text("hello")),
            ],
        )
        assert [e.type for e in _events(path)] == ["user", "assistant", "user", "assistant"]

    def test_results_and_text_in_one_line(self, tmp_path: Path) -> None:
        """A user line with results and text gives the results, then a user turn."""
        path = _write(
            tmp_path,
            [
                _assistant("a1", "msg_1", _use("t1")),
                _user("u1", [_result("t1"), _text("and also")]),
            ],
        )
        events = _events(path)
        assert [e.type for e in events] == ["assistant", "tool_result", "user"]
        assert events[2].content == (TextPart(text="and also"),)

    def test_compaction_boundary_and_summary(self, graph: ContextGraph, tmp_path: Path) -> None:
        """A compact boundary and the summary line after it make one compaction event."""
        boundary = {
            "type": "system",
            "subtype": "compact_boundary",
            "uuid": "b1",
            "parentUuid": None,
            "compactMetadata": {"trigger": "manual", "preTokens": 1234},
            **_SESSION,
        }
        path = _write(
            tmp_path,
            [
                _user("u1", "work"),
                _assistant("a1", "msg_1", _text("working")),
                boundary,
                _user("u2", "Summary: we worked.", isCompactSummary=True),
                _user("u3", "go on"),
            ],
        )
        events = _events(path)
        assert [e.type for e in events] == ["user", "assistant", "compaction", "user"]
        compaction = events[2]
        assert isinstance(compaction, Compaction)
        assert compaction.origin == "claude_code"
        assert compaction.content == (TextPart(text="Summary: we worked."),)
        assert compaction.meta == {
            "uuid": "u2",
            "boundary_uuid": "b1",
            "trigger": "manual",
            "pre_tokens": 1234,
        }
        graph.ingest(events)
        (summary,) = _nodes(graph, SummaryNode)
        assert len(summary.abstracts) == 2

    def test_meta_and_skipped_records(self, tmp_path: Path) -> None:
        """Turns keep uuids and flags; skipped record types are counted in the session meta."""
        path = _write(
            tmp_path,
            [
                {"type": "file-history-snapshot", "messageId": "m", "snapshot": {}},
                {"type": "summary", "summary": "A title", "leafUuid": "u1"},
                {"type": "system", "subtype": "turn_duration", "uuid": "x", **_SESSION},
                _user("u1", "<system-reminder>x</system-reminder>", isMeta=True),
            ],
        )
        (session,) = load_sessions(path)
        assert session.meta["skipped_records"] == {
            "file-history-snapshot": 1,
            "summary": 1,
            "system": 1,
        }
        assert session.meta["title"] == "A title"
        assert session.meta["git_branch"] == "main"
        assert session.events[0].meta == {"uuid": "u1", "is_meta": True}


class TestToolResultMetadata:
    def test_read_with_claude_code_metadata(self, tmp_path: Path) -> None:
        """A Read result with `toolUseResult.file` is a file read over the lines it names."""
        info = {
            "filePath": "/repo/a.py",
            "content": "x",
            "startLine": 10,
            "numLines": 5,
            "totalLines": 40,
        }
        path = _write(
            tmp_path,
            [
                _assistant(
                    "a1", "msg_1", _use("t1", "Read", file_path="/repo/a.py", offset=10, limit=5)
                ),
                _user(
                    "u1", [_result("t1", "    10→x")], toolUseResult={"type": "text", "file": info}
                ),
            ],
        )
        read = _events(path)[1]
        assert isinstance(read, FileRead)
        assert (read.path, read.call_id, read.line_range) == ("/repo/a.py", "t1", (10, 14))
        assert read.content == (TextPart(text="    10→x"),)
        assert read.meta["total_lines"] == 40

    @pytest.mark.parametrize(
        ("arguments", "line_range"),
        [
            ({}, None),
            ({"offset": 20}, (20, None)),
            ({"limit": 10}, (1, 10)),
            ({"offset": 15, "limit": 5}, (15, 19)),
        ],
    )
    def test_read_without_metadata_uses_offset_and_limit(
        self, tmp_path: Path, arguments: dict[str, int], line_range: tuple[int, int | None] | None
    ) -> None:
        """Without metadata the call's offset and limit give the lines read."""
        path = _write(
            tmp_path,
            [
                _assistant("a1", "msg_1", _use("t1", "Read", file_path="/repo/a.py", **arguments)),
                _user("u1", [_result("t1", "text")]),
            ],
        )
        read = _events(path)[1]
        assert isinstance(read, FileRead)
        assert read.line_range == line_range

    def test_whole_file_read_has_no_range(self, graph: ContextGraph, tmp_path: Path) -> None:
        """A read covering the whole file has no line range, and a second one supersedes it."""
        info = {
            "filePath": "/repo/a.py",
            "content": "",
            "startLine": 1,
            "numLines": 3,
            "totalLines": 3,
        }
        extra = {"toolUseResult": {"type": "text", "file": info}}
        path = _write(
            tmp_path,
            [
                _assistant("a1", "msg_1", _use("t1", "Read", file_path="/repo/a.py")),
                _user("u1", [_result("t1", "abc")], **extra),
                _assistant("a2", "msg_2", _use("t2", "Read", file_path="/repo/a.py")),
                _user("u2", [_result("t2", "abc")], **extra),
            ],
        )
        graph.ingest(_events(path))
        first, second = graph.by_path("/repo/a.py")
        assert (graph[first].line_range, graph[second].version) == (None, 2)
        assert graph.targets(second, "supersedes") == (first,)

    def test_failed_read_stays_a_tool_result(self, tmp_path: Path) -> None:
        """A Read that failed is an error result, not a file."""
        path = _write(
            tmp_path,
            [
                _assistant("a1", "msg_1", _use("t1", "Read", file_path="/nope")),
                _user(
                    "u1",
                    [_result("t1", "File does not exist.", is_error=True)],
                    toolUseResult="Error",
                ),
            ],
        )
        result = _events(path)[1]
        assert isinstance(result, ToolResult)
        assert result.is_error

    def test_subagent_run_links_its_transcript(self, tmp_path: Path) -> None:
        """A Task result with an agent id names the sub-agent's transcript, which loads too."""
        details = {"status": "completed", "agentId": "abc123", "totalTokens": 99, "content": []}
        path = _write(
            tmp_path,
            [
                _assistant(
                    "a1", "msg_1", _use("t1", "Task", subagent_type="Explore", prompt="look")
                ),
                _user("u1", [_result("t1", [_text("found it")])], toolUseResult=details),
            ],
        )
        sub = [
            _user("s1", "look", isSidechain=True, agentId="abc123"),
            _assistant("s2", "msg_9", _text("found it"), isSidechain=True, agentId="abc123"),
        ]
        transcript = _write(tmp_path / "session" / "subagents", sub, name="agent-abc123.jsonl")
        _write(tmp_path / "session" / "subagents", sub, name="agent-acompact-1.jsonl")
        main, agent, compact = load_sessions(path)
        run = main.events[1]
        assert isinstance(run, SubagentResult)
        assert (run.agent_id, run.transcript) == ("abc123", "session/subagents/agent-abc123.jsonl")
        assert path.parent / run.transcript == transcript
        assert run.meta["subagent_type"] == "Explore"
        assert run.meta["total_tokens"] == 99
        assert (agent.name, agent.meta["agent_id"], agent.meta["is_sidechain"]) == (
            "agent-abc123",
            "abc123",
            True,
        )
        assert (compact.name, compact.meta["compaction_run"]) == ("agent-acompact-1", True)

    def test_missing_transcript_is_none(self, tmp_path: Path) -> None:
        """Without a transcript file the sub-agent result names none."""
        path = _write(
            tmp_path,
            [
                _assistant("a1", "msg_1", _use("t1", "Agent")),
                _user("u1", [_result("t1", "done")], toolUseResult={"agentId": "zzz"}),
            ],
        )
        run = _events(path)[1]
        assert isinstance(run, SubagentResult)
        assert run.transcript is None

    def test_records_given_without_a_file(self) -> None:
        """Records passed as data import by index, named after their session id."""
        records = [_user("u1", "hi"), _assistant("a1", "msg_1", _text("hello"))]
        (session,) = load_sessions(RawInput(records), format="claude_code")
        assert session.name == "s-1"
        assert [e.source.index for e in session.events] == [0, 1]
        assert isinstance(session.events[0], UserTurn)


class TestSniff:
    def test_records_are_claimed(self) -> None:
        """Typed records with `sessionId` and `uuid` are Claude Code."""
        assert claude_code.sniff(RawInput([{"type": "summary"}, _user("u1", "hi")]))

    def test_one_record_document_is_claimed(self) -> None:
        """A file holding a single record (parsed as one JSON object) is still claimed."""
        assert claude_code.sniff(RawInput(_user("u1", "hi")))

    @pytest.mark.parametrize(
        "data",
        [
            None,
            "text",
            [],
            [1],
            [{"role": "user", "content": "hi"}],
            [{"role": "assistant", "tool_calls": []}, {"role": "tool", "tool_call_id": "c"}],
            {"contents": [{"role": "user", "parts": []}]},
            [{"type": "user", "message": {}}],
        ],
    )
    def test_other_shapes_are_refused_without_raising(self, data: Any) -> None:
        """Message lists of other providers and garbage are not claimed, and nothing raises."""
        assert not claude_code.sniff(RawInput(data))


class TestMalformed:
    def _error(self, path: Path) -> IngestError:
        with pytest.raises(IngestError) as info:
            load_sessions(path, format="claude_code")
        return info.value

    def test_invalid_json_names_the_line(self, tmp_path: Path) -> None:
        """A line that is not JSON is named by its number."""
        path = tmp_path / "s.jsonl"
        path.write_text(json.dumps(_user("u1", "hi")) + "\n{not json\n", "utf-8")
        error = self._error(path)
        assert (error.location.file, error.location.line) == (str(path), 2)

    def test_non_utf8_bytes_name_the_line(self, tmp_path: Path) -> None:
        """Bytes that are not UTF-8 are refused with their line."""
        path = tmp_path / "s.jsonl"
        path.write_bytes(json.dumps(_user("u1", "hi")).encode() + b'\n{"type": "user\xff"}\n')
        assert self._error(path).location.line == 2

    @pytest.mark.parametrize(
        ("record", "path"),
        [
            ([1, 2], None),
            ({"uuid": "x"}, "type"),
            ({"type": "user", "uuid": "x"}, "message"),
            (
                _user("u2", "hi") | {"message": {"role": "assistant", "content": "x"}},
                "message.role",
            ),
            (_user("u2", [{"type": "video"}]), "message.content[0].type"),
            (_user("u2", [_result("never_called")]), "message.content[0].tool_use_id"),
            (_user("u2", 5), "message.content"),
            (_user("u2", "hi") | {"timestamp": 5}, "timestamp"),
            (_assistant("a9", "msg_9", _use("t9") | {"input": "[]"}), "message.content[0].input"),
            (_assistant("a9", "msg_9", {"type": "thinking", "thinking": 1}), "message.content[0]"),
            (_assistant("a9", 7, _text("x")), "message.id"),
        ],
        ids=[
            "not an object",
            "no type",
            "no message",
            "role mismatch",
            "unknown block",
            "orphan result",
            "content a number",
            "timestamp a number",
            "input not an object",
            "thinking not text",
            "message id a number",
        ],
    )
    def test_bad_record_names_file_line_and_path(
        self, tmp_path: Path, record: Any, path: str | None
    ) -> None:
        """A malformed record raises `IngestError` naming the file, its line and the field."""
        file = _write(tmp_path, [_user("u1", "hi"), record], head="// a comment\n")
        error = self._error(file)
        assert (error.location.file, error.location.line, error.location.path) == (
            str(file),
            3,
            path,
        )
        assert f"{file} line 3" in str(error)

    def test_graph_error_names_the_line_and_changes_nothing(
        self, graph: ContextGraph, tmp_path: Path
    ) -> None:
        """Two results for one call fail in the graph at the second one's line; nothing is added."""
        path = _write(
            tmp_path,
            [
                _assistant("a1", "msg_1", _use("t1")),
                _user("u1", [_result("t1")]),
                _user("u2", [_result("t1", "again")]),
            ],
        )
        graph.add_user("earlier")
        before = graph_snapshot(graph)
        with pytest.raises(IngestError) as info:
            graph.ingest(_events(path))
        assert (info.value.location.file, info.value.location.line) == (str(path), 3)
        assert graph_snapshot(graph) == before

    def test_empty_record_list(self) -> None:
        """An empty record list is refused."""
        with pytest.raises(IngestError, match="list of records"):
            load_sessions(RawInput([]), format="claude_code")


class TestWebSessions:
    def test_a_web_sessions_loglines_are_its_records(self, tmp_path: Path) -> None:
        """A Claude Code web session (`{"loglines": [...]}`, records without ids) imports as
        a session file of the same records does; it was unrecognized input."""
        records = [
            {
                "type": "user",
                "timestamp": "2025-12-24T10:00:00.000Z",
                "message": {"role": "user", "content": "Add two numbers."},
            },
            {
                "type": "assistant",
                "timestamp": "2025-12-24T10:00:05.000Z",
                "message": {
                    "id": "msg_1",
                    "role": "assistant",
                    "model": "claude-test",
                    "content": [_text("Writing it."), _use("t1", "Write", file_path="a.py")],
                },
            },
            {
                "type": "user",
                "timestamp": "2025-12-24T10:00:06.000Z",
                "message": {"role": "user", "content": [_result("t1", "File created")]},
            },
        ]
        path = tmp_path / "web.json"
        path.write_text(json.dumps({"loglines": records}), "utf-8")
        assert detect_format(path) == "claude_code"
        (session,) = load_sessions(path)
        assert [e.type for e in session.events] == ["user", "assistant", "tool_result"]
        same = _write(tmp_path, records, "cli.jsonl")
        (cli,) = load_sessions(same, format="claude_code")
        dump = [e.model_dump(mode="json", exclude={"source"}) for e in session.events]
        assert dump == [e.model_dump(mode="json", exclude={"source"}) for e in cli.events]
