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

import json
import os
import queue
import subprocess
import threading
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


class _AppServer:
    """`codex app-server` (the IDE extension's server) over stdio, one request at a time."""

    def __init__(self, codex: Path, home: Path, project: Path) -> None:
        env = {
            "PATH": os.environ["PATH"],
            "HOME": str(home),
            "CODEX_HOME": str(home),
            "CONTEXT_GRAPH_TEST_KEY": "sk-test",
        }
        self.process = subprocess.Popen(
            ["node", str(codex), "app-server"],
            cwd=project,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            bufsize=1,
        )
        self.messages: queue.Queue[dict[str, Any]] = queue.Queue()
        self.pump = threading.Thread(target=self._pump, daemon=True)
        self.pump.start()
        self.next_id = 0

    def _pump(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.messages.put(json.loads(line))

    def _send(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(message) + "\n")
        self.process.stdin.flush()

    def call(self, method: str, params: dict[str, Any], until: str | None = None) -> Any:
        """The result of `method`; with `until`, once that notification came too."""
        self.next_id += 1
        self._send({"id": self.next_id, "method": method, "params": params})
        result, noted = None, until is None
        while result is None or not noted:
            message = self.messages.get(timeout=120)
            if message.get("id") == self.next_id:
                assert "error" not in message, message
                result = message["result"]
            elif message.get("method") == until:
                noted = True
        return result

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.terminate()
        self.process.wait(timeout=60)
        self.pump.join(timeout=60)  # it ends at the end of the output
        assert self.process.stdout is not None
        self.process.stdout.close()


def test_a_reverted_thread_imports_the_history_the_model_was_sent(tmp_path: Path) -> None:
    """Codex's app server reverts a thread twice (`thread/revert`, before a turn): each
    revert starts a rollout that continues the one before up to a byte (`history_base`).
    The newest imports as the model's last request held it, without the reverted turns;
    the first rollout still holds what it recorded."""
    codex = agent_cli("@openai/codex/bin/codex.js", "Codex CLI")
    home, project = tmp_path / "home", tmp_path / "project"
    home.mkdir()
    project.mkdir()
    asked: list[dict[str, Any]] = []

    def model(body: dict[str, Any]) -> dict[str, Any]:
        asked.append(body)
        if body["input"][-1].get("type") == "function_call_output":
            return {"text": f"Answer {len(asked)}."}
        return {"calls": [["exec_command", {"cmd": f"echo run{len(asked)}"}]]}

    prompts = [
        "First: the budget is $500.",
        "Second: reverted.",
        "Third: kept.",
        "Fourth: reverted.",
    ]
    with ProviderServer("responses", respond=model, factor=1.0, limit=200_000) as upstream:
        (home / "config.toml").write_text(
            'model = "gpt-5.5"\nmodel_provider = "context-graph"\n'
            'approval_policy = "never"\nsandbox_mode = "danger-full-access"\n'
            '[model_providers.context-graph]\nname = "context-graph"\n'
            f'base_url = "{upstream.url}/v1"\nenv_key = "CONTEXT_GRAPH_TEST_KEY"\n'
            'wire_api = "responses"\nrequest_max_retries = 0\nstream_max_retries = 0\n'
        )
        server = _AppServer(codex, home, project)
        try:
            server.call("initialize", {"clientInfo": {"name": "tests", "version": "1"}})
            server._send({"method": "initialized"})
            thread = server.call("thread/start", {"cwd": str(project)})["thread"]["id"]

            def turn(text: str) -> str:
                started = server.call(
                    "turn/start",
                    {"threadId": thread, "input": [{"type": "text", "text": text}]},
                    until="turn/completed",
                )
                return str(started["turn"]["id"])

            turn(prompts[0])
            server.call("thread/revert", {"threadId": thread, "beforeTurnId": turn(prompts[1])})
            turn(prompts[2])
            server.call("thread/revert", {"threadId": thread, "beforeTurnId": turn(prompts[3])})
            turn("Fifth: kept.")
        finally:
            server.close()
        assert upstream.refused == [], upstream.refused[:3]
    sent = [
        part["text"]
        for item in asked[-1]["input"]
        if item.get("role") == "user"
        for part in item["content"]
        if not part["text"].startswith("<")
    ]
    assert sent == [prompts[0], prompts[2], "Fifth: kept."]

    rollouts = sorted((home / "sessions").rglob("rollout-*.jsonl"), key=lambda p: p.stat().st_mtime)
    assert len(rollouts) == 3
    first, _, newest = (load_sessions(path, strict=True)[0] for path in rollouts)
    told = [_text(e) for e in newest.events if isinstance(e, UserTurn) and not e.notice]
    assert told == sent
    assert len(newest.meta["history_base"]) == 2
    results = [_text(e) for e in newest.events if isinstance(e, ToolResult)]
    assert ["run1" in r for r in results] == [True, False, False]
    assert "run5" in results[1] and "run9" in results[2]
    assert [_text(e) for e in first.events if isinstance(e, UserTurn) and not e.notice] == [
        prompts[0],
        prompts[1],
    ]
    manager = ContextManager("responses", 30_000)
    manager.ingest(newest.events)
    body = json.dumps(manager.render_sync().payload)
    assert prompts[1] not in body and prompts[3] not in body and prompts[2] in body
