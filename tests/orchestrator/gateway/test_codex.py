"""The real Codex CLI, through the gateway, against a strict fake of OpenAI's Responses API.

`@openai/codex` from the npm registry runs `codex exec` with a `model_providers` entry whose
`base_url` is the gateway; the upstream is `ProviderServer("responses")`. The scripted model
asks for `exec_command` with a long output 20 times, then answers. Found and skipped like
Claude Code in test_claude_code.py (`$CONTEXT_GRAPH_AGENTS`, `CONTEXT_GRAPH_REQUIRE_AGENTS`).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

from context_graph.graph.nodes import UserNode
from orchestrator.gateway import session_of
from tests.orchestrator.gateway.scripted import (
    Recorder,
    agent_cli,
    gateway_over_fake,
    reuse_between_compactions,
)

BUDGET = 30_000
TURNS = 20


def _codex() -> Path:
    return agent_cli("@openai/codex/bin/codex.js", "Codex CLI")


class Script:
    """Asks for `seq` with a long output `TURNS` times per session, then answers."""

    def __init__(self) -> None:
        self.steps: dict[str, int] = {}

    def __call__(self, body: dict[str, Any]) -> dict[str, Any]:
        session = session_of({}, body)  # Codex's `prompt_cache_key` is its session id
        done = self.steps.get(session, 0)
        if done >= TURNS:
            return {"text": "All done."}
        self.steps[session] = done + 1
        return {"calls": [["exec_command", {"cmd": f"seq {done + 1} 3000"}]]}


def run_codex(home: Path, project: Path, url: str, settings: str = "") -> Any:
    """`codex exec` on the task in `project`, its provider the gateway at `url`.

    `settings`: more top-level lines of its config.toml.
    """
    (home / "config.toml").write_text(
        'model = "gpt-5.5"\n'
        'model_provider = "context-graph"\n'
        f"{settings}"
        "[model_providers.context-graph]\n"
        'name = "context-graph"\n'
        f'base_url = "{url}/v1"\n'
        'env_key = "CONTEXT_GRAPH_TEST_KEY"\n'
        'wire_api = "responses"\n'
        "request_max_retries = 0\n"
        "stream_max_retries = 0\n"
    )
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(home),
        "CODEX_HOME": str(home),
        "CONTEXT_GRAPH_TEST_KEY": "sk-test",
    }
    return subprocess.run(
        ["node", str(_codex()), "exec", "--skip-git-repo-check", "Count with seq."],
        cwd=project,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def test_codex_finishes_a_long_task_under_the_budget(tmp_path: Path) -> None:
    _codex()  # skip before anything starts when it is not installed
    home, project = tmp_path / "home", tmp_path / "project"
    home.mkdir()
    project.mkdir()
    script = Script()
    recorder = Recorder(script, "responses")
    with gateway_over_fake(
        "responses", recorder, budget=BUDGET, store=tmp_path / "store", wires=("responses",)
    ) as served:
        upstream, gateway, url = served
        done = run_codex(home, project, url)
        sessions = gateway.table_of("responses").sessions
        held = {
            s: [[n.kind for n in t.manager.raw].count("tool_result") for t in ts]
            for s, ts in sessions.items()
        }
        recorded = max(t.manager.raw.total_tokens for ts in sessions.values() for t in ts)
        users = [
            (n.notice, n.text)
            for ts in sessions.values()
            for t in ts
            for n in t.manager.raw
            if isinstance(n, UserNode)
        ]
    assert done.returncode == 0, done.stderr[-2000:]
    assert "All done." in done.stdout
    assert upstream.refused == [], upstream.refused[:3]
    assert len(upstream.requests) == TURNS + 1 and max(upstream.prompts) <= BUDGET
    assert list(script.steps.values()) == [TURNS]
    (counts,) = held.values()
    assert max(counts) == TURNS, held
    assert recorded > 2 * BUDGET, "the agent's history grew far past the budget"
    # Codex's `<environment_context>` message before the prompt is a notice: the prompt is
    # the user's only request (context_graph.formats.harness).
    assert [text for notice, text in users if not notice] == ["Count with seq."]
    assert any(notice and "<environment_context>" in text for notice, text in users), users
    share, pairs = reuse_between_compactions(upstream, recorder)
    assert share >= 0.9 and pairs > TURNS // 2, (share, pairs)
