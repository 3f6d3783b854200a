"""The real Claude Code compacting itself through the gateway.

With a budget above the point where Claude Code compacts on its own (its window, less its
output reserve, less 13,000 tokens; `CLAUDE_CODE_AUTO_COMPACT_WINDOW=100000` brings that
to about 67,000), the usage it is told crosses that point and it asks for its own
summary: the turn before again, with its compaction prompt appended to the message of
tool results. That request is rendered under the budget like any other (it was passed
through raw, Claude Code's whole history, before `held_prefix` stopped counting a
message held in part as held), and the agent goes on from its summary.

With `DISABLE_AUTO_COMPACT=1` it never does, however large the usage (docs/agents/claude-code.md).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from benchmarks.provider_server import ProviderServer
from orchestrator.gateway import session_of
from tests.orchestrator.gateway.test_claude_code import _claude_code, served, start

BUDGET = 90_000
TURNS = 12
#: Claude Code 2.1.197's compaction prompt opens its instructions with this.
ASKS_SUMMARY = "create a detailed summary of the conversation so far"


class Script:
    """A long `seq` output per turn, then done; a request for a summary gets one."""

    def __init__(self) -> None:
        self.steps: dict[str, int] = {}
        self.summaries = 0

    def __call__(self, body: dict[str, Any]) -> dict[str, Any]:
        if body.get("output_config", {}).get("format"):  # the session title
            return {"text": json.dumps({"title": "Counting"})}
        session = session_of({}, body)
        done = self.steps.get(session, 0)
        if ASKS_SUMMARY in json.dumps(body["messages"][-1]):
            self.summaries += 1
            return {"text": f"<analysis>Counting.</analysis><summary>Did {done} steps.</summary>"}
        if done >= TURNS:
            return {"text": "All done."}
        self.steps[session] = done + 1
        command = f"seq {done + 1} 4000"
        return {"text": f"Step {done + 1}.", "calls": [["Bash", {"command": command}]]}


def _run(tmp_path: Path, settings: dict[str, str]) -> tuple[Any, Script, ProviderServer, int]:
    """Claude Code's run; and how many threads' records hold its compaction prompt."""
    claude = _claude_code()
    script = Script()
    with served(tmp_path, script, BUDGET) as run:
        upstream = run.upstream
        agent = start(claude, run.url, run.home, run.project, "Count with seq.", settings=settings)
        agent.communicate(timeout=600)
        prompted = sum(
            any(ASKS_SUMMARY in node.text for node in thread.manager.raw if node.kind == "user")
            for threads in run.gateway.table.sessions.values()
            for thread in threads
        )
    return agent, script, upstream, prompted


def test_its_own_compaction_request_is_rendered_under_the_budget(tmp_path: Path) -> None:
    agent, script, upstream, prompted = _run(
        tmp_path, {"CLAUDE_CODE_AUTO_COMPACT_WINDOW": "100000"}
    )
    assert agent.returncode == 0
    assert script.summaries >= 1, "Claude Code compacted itself"
    assert upstream.refused == [], upstream.refused[:2]
    assert max(upstream.prompts) <= BUDGET
    # A request passed through raw would carry Claude Code's own system messages.
    assert not any(m["role"] == "system" for r in upstream.requests for m in r["messages"])
    assert prompted >= 1, "the prompt was taken into a thread's record"
    assert list(script.steps.values()) == [TURNS]


def test_with_auto_compact_disabled_it_never_compacts_itself(tmp_path: Path) -> None:
    settings = {"CLAUDE_CODE_AUTO_COMPACT_WINDOW": "100000", "DISABLE_AUTO_COMPACT": "1"}
    agent, script, upstream, _ = _run(tmp_path, settings)
    assert agent.returncode == 0
    assert script.summaries == 0
    assert upstream.refused == []
    assert max(upstream.prompts) > 67_000, "the usage it was told passed its own threshold"
