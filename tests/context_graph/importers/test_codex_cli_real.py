"""The rollout file the real Codex CLI writes, imported.

`@openai/codex` from the npm registry runs `codex exec` (as the gateway test runs it,
`run_codex`) straight against `ProviderServer("responses")` (a strict fake of the
Responses API, no gateway between)
with a scripted model, in a project with an `AGENTS.md`: it runs `cat notes.txt`, then a
command that fails, then answers. The rollout Codex writes under `$CODEX_HOME/sessions`
is imported strictly and checked against what the model was sent. Found and skipped
like Claude Code (`$CONTEXT_GRAPH_AGENTS`, `CONTEXT_GRAPH_REQUIRE_AGENTS`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from benchmarks.provider_server import ProviderServer
from context_graph.graph.content import TextPart
from context_graph.graph.events import AssistantTurn, SystemPrompt, ToolResult, UserTurn
from context_graph.importers import load_sessions
from orchestrator import ContextManager
from tests.orchestrator.gateway.scripted import agent_cli
from tests.orchestrator.gateway.test_codex import run_codex

NOTES = "alpha\nbudget cap is $500\n"
RULE = "Always run tests with -q."


def _text(event: Any) -> str:
    return "".join(part.text for part in event.content if isinstance(part, TextPart))


def test_the_real_rollout_imports_what_the_model_was_given(tmp_path: Path) -> None:
    agent_cli("@openai/codex/bin/codex.js", "Codex CLI")  # skip before anything starts
    home, project = tmp_path / "home", tmp_path / "project"
    home.mkdir()
    project.mkdir()
    (project / "AGENTS.md").write_text(RULE + "\n", "utf-8")
    (project / "notes.txt").write_text(NOTES, "utf-8")
    answers: list[dict[str, Any]] = [
        {"calls": [["exec_command", {"cmd": "cat notes.txt"}]]},
        {"text": "Now the failing one.", "calls": [["exec_command", {"cmd": "false"}]]},
        {"text": "All done."},
    ]
    asked: list[dict[str, Any]] = []

    def model(body: dict[str, Any]) -> dict[str, Any]:
        asked.append(body)
        return answers[min(len(asked), len(answers)) - 1]

    with ProviderServer("responses", respond=model, factor=1.0, limit=200_000) as upstream:
        run = run_codex(home, project, upstream.url)
        # The fake refuses what the real API would (every body against the SDK's types).
        assert upstream.refused == [], upstream.refused[:3]
    assert run.returncode == 0, run.stderr[-2000:]
    assert "All done." in run.stdout and len(asked) == 3
    (path,) = (home / "sessions").rglob("rollout-*.jsonl")
    (session,) = load_sessions(path, strict=True)
    events = list(session.events)
    assert session.meta["cli_version"] == "0.171.0"
    # Codex's own instructions lead, as pinned system prompts; AGENTS.md is a notice; the
    # task is the user's only request.
    assert isinstance(events[0], SystemPrompt)
    told = [e for e in events if isinstance(e, UserTurn)]
    assert [_text(e) for e in told if not e.notice] == ["Count with seq."]
    assert any(e.notice and RULE in _text(e) for e in told)
    # Both commands, each answered by its output as the model was sent it.
    calls = [c for e in events if isinstance(e, AssistantTurn) for c in e.tool_calls]
    results = [e for e in events if isinstance(e, ToolResult)]
    assert [c.name for c in calls] == ["exec_command", "exec_command"]
    assert [r.call_id for r in results] == [c.id for c in calls]
    sent = {
        item["call_id"]: item["output"]
        for item in asked[-1]["input"]
        if item.get("type") == "function_call_output"
    }
    assert {r.call_id: _text(r) for r in results} == sent
    assert NOTES.strip() in _text(results[0])
    assert _text(events[-1]) == "All done."
    # And it renders as the Responses API takes it.
    manager = ContextManager("responses", 20_000)
    manager.ingest(events)
    assert "budget cap is $500" in str(manager.render_sync().payload["input"])
