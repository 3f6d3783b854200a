"""The real opencode, through the gateway, against a strict fake of OpenAI's Chat Completions.

`opencode-ai` from the npm registry (its platform binary, installed beside it) runs
`opencode run "..."` in a project whose `opencode.json` declares a provider of the
`@ai-sdk/openai-compatible` package with its `baseURL` at the gateway; nothing else of
opencode changes. The upstream is `ProviderServer("openai")`. The scripted model asks for
`bash` with a long output 40 times, then answers; opencode's title call is answered too.

opencode runs offline: `OPENCODE_DISABLE_MODELS_FETCH` (no model list download),
`OPENCODE_DISABLE_AUTOUPDATE` (no update check), and npm's own `offline` setting
(`npm_config_offline`), since opencode installs its plugin package into its config
folder with npm at start; offline, that install fails at once and is logged as a
warning, and the run goes on.

Found and skipped like Claude Code in test_claude_code.py (`$CONTEXT_GRAPH_AGENTS`,
`CONTEXT_GRAPH_REQUIRE_AGENTS`).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

from tests.orchestrator.gateway.scripted import (
    Recorder,
    SeqTask,
    agent_cli,
    gateway_over_fake,
    held_results,
    reuse_between_compactions,
)

BUDGET = 30_000
"""opencode's own system prompt and tools take about a quarter of it."""
TURNS = 40
MODEL = "test-model"


def _opencode() -> Path:
    return agent_cli("opencode-ai/bin/opencode.exe", "opencode")


class Script(SeqTask):
    """Asks opencode's `bash` for `seq` with a long output `turns` times, then answers; its
    title call (a prompt of its own) is answered apart."""

    def __init__(self, turns: int = TURNS) -> None:
        super().__init__("bash", _asks_a_title, turns)


def _asks_a_title(body: dict[str, Any]) -> bool:
    return "title generator" in str(body["messages"][0].get("content"))


def configure(project: Path, url: str) -> None:
    """The project's `opencode.json`: a provider whose base URL is the gateway."""
    config = {
        "$schema": "https://opencode.ai/config.json",
        "provider": {
            "context-graph": {
                "npm": "@ai-sdk/openai-compatible",
                "name": "context-graph",
                "options": {"baseURL": f"{url}/v1", "apiKey": "sk-test"},
                "models": {MODEL: {"name": "Test model"}},
            }
        },
        "model": f"context-graph/{MODEL}",
    }
    (project / "opencode.json").write_text(json.dumps(config, indent=2))


def offline(home: Path) -> dict[str, str]:
    """opencode's environment: `home` as its home, nothing downloaded."""
    return {
        "PATH": os.environ["PATH"],
        "HOME": str(home),
        "OPENCODE_DISABLE_MODELS_FETCH": "1",
        "OPENCODE_DISABLE_AUTOUPDATE": "1",
        "npm_config_offline": "true",
    }


def start(opencode: Path, home: Path, project: Path, prompt: str) -> Any:
    """`opencode run` started in `project` on `prompt`, offline."""
    return subprocess.Popen(
        [str(opencode), "run", prompt],
        cwd=project,
        env=offline(home),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _held(gateway: Any) -> dict[str, list[int]]:
    return held_results(gateway, "chat")


def test_opencode_finishes_a_long_task_under_the_budget(tmp_path: Path) -> None:
    opencode = _opencode()
    project, home = tmp_path / "project", tmp_path / "home"
    project.mkdir()
    home.mkdir()
    recorder = Recorder(Script(), "chat")
    with gateway_over_fake(
        "openai", recorder, budget=BUDGET, store=tmp_path / "store", wires=("chat",)
    ) as served:
        upstream, gateway, url = served
        configure(project, url)
        agent = start(opencode, home, project, "Count with seq, step by step.")
        out, err = agent.communicate(timeout=600)
        held = _held(gateway)
        sessions = gateway.table_of("chat").sessions
        recorded = max(t.manager.raw.total_tokens for ts in sessions.values() for t in ts)
    assert agent.returncode == 0, err[-2000:]
    assert "All done." in out
    assert "error" not in err.lower(), err[-2000:]
    assert upstream.refused == [], upstream.refused[:3]
    assert max(upstream.prompts) <= BUDGET
    own = [p for p, r in zip(upstream.prompts, upstream.requests, strict=True) if "tools" in r]
    assert own[0] > BUDGET / 5, "opencode's own system prompt and tools, before any history"
    (session,) = held
    assert session.startswith("ses_"), "opencode's X-Session-Id names the session"
    # The title call is a thread of its own; the task's thread holds every step.
    assert sorted(held[session]) == [0, TURNS], held
    # The head of the prompt a provider caches holds: the system prompt and the tools.
    heads = {json.dumps([r["messages"][0], r["tools"]]) for r in upstream.requests if "tools" in r}
    assert len(heads) == 1
    assert recorded > 2 * BUDGET, "the agent's history grew far past the budget"
    share, pairs = reuse_between_compactions(upstream, recorder, lambda body: "tools" in body)
    assert share >= 0.9 and pairs > TURNS // 2, (share, pairs)


def test_two_sessions_at_once_in_one_project_stay_apart(tmp_path: Path) -> None:
    """Same project, same prompt, same system prompt, run at the same time: two sessions."""
    opencode = _opencode()
    project, home = tmp_path / "project", tmp_path / "home"
    project.mkdir()
    home.mkdir()
    with gateway_over_fake(
        "openai", Script(turns=12), budget=BUDGET, store=None, wires=("chat",)
    ) as served:
        upstream, gateway, url = served
        configure(project, url)
        # opencode makes its database on first use; two first runs at once race to
        # make it ("Failed query: CREATE TABLE ..."), so one command makes it first.
        subprocess.run(
            [str(opencode), "session", "list"],
            cwd=project,
            env=offline(home),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=120,
            check=True,
        )
        agents = [start(opencode, home, project, "Count with seq.") for _ in range(2)]
        finished = [agent.communicate(timeout=600) for agent in agents]
        held = _held(gateway)
    for agent, (out, err) in zip(agents, finished, strict=True):
        assert agent.returncode == 0, err[-2000:]
        assert "All done." in out
    assert upstream.refused == [], upstream.refused[:3]
    assert max(upstream.prompts) <= BUDGET
    assert len(held) == 2
    assert all(max(counts) == 12 for counts in held.values()), held
