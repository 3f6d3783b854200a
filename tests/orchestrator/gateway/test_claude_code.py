"""The real Claude Code, through the gateway, against a strict fake of Anthropic's API.

The agent is `@anthropic-ai/claude-code` from the npm registry, run by Node as a user
runs it (`-p`), with `ANTHROPIC_BASE_URL` at the gateway; the upstream is
`ProviderServer("anthropic")`, which checks every body with our validator and the SDK's
request types and counts its prompt. The scripted model asks for a shell command with a
long output at every turn, 40 times, so the agent's history grows to several times
the budget; then it answers.

The CLI is looked up in `$CONTEXT_GRAPH_AGENTS` (a `node_modules` folder; `.ci/run`
installs it in `.agents/node_modules`). Without it the test is skipped, unless
`CONTEXT_GRAPH_REQUIRE_AGENTS=1` (CI), where that is a failure.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from benchmarks.provider_server import ProviderServer
from orchestrator.gateway import GatewayThread, gateway_for
from orchestrator.profiles import get_profile

ROOT = Path(__file__).resolve().parents[3]
AGENTS = Path(os.environ.get("CONTEXT_GRAPH_AGENTS", ROOT / ".agents" / "node_modules"))
CLAUDE = AGENTS / "@anthropic-ai" / "claude-code" / "cli-wrapper.cjs"
BUDGET = 40_000
"""Claude Code's own system prompt and 25 tools are about 24,000 tokens of it."""
TURNS = 40


def _claude_code() -> Path:
    if CLAUDE.exists() and shutil.which("node"):
        return CLAUDE
    if os.environ.get("CONTEXT_GRAPH_REQUIRE_AGENTS") == "1":
        pytest.fail(f"Claude Code is not installed at {CLAUDE} (and node on PATH)")
    pytest.skip(f"Claude Code is not installed at {CLAUDE}; .ci/run installs it")


class Script:
    """Asks for `seq` with a long output `TURNS` times, then answers; titles are answered too."""

    def __init__(self) -> None:
        self.steps = 0

    def __call__(self, body: dict[str, Any]) -> dict[str, Any]:
        if body.get("output_config", {}).get("format"):  # the session title
            return {"text": json.dumps({"title": "Counting"})}
        if self.steps >= TURNS:
            return {"text": "All done."}
        self.steps += 1
        command = f"seq {self.steps} 3000"
        return {"text": f"Step {self.steps}.", "calls": [["Bash", {"command": command}]]}


def run(claude: Path, url: str, home: Path, project: Path, prompt: str) -> Any:
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(home),
        "ANTHROPIC_BASE_URL": url,
        "ANTHROPIC_API_KEY": "sk-test",
        "DISABLE_AUTOUPDATER": "1",
        "DISABLE_TELEMETRY": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    }
    command = ["node", str(claude), "-p", prompt, "--allowedTools", "Bash"]
    return subprocess.run(
        command, cwd=project, env=env, capture_output=True, text=True, timeout=600, check=False
    )


def test_claude_code_finishes_a_long_task_under_the_budget(tmp_path: Path) -> None:
    claude = _claude_code()
    project, home = tmp_path / "project", tmp_path / "home"
    project.mkdir()
    home.mkdir()
    script = Script()
    with ProviderServer("anthropic", respond=script, factor=1.0, limit=BUDGET) as upstream:
        gateway = gateway_for(
            upstream.url, budget=BUDGET, profile=get_profile("coding"), store=tmp_path / "store"
        )
        with GatewayThread(gateway) as url:
            done = run(claude, url, home, project, "Count with seq, step by step.")
            sessions = dict(gateway.table.sessions)
            threads = [
                (t.number, [n.kind for n in t.manager.raw]) for ts in sessions.values() for t in ts
            ]
            asked = [
                n.id
                for ts in sessions.values()
                for t in ts
                for n in t.manager.raw
                if n.kind == "user" and "Count with seq" in n.text
            ]
    assert done.returncode == 0, done.stderr[-2000:]
    assert "All done." in done.stdout
    assert upstream.refused == [], upstream.refused[:3]
    assert max(upstream.prompts) <= BUDGET
    assert script.steps == TURNS
    assert len(sessions) == 1
    main = max(threads, key=lambda thread: thread[1].count("tool_result"))
    # The agent never compacted itself: its history only grew, so one thread holds it all.
    assert main[1].count("tool_result") == TURNS
    assert len(asked) == 1, "the task was taken in once, not again with every request"
    whole = sum(upstream.prompts[-1:]) + TURNS * 8_000
    assert whole > 2 * BUDGET, "the agent's history grew far past the budget"
