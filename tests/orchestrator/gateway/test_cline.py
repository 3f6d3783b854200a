"""The real Cline CLI, through the gateway, against a strict fake of OpenAI's Chat Completions.

`cline` from the npm registry (3.0.65) is signed in to the proxy as an OpenAI-compatible
provider (`cline auth -p openai -b <proxy>/v1`, docs/agents/cline.md) and runs
`--json "..."` in a home of its own. The upstream is `ProviderServer("openai")`. The
scripted model asks for `run_commands` with a long output 40 times, then answers; Cline's
own summary request (it compacts its history itself, past about 110,000 tokens of it by
its own count; the request has no tools) is answered with text.

Cline's provider settings take no per-session header, so its requests are the proxy's
anonymous session. Cline leaves a hub daemon running after a run; the test stops those
it started (`scripted.cline_hubs_stopped`). Found and skipped like Claude Code in
test_claude_code.py (`$CONTEXT_GRAPH_AGENTS`, `CONTEXT_GRAPH_REQUIRE_AGENTS`).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path
from typing import Any

from tests.orchestrator.gateway.scripted import (
    Recorder,
    cline_cli,
    cline_hubs_stopped,
    gateway_over_fake,
    held_results,
    reuse_between_compactions,
)

__all__ = ["cline_hubs_stopped"]  # a fixture: imported here to be found by name

BUDGET = 30_000
"""Cline's system prompt and tools take about 4,600 tokens of it, and each step adds an
output Cline cuts to about 10,000 characters: room for a few steps before the first
compaction."""
TURNS = 40
_STEP = re.compile(r"seq (\d+) 3000")


class Script:
    """`seq <n> 3000` through `run_commands`, `TURNS` times, then an answer.

    The step is read from the newest call in the request (the engine never compacts it
    away); a request without tools is Cline's summary request.
    """

    def __call__(self, body: dict[str, Any]) -> dict[str, Any]:
        if not body.get("tools"):
            return {"text": "Counting with seq."}
        made = [
            int(n)
            for message in body["messages"]
            for call in message.get("tool_calls") or []
            for n in _STEP.findall(call["function"]["arguments"])
        ]
        step = max(made, default=0) + 1
        if step > TURNS:
            return {"text": "All done."}
        command = f"seq {step} 3000"
        return {"text": f"Step {step}.", "calls": [["run_commands", {"commands": [command]}]]}


def _cline(cli: Path, home: Path, project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["node", str(cli), *args],
        cwd=project,
        env={"PATH": os.environ["PATH"], "HOME": str(home)},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=900,
    )


def test_cline_finishes_a_long_task_under_the_budget(
    tmp_path: Path, cline_hubs_stopped: None
) -> None:
    cli = cline_cli()
    project, home = tmp_path / "project", tmp_path / "home"
    project.mkdir()
    home.mkdir()
    recorder = Recorder(Script(), "chat")
    with gateway_over_fake(
        "openai", recorder, budget=BUDGET, store=tmp_path / "store", wires=("chat",)
    ) as served:
        upstream, gateway, url = served
        auth = ["auth", "-p", "openai", "-k", "sk-test", "-m", "test-model", "-b", f"{url}/v1"]
        signed = _cline(cli, home, project, *auth)
        assert signed.returncode == 0, signed.stderr[-2000:]
        run = _cline(cli, home, project, "--json", "Count with seq, step by step.")
        held = held_results(gateway, "chat")
        sessions = gateway.table_of("chat").sessions
        recorded = max(t.manager.raw.total_tokens for ts in sessions.values() for t in ts)
    assert run.returncode == 0, run.stderr[-2000:]
    assert '"text":"All done."' in run.stdout
    assert upstream.refused == [], upstream.refused[:3]
    assert max(upstream.prompts) <= BUDGET
    task = [body for body in upstream.requests if body.get("tools")]
    # Every step was asked for once and answered.
    steps = [int(n) for body in task for n in _STEP.findall(json.dumps(body["messages"][-2:]))]
    assert set(range(1, TURNS + 1)) <= set(steps)
    # One session, the anonymous one (Cline names none). Cline compacts its own history
    # once in the task (its count of it passes its threshold): its summary request is a
    # thread of its own (no tools, no results), and the history it sends after, its
    # summary and newest messages, another; the first and the last thread hold every step.
    (session,) = held
    counts = held[session]
    assert len([n for n in counts if n]) <= 2 and counts[0] + counts[-1] >= TURNS, held
    # The head of the prompt a provider caches holds: the system prompt and the tools.
    assert len({json.dumps([body["messages"][0], body["tools"]]) for body in task}) == 1
    assert recorded > 2 * BUDGET, "the agent's history grew far past the budget"
    share, pairs = reuse_between_compactions(upstream, recorder, lambda body: "tools" in body)
    assert share >= 0.9 and pairs > TURNS // 2, (share, pairs)
