"""The real opencode's own compaction, through the gateway.

opencode compacts a session itself when the tokens its last answer reported reach the
model's `limit.context` less its output reserve (a model declared with no `limit`, as in
test_opencode.py, never does). It then asks the model for a summary of the conversation
and goes on from it. Through the gateway:

- an overflow point under the budget: opencode compacts itself; its summary request is
  rendered under the budget like any other, the history it goes on from starts a new
  thread of the session, and it finishes its task;
- an overflow point over the budget: the usage opencode is told is that of the request
  the engine sent, never over the budget, so it never compacts itself, however long its
  own history grows (docs/agents/opencode.md).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.provider_server import ProviderServer
from tests.orchestrator.gateway.scripted import Recorder, gateway_over_fake
from tests.orchestrator.gateway.test_opencode import MODEL, Script, _held, _opencode, start

BUDGET = 30_000
TURNS = 24
OUTPUT = 4_000
#: opencode 1.18.33's compaction request opens its system prompt with this.
ASKS_SUMMARY = "You are a context summarization agent"
#: A step's command, as the conversation the compaction request quotes writes it.
_QUOTED_STEP = re.compile(r"seq (\d+) 3000")


class Compacting(Script):
    """`Script`, and a summary for opencode's compaction request."""

    def __init__(self) -> None:
        super().__init__(turns=TURNS)
        self.summaries = 0

    def __call__(self, body: dict[str, Any]) -> dict[str, Any]:
        if str(body["messages"][0].get("content")).startswith(ASKS_SUMMARY):
            self.summaries += 1
            steps = [int(n) for n in _QUOTED_STEP.findall(json.dumps(body["messages"]))]
            done = max(steps, default=0)
            return {"text": f"Ran seq up to step {done}; next: seq {done + 1} 3000."}
        return super().__call__(body)


def configure(project: Path, url: str, context: int) -> None:
    """The project's `opencode.json`: the gateway's provider, its model's window `context`."""
    model = {"name": "Test model", "limit": {"context": context, "output": OUTPUT}}
    config = {
        "$schema": "https://opencode.ai/config.json",
        "provider": {
            "context-graph": {
                "npm": "@ai-sdk/openai-compatible",
                "name": "context-graph",
                "options": {"baseURL": f"{url}/v1", "apiKey": "sk-test"},
                "models": {MODEL: model},
            }
        },
        "model": f"context-graph/{MODEL}",
    }
    (project / "opencode.json").write_text(json.dumps(config, indent=2))


@dataclass
class Run:
    returncode: int
    out: str
    err: str
    upstream: ProviderServer
    script: Compacting
    threads: dict[str, list[int]]
    recorded: int


def _run(tmp_path: Path, context: int) -> Run:
    opencode = _opencode()
    project, home = tmp_path / "project", tmp_path / "home"
    project.mkdir()
    home.mkdir()
    script = Compacting()
    recorder = Recorder(script, "chat")
    with gateway_over_fake(
        "openai", recorder, budget=BUDGET, store=tmp_path / "store", wires=("chat",)
    ) as served:
        upstream, gateway, url = served
        configure(project, url, context)
        agent = start(opencode, home, project, "Count with seq, step by step.")
        out, err = agent.communicate(timeout=600)
        sessions = gateway.table_of("chat").sessions
        recorded = max(t.manager.raw.total_tokens for ts in sessions.values() for t in ts)
        threads = _held(gateway)
    return Run(agent.returncode, out, err, upstream, script, threads, recorded)


def test_opencode_compacting_itself_forks_the_session_and_finishes(tmp_path: Path) -> None:
    run = _run(tmp_path, context=24_000)  # overflows at 20,000 reported tokens
    assert run.returncode == 0, run.err[-2000:]
    assert "All done." in run.out
    assert run.script.summaries >= 1, "opencode never compacted itself"
    assert run.upstream.refused == [], run.upstream.refused[:3]
    assert max(run.upstream.prompts) <= BUDGET
    asked = [
        n
        for n, body in enumerate(run.upstream.requests)
        if str(body["messages"][0].get("content")).startswith(ASKS_SUMMARY)
    ]
    for n in asked:  # the task's next request goes on from the summary
        after = run.upstream.requests[n + 1]
        assert "Ran seq up to step" in json.dumps(after["messages"])
    # The title's thread; the task's first; then for each compaction the summary
    # request's own (another system prompt) and the one the task goes on in.
    (threads,) = run.threads.values()
    assert len(threads) == 2 + 2 * run.script.summaries, threads


def test_opencode_is_never_told_a_usage_over_the_budget(tmp_path: Path) -> None:
    run = _run(tmp_path, context=40_000)  # overflows at 36,000 reported tokens
    assert run.returncode == 0, run.err[-2000:]
    assert "All done." in run.out
    assert run.script.summaries == 0
    assert run.upstream.refused == [], run.upstream.refused[:3]
    assert max(run.upstream.prompts) <= BUDGET
    assert run.recorded > 40_000 + BUDGET, "the agent's history grew far past its window"
    (threads,) = run.threads.values()
    assert sorted(threads) == [0, TURNS], "the title's thread and the task's, whole"
