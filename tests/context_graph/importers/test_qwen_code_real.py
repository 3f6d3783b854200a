"""The session file the real Qwen Code writes, imported.

`@qwen-code/qwen-code` from the npm registry runs `-p` with its OpenAI sign-in straight
against `ProviderServer("openai")` (a strict fake of Chat Completions) with a scripted
model, three times in one project: a task (read a file, run a command that fails,
answer), then `--continue -p /compress` (Qwen Code asks the model for a `<state_snapshot>`
of the history and records it), then `--continue` with one more prompt. The file Qwen Code
writes under `$HOME/.qwen/projects` is imported strictly and checked against what the
model was sent last. Found and skipped like Claude Code (`$CONTEXT_GRAPH_AGENTS`,
`CONTEXT_GRAPH_REQUIRE_AGENTS`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from benchmarks.provider_server import ProviderServer
from context_graph.graph.content import TextPart
from context_graph.graph.events import AssistantTurn, Compaction, ToolResult, UserTurn
from context_graph.importers import detect_format, load_sessions
from orchestrator import ContextManager
from tests.orchestrator.gateway.test_qwen_code import qwen, start

NOTES = "alpha\nbudget cap is $500\n"
SNAPSHOT = (
    "<state_snapshot>\n<overall_goal>Check notes.txt.</overall_goal>\n"
    "<key_knowledge>The budget cap is $500; `false` exits 1.</key_knowledge>\n</state_snapshot>"
)


def _text(event: Any) -> str:
    return "".join(part.text for part in event.content if isinstance(part, TextPart))


def _said(messages: list[dict[str, Any]]) -> str:
    """The text of Chat Completions messages, each content's parts joined."""
    out = []
    for message in messages:
        content = message.get("content")
        parts = content if isinstance(content, list) else [{"text": content or ""}]
        out.extend(part.get("text", "") for part in parts)
    return "\n".join(out)


class Model:
    """The scripted model: a read, a failing command, an answer; then the summary asked for."""

    def __init__(self, notes: Path) -> None:
        self.notes = notes
        self.asked: list[dict[str, Any]] = []

    def __call__(self, body: dict[str, Any]) -> dict[str, Any]:
        self.asked.append(body)
        said = json.dumps(body["messages"])
        if "<state_snapshot>" in said and "First, reason in your <analysis> block" in said:
            return {"text": f"<analysis>Two steps ran.</analysis>\n{SNAPSHOT}"}
        if not body.get("tools"):
            return {"text": "Notes"}
        done = [m for m in body["messages"] if m["role"] == "tool"]
        last_user = max(i for i, m in enumerate(body["messages"]) if m["role"] == "user")
        if "One more check" in json.dumps(body["messages"][last_user]):
            return {"text": "Still $500."}
        if not done:
            return {"calls": [["read_file", {"file_path": str(self.notes)}]]}
        if len(done) == 1:
            return {
                "text": "Now the failing one.",
                "calls": [["run_shell_command", {"command": "false"}]],
            }
        return {"text": "All done."}


def test_the_real_session_file_imports_what_the_model_was_given(tmp_path: Path) -> None:
    cli = qwen()
    home, project = tmp_path / "home", tmp_path / "project"
    home.mkdir()
    project.mkdir()
    notes = project / "notes.txt"
    notes.write_text(NOTES, "utf-8")
    model = Model(notes)
    runs = (
        ("-p", "Check notes.txt please."),
        ("--continue", "-p", "/compress"),
        ("--continue", "-p", "One more check: what is the cap?"),
    )
    with ProviderServer("openai", respond=model, factor=1.0) as upstream:
        for args in runs:
            agent = start(cli, upstream.url, home, project, *args)
            out, err = agent.communicate(timeout=600)
            assert agent.returncode == 0, err[-2000:]
        assert upstream.refused == [], upstream.refused[:3]
    assert "Still $500." in out
    (path,) = (home / ".qwen" / "projects").glob("*/chats/*.jsonl")
    assert detect_format(path) == "qwen_code"
    (session,) = load_sessions(path, strict=True)
    events = list(session.events)
    assert session.meta["model"] == "test-model"
    assert session.meta["session_id"] == path.stem
    # Qwen Code's /compress: its summary stands for everything before it.
    (compaction,) = [e for e in events if isinstance(e, Compaction)]
    assert SNAPSHOT in _text(compaction)
    before = events[: events.index(compaction)]
    after = events[events.index(compaction) + 1 :]
    assert [_text(e) for e in before if isinstance(e, UserTurn)] == ["Check notes.txt please."]
    calls = [c for e in before if isinstance(e, AssistantTurn) for c in e.tool_calls]
    results = [e for e in before if isinstance(e, ToolResult)]
    assert [c.name for c in calls] == ["read_file", "run_shell_command"]
    assert [r.call_id for r in results] == [c.id for c in calls]
    assert "budget cap is $500" in _text(results[0])
    # What the model was sent last for the task (Qwen Code's side calls, such as its
    # memory extraction sub-agent's, have system prompts of their own): the summary, then
    # the new prompt; the import ends with it and its answer.
    task = [b["messages"] for b in model.asked if "You are Qwen Code" in str(b["messages"][0])]
    last = task[-1]
    assert SNAPSHOT in _said(last) and "Now the failing one." not in _said(last)
    assert [_text(e) for e in after] == ["One more check: what is the cap?", "Still $500."]
    assert "One more check: what is the cap?" in _said(last[-1:])
    # It renders back: the summary and the new turn, not the history it stands for.
    manager = ContextManager("openai", 30_000)
    manager.ingest(events)
    body = json.dumps(manager.render_sync().payload)
    assert "The budget cap is $500" in body and "Now the failing one." not in body
