"""The chat recording the real gemini-cli writes, imported.

`@google/gemini-cli` from the npm registry runs `-p` straight against
`ProviderServer("gemini")` (a strict fake of the Gemini API) with a scripted model, in a
project of our own: the prompt names a file with `@`, the model reads it with
`read_file`, runs a command that fails, and answers. The recording gemini-cli writes
under `$HOME/.gemini/tmp` (0.61 writes a log of JSON lines) is imported strictly and
checked against what the model was sent. Found and skipped like Claude Code
(`$CONTEXT_GRAPH_AGENTS`, `CONTEXT_GRAPH_REQUIRE_AGENTS`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from benchmarks.provider_server import ProviderServer
from context_graph.graph.content import TextPart
from context_graph.graph.events import AssistantTurn, ToolResult, UserTurn
from context_graph.importers import load_sessions
from orchestrator import ContextManager
from tests.orchestrator.gateway.scripted import agent_cli
from tests.orchestrator.gateway.test_gemini_cli import start

NOTES = "alpha\nbudget cap is $500\n"


def _text(event: Any) -> str:
    return "".join(part.text for part in event.content if isinstance(part, TextPart))


def test_the_real_recording_imports_what_the_model_was_given(tmp_path: Path) -> None:
    cli = agent_cli("@google/gemini-cli/bundle/gemini.js", "gemini-cli")
    home, project = tmp_path / "home", tmp_path / "project"
    home.mkdir()
    project.mkdir()
    (project / "notes.txt").write_text(NOTES, "utf-8")
    answers: list[dict[str, Any]] = [
        {"calls": [["read_file", {"file_path": "notes.txt"}]]},
        {"text": "Now the failing one.", "calls": [["run_shell_command", {"command": "false"}]]},
        {"text": "All done."},
    ]
    asked: list[dict[str, Any]] = []

    def model(body: dict[str, Any]) -> dict[str, Any]:
        asked.append(body)
        return answers[min(len(asked), len(answers)) - 1]

    with ProviderServer("gemini", respond=model, factor=1.0, limit=200_000) as upstream:
        agent = start(cli, upstream.url, home, project, "Check @notes.txt please.")
        out, err = agent.communicate(timeout=600)
        assert upstream.refused == [], upstream.refused[:3]
    assert agent.returncode == 0, err[-2000:]
    assert "All done." in out and len(asked) == 3
    (path,) = (home / ".gemini" / "tmp").rglob("session-*.json*")
    (session,) = load_sessions(path, strict=True)
    events = list(session.events)
    assert session.meta["model"] == "gemini-2.5-flash"
    # The CLI's session context is its notice; the prompt, as the model got it (the
    # user's words, then the named file's content), the user's only request.
    told = [e for e in events if isinstance(e, UserTurn)]
    assert [e.notice for e in told] == [True, False]
    assert "<session_context>" in _text(told[0])
    assert "Check @notes.txt" in _text(told[1]) and NOTES.strip() in _text(told[1])
    # Each call answered once, by what the model was sent back; the log's copies of the
    # results (a user message of function responses per round) are counted, not doubled.
    calls = [c for e in events if isinstance(e, AssistantTurn) for c in e.tool_calls]
    results = [e for e in events if isinstance(e, ToolResult)]
    assert [c.name for c in calls] == ["read_file", "run_shell_command"]
    assert [r.call_id for r in results] == [c.id for c in calls]
    assert session.meta["skipped_messages"]["function_response"] == 2
    sent = [
        part["functionResponse"]
        for content in asked[-1]["contents"]
        for part in content["parts"]
        if "functionResponse" in part
    ]
    # The recording names a call `<tool>__<id sent>` (gemini-cli 0.61): the same call.
    assert [f"{s['name']}__{s['id']}" for s in sent] == [r.call_id for r in results]
    assert [s["response"]["output"] for s in sent][:1] == [_text(results[0])]
    assert NOTES.strip() in _text(results[0])
    assert _text(events[-1]) == "All done."
    # And it renders back as the Gemini API takes it.
    manager = ContextManager("gemini", 30_000)
    manager.ingest(events)
    assert "budget cap is $500" in str(manager.render_sync().payload["contents"])
