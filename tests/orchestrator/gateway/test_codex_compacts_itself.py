"""The real Codex CLI's own compaction, through the gateway.

Codex compacts itself when the tokens its last answer reported (plus its estimate of what
it added since) reach `model_auto_compact_token_limit`. With a custom provider it asks
the model for a handoff summary: its whole history again, with its compaction prompt as
a last user message; it then goes on from a history of the summary alone. Through the
gateway:

- a limit under the budget: Codex compacts itself. Its summary request is rendered under
  the budget like any other, and the history it goes on from is a turn the gateway did
  not hold, so the session forks a new thread there; the agent finishes its task.
- a limit over the budget (but far under the history the agent keeps): the usage Codex
  is told is that of the request the engine sent, never over the budget, so Codex never
  compacts itself, however long its own history grows (docs/agents/codex.md).
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.provider_server import ProviderServer
from orchestrator.gateway import session_of
from tests.orchestrator.gateway.scripted import Recorder, gateway_over_fake
from tests.orchestrator.gateway.test_codex import _codex, run_codex

BUDGET = 30_000
TURNS = 16
#: Codex CLI 0.171.0's compaction prompt opens with this.
ASKS_SUMMARY = "CONTEXT CHECKPOINT COMPACTION"


class Script:
    """`seq` with a long output per turn, then done; a request for a summary gets one."""

    def __init__(self) -> None:
        self.steps: dict[str, int] = {}
        self.summaries = 0

    def __call__(self, body: dict[str, Any]) -> dict[str, Any]:
        session = session_of({}, body)  # Codex's `prompt_cache_key` is its session id
        done = self.steps.get(session, 0)
        if ASKS_SUMMARY in json.dumps(body["input"][-1]):
            self.summaries += 1
            return {"text": f"Ran seq {done} times; next: seq {done + 1} 3000."}
        if done >= TURNS:
            return {"text": "All done."}
        self.steps[session] = done + 1
        return {"calls": [["exec_command", {"cmd": f"seq {done + 1} 3000"}]]}


@dataclass
class Run:
    done: subprocess.CompletedProcess[str]
    upstream: ProviderServer
    script: Script
    threads: list[int]
    """The tokens each thread of the one session recorded."""


def _run(tmp_path: Path, limit: int) -> Run:
    """Codex's run with `model_auto_compact_token_limit = limit`."""
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
        done = run_codex(home, project, url, settings=f"model_auto_compact_token_limit = {limit}\n")
        ((_, threads),) = gateway.table_of("responses").sessions.items()
        recorded = [thread.manager.raw.total_tokens for thread in threads]
    return Run(done, upstream, script, recorded)


def test_codex_compacting_itself_forks_the_session_and_finishes(tmp_path: Path) -> None:
    run = _run(tmp_path, limit=12_000)
    done, upstream, script = run.done, run.upstream, run.script
    assert done.returncode == 0, done.stderr[-2000:]
    assert "All done." in done.stdout
    assert script.summaries >= 2, "Codex never compacted itself under a 12,000-token limit"
    assert list(script.steps.values()) == [TURNS], "each step once: the summary carried on"
    assert upstream.refused == [], upstream.refused[:3]
    assert max(upstream.prompts) <= BUDGET
    asked = [n for n, body in enumerate(upstream.requests) if ASKS_SUMMARY in json.dumps(body)]
    # The request after each summary holds the summary, not the history it replaced.
    for n in asked:
        after = json.dumps(upstream.requests[n + 1]["input"])
        assert ASKS_SUMMARY not in after and "Ran seq" in after
    assert len(run.threads) == script.summaries + 1, "each compaction starts a thread"


def test_codex_is_never_told_a_usage_over_the_budget(tmp_path: Path) -> None:
    run = _run(tmp_path, limit=40_000)
    done, upstream, script = run.done, run.upstream, run.script
    assert done.returncode == 0, done.stderr[-2000:]
    assert "All done." in done.stdout
    assert script.summaries == 0
    assert len(upstream.requests) == TURNS + 1 and max(upstream.prompts) <= BUDGET
    assert len(run.threads) == 1
    assert run.threads[0] > 40_000 + BUDGET, "the agent's history grew far past its own limit"
