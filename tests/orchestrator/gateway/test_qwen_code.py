"""The real Qwen Code, through the gateway, against a strict fake of OpenAI's Chat Completions.

`@qwen-code/qwen-code` from the npm registry runs `-p "..." --yolo` with its OpenAI
sign-in (`OPENAI_BASE_URL` at the gateway, `OPENAI_API_KEY`, `OPENAI_MODEL`); nothing else
of Qwen Code changes but one setting in its `settings.json`, which makes it name its
session in a header (`customHeaders` with `${session_id}`, allowed by
`outboundCorrelation.allowDynamicHeaderValues`). The upstream is
`ProviderServer("openai")`. The scripted model asks for `run_shell_command` with a long
output 40 times, then answers; Qwen Code's side calls (no tools) are answered with text.

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

BUDGET = 45_000
"""Qwen Code's own system prompt, tools and reminders take about 16,400 tokens of it, and
each step adds a command output of about 7,000: room for four steps before the first
compaction, as opencode's test has at 30,000 beside its smaller prompt."""
TURNS = 40
SESSION_HEADER = {
    "model": {"generationConfig": {"customHeaders": {"X-Context-Graph-Session": "${session_id}"}}},
    "outboundCorrelation": {"allowDynamicHeaderValues": True},
}
"""The settings that make Qwen Code name its session to the proxy (docs/agents/qwen-code.md)."""


def qwen() -> Path:
    """The installed Qwen Code's entry script, or skip (fail in CI) without it."""
    return agent_cli("@qwen-code/qwen-code/cli.js", "Qwen Code")


class Script(SeqTask):
    """Asks Qwen Code's `run_shell_command` for `seq` with a long output `turns` times, then
    answers; its side calls (no tools) are answered with text."""

    def __init__(self, turns: int = TURNS) -> None:
        super().__init__("run_shell_command", lambda body: not body.get("tools"), turns)


def environment(home: Path, url: str) -> dict[str, str]:
    """Qwen Code's environment: `home` as its home, its OpenAI sign-in at `url`."""
    return {
        "PATH": os.environ["PATH"],
        "HOME": str(home),
        "OPENAI_BASE_URL": f"{url}/v1",
        "OPENAI_API_KEY": "sk-test",
        "OPENAI_MODEL": "test-model",
        "QWEN_CODE_SUPPRESS_YOLO_WARNING": "1",
    }


def name_sessions(home: Path) -> None:
    """Qwen Code's user settings, with the header that names each session."""
    (home / ".qwen").mkdir(parents=True, exist_ok=True)
    (home / ".qwen" / "settings.json").write_text(json.dumps(SESSION_HEADER), "utf-8")


def start(cli: Path, url: str, home: Path, project: Path, *args: str) -> Any:
    """`qwen <args> --yolo` started in `project`, its provider at `url`."""
    return subprocess.Popen(
        ["node", str(cli), *args, "--yolo"],
        cwd=project,
        env=environment(home, url),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _held(gateway: Any) -> dict[str, list[int]]:
    return held_results(gateway, "chat")


def _session_files(home: Path) -> list[Path]:
    return sorted((home / ".qwen" / "projects").glob("*/chats/*.jsonl"))


def test_qwen_code_finishes_a_long_task_under_the_budget(tmp_path: Path) -> None:
    cli = qwen()
    project, home = tmp_path / "project", tmp_path / "home"
    project.mkdir()
    name_sessions(home)
    recorder = Recorder(Script(), "chat")
    with gateway_over_fake(
        "openai", recorder, budget=BUDGET, store=tmp_path / "store", wires=("chat",)
    ) as served:
        upstream, gateway, url = served
        agent = start(cli, url, home, project, "-p", "Count with seq, step by step.")
        out, err = agent.communicate(timeout=900)
        held = _held(gateway)
        sessions = gateway.table_of("chat").sessions
        recorded = max(t.manager.raw.total_tokens for ts in sessions.values() for t in ts)
    assert agent.returncode == 0, err[-2000:]
    assert "All done." in out
    assert upstream.refused == [], upstream.refused[:3]
    assert max(upstream.prompts) <= BUDGET
    task = [body for body in upstream.requests if body.get("tools")]
    own = [
        p for p, body in zip(upstream.prompts, upstream.requests, strict=True) if body.get("tools")
    ]
    assert own[0] > BUDGET / 3, "Qwen Code's own system prompt and tools, before any history"
    # The header names the session Qwen Code records (its file is named by the id).
    (session,) = held
    (path,) = _session_files(home)
    assert path.stem == session
    # Qwen Code clears its oldest tool outputs itself once they pass 500,000 characters
    # (`context.clearContextOnIdle.toolResultsTotalCharsThreshold`), in some runs after
    # some 35 steps and in others not before the task ends: a clearing rewrites its
    # history's head, and the proxy starts a new thread of the session. The newest
    # thread holds every step.
    *cleared, newest = held[session]
    assert newest == TURNS and len(cleared) <= 1 and all(n < TURNS for n in cleared), held
    # The head of the prompt a provider caches holds: the system prompt and the tools.
    heads = {json.dumps([body["messages"][0], body["tools"]]) for body in task}
    assert len(heads) == 1
    assert recorded > 2 * BUDGET, "the agent's history grew far past the budget"
    share, pairs = reuse_between_compactions(upstream, recorder, lambda body: "tools" in body)
    assert share >= 0.9 and pairs > TURNS // 2, (share, pairs)


def test_two_sessions_at_once_in_one_project_stay_apart(tmp_path: Path) -> None:
    """Same project, same prompt, run at the same time: two sessions, each its own."""
    cli = qwen()
    project, home = tmp_path / "project", tmp_path / "home"
    project.mkdir()
    name_sessions(home)
    with gateway_over_fake(
        "openai", Script(turns=8), budget=BUDGET, store=None, wires=("chat",)
    ) as served:
        upstream, gateway, url = served
        agents = [start(cli, url, home, project, "-p", "Count with seq.") for _ in range(2)]
        finished = [agent.communicate(timeout=900) for agent in agents]
        held = _held(gateway)
    for agent, (out, err) in zip(agents, finished, strict=True):
        assert agent.returncode == 0, err[-2000:]
        assert "All done." in out
    assert upstream.refused == [], upstream.refused[:3]
    assert sorted(held) == sorted(path.stem for path in _session_files(home))
    assert [sorted(counts) for counts in held.values()] == [[8], [8]], held
