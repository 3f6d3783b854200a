from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import context_graph
from context_graph.examples import EXAMPLE_SESSION
from context_graph.graph.context_graph import ContextGraph
from context_graph.graph.nodes import (
    FileNode,
    SubagentResultNode,
    SummaryNode,
    ToolCallNode,
    ToolResultNode,
)
from context_graph.importers import ImportedSession, detect_format, load_sessions
from context_graph.testing import WordCounter

TRACES = Path(__file__).resolve().parents[2] / ".." / "shared" / "traces"
EXAMPLES = EXAMPLE_SESSION.parent
SUBAGENTS = EXAMPLES / EXAMPLE_SESSION.stem / "subagents"
EXAMPLE_FILES = [EXAMPLE_SESSION, *sorted(SUBAGENTS.glob("agent-*.jsonl"))]
needs_traces = pytest.mark.skipif(not TRACES.is_dir(), reason="shared traces are absent")


def _lines(path: Path) -> list[str]:
    return [line for line in path.read_text("utf-8").split("\n") if line.strip()]


def _records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in _lines(path)]


def _graph(session: ImportedSession) -> ContextGraph:
    graph = ContextGraph(counter=WordCounter())
    graph.ingest(session.events)
    return graph


@pytest.fixture(name="sessions", scope="module")
def sessions_fixture() -> list[ImportedSession]:
    return load_sessions(EXAMPLE_SESSION)


@pytest.fixture(name="graph", scope="module")
def graph_fixture(sessions: list[ImportedSession]) -> ContextGraph:
    return _graph(sessions[0])


class TestPackaging:
    def test_example_session_is_a_file_in_the_package(self) -> None:
        """`EXAMPLE_SESSION` is the bundled JSONL file inside the installed package."""
        assert EXAMPLE_SESSION.name == "example_session.jsonl"
        assert EXAMPLE_SESSION.is_file()
        assert Path(context_graph.__file__).parent in EXAMPLE_SESSION.parents

    def test_a_few_hundred_kilobytes(self) -> None:
        """The bundled files stay small enough to ship in the wheel."""
        total = sum(p.stat().st_size for p in EXAMPLE_FILES)
        assert 0 < total < 1_000_000

    def test_readme_names_origin_commit_and_licence(self) -> None:
        """The README credits the session's repository, commit and licence."""
        readme = (EXAMPLES / "README.md").read_text("utf-8")
        for needed in ("Origin", "Licence", "MIT", "commit"):
            assert needed in readme

    @needs_traces
    def test_readme_agrees_with_the_manifest(self) -> None:
        """Repository, commit, licence and the original files' hashes match the manifest."""
        manifest = json.loads((TRACES / "MANIFEST.json").read_text("utf-8"))
        session_id = _records(EXAMPLE_SESSION)[0]["sessionId"]
        (entry,) = [f for f in manifest["files"] if Path(f["path"]).name == f"{session_id}.jsonl"]
        source = manifest["sources"][entry["source"]]
        readme = (EXAMPLES / "README.md").read_text("utf-8")
        assert source["origin"].removeprefix("github:") in readme
        assert source["commit"].split()[0] in readme
        assert source["license"].removeprefix("MIT").strip(" ()") in readme
        assert entry["sha256"] in readme


class TestSession:
    def test_detected_as_claude_code(self) -> None:
        """The example is a Claude Code session."""
        assert detect_format(EXAMPLE_SESSION) == "claude_code"

    def test_loads_main_then_subagents(self, sessions: list[ImportedSession]) -> None:
        """The main session comes first, then each bundled sub-agent transcript."""
        assert [s.name for s in sessions] == [p.stem for p in EXAMPLE_FILES]
        for session in sessions:
            assert len(_graph(session)) > 0

    def test_has_tool_calls(self, graph: ContextGraph) -> None:
        """The session makes tool calls, and all of them are answered."""
        calls = [n for n in graph if isinstance(n, ToolCallNode)]
        uses = sum(
            1
            for r in _records(EXAMPLE_SESSION)
            for b in (r.get("message") or {}).get("content") or []
            if isinstance(b, dict) and b["type"] == "tool_use"
        )
        assert len(calls) == uses > 0
        assert graph.unanswered_calls() == ()

    def test_reads_a_file_more_than_once(self, graph: ContextGraph) -> None:
        """Some file is read twice: the second read is version 2."""
        reread = [p for p in graph.files() if len(graph.by_path(p)) > 1]
        assert reread
        for path in reread:
            versions = [graph[i] for i in graph.by_path(path)]
            assert [n.version for n in versions if isinstance(n, FileNode)] == list(
                range(1, len(versions) + 1)
            )
        assert list(graph.edges("supersedes"))

    def test_has_a_tool_error(self, graph: ContextGraph) -> None:
        """Some tool call failed."""
        assert any(isinstance(n, ToolResultNode) and n.is_error for n in graph)

    def test_has_a_linked_subagent(self, graph: ContextGraph) -> None:
        """A sub-agent run is spawned by its call and names a bundled transcript (relative)."""
        runs = [n for n in graph if isinstance(n, SubagentResultNode)]
        assert runs
        for run in runs:
            assert run.transcript is not None
            assert (EXAMPLES / run.transcript).resolve().parent == SUBAGENTS.resolve()
            call = graph.call_of(run.id)
            assert call is not None
            assert graph.targets(run.id, "spawned_by") == (call.id,)

    def test_starts_from_claude_codes_compaction(self, graph: ContextGraph) -> None:
        """The cut begins at Claude Code's compaction, whose summary is the first node."""
        first = graph[graph.transcript()[0]]
        assert isinstance(first, SummaryNode)
        assert first.origin == "claude_code"


class TestCut:
    def test_every_parent_resolves(self) -> None:
        """Within the main file and the sub-agent transcript, every `parentUuid` is present.

        The compaction run is left out: Claude Code writes only its new records there, so
        its first records name parents in the main session, as in the original.
        """
        for path in EXAMPLE_FILES:
            if path.stem.startswith("agent-acompact"):
                continue
            records = _records(path)
            uuids = {r.get("uuid") for r in records}
            assert all(r.get("parentUuid") in uuids | {None} for r in records)

    @needs_traces
    @pytest.mark.parametrize("path", EXAMPLE_FILES, ids=[p.name for p in EXAMPLE_FILES])
    def test_lines_are_unchanged_lines_of_the_original(self, path: Path) -> None:
        """Every line is a line of the original trace, unchanged and in the original order."""
        session_id = _records(EXAMPLE_SESSION)[0]["sessionId"]
        (original_main,) = (TRACES / "claude_code").rglob(f"{session_id}.jsonl")
        original = (
            original_main
            if path == EXAMPLE_SESSION
            else original_main.parent / session_id / "subagents" / path.name
        )
        position = {line: i for i, line in enumerate(_lines(original))}
        found = [position[line] for line in _lines(path)]
        assert found == sorted(found)
