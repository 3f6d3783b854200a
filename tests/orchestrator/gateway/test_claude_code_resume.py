"""The real Claude Code resumes its session through a proxy killed between two turns.

`context-graph proxy` runs as a process (`proxy_process.ProxyProcess`) with a SQLite store
between Claude Code and the strict fake of Anthropic's API. The first turn (`claude -p`)
runs a few tool calls; the proxy is then killed (SIGKILL: nothing closed, nothing
flushed) and started again on the same store; the second turn (`claude -p --continue`,
which Claude Code answers from its own transcript on disk, offline, under the same
session id) must continue the stored conversation: the same session and thread, every
node of the first turn once, none lost, none taken in twice. The resumed run's first
request sends its prompt as a list of one text block and the next ones as a string, and
its system prompt may differ from the first run's (2.1.197 dropped "(1M context)" from the
model's name): neither starts a thread.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from benchmarks.provider_server import ProviderServer
from context_graph.graph.nodes import UserNode
from orchestrator.gateway.listing import list_sessions, read_thread
from tests.orchestrator.gateway.proxy_process import ProxyProcess
from tests.orchestrator.gateway.test_claude_code import BUDGET, _claude_code, start

FIRST, SECOND = "Count with seq.", "Count again, from 500."
CALLS = 3
"""Tool calls per turn."""


class TwoTurns:
    """Asks for `seq` `CALLS` times per prompt, then says which prompt it finished.

    A request belongs to the second turn once its history holds the second prompt;
    steps are counted per turn here (the gateway may compact what it sends).
    """

    def __init__(self) -> None:
        self.steps = {FIRST: 0, SECOND: 0}

    def __call__(self, body: dict[str, Any]) -> dict[str, Any]:
        if body.get("output_config", {}).get("format"):  # the session title
            return {"text": json.dumps({"title": "Counting"})}
        turn = SECOND if SECOND in json.dumps(body["messages"]) else FIRST
        done = self.steps[turn]
        if done >= CALLS:
            return {"text": f"Finished: {turn}"}
        self.steps[turn] = done + 1
        return {"text": f"Step {done + 1}.", "calls": [["Bash", {"command": f"seq {done} 40"}]]}


def _texts(location: str) -> list[tuple[str, str]]:
    """The kind and text of each node of a thread's record, in transcript order."""
    with read_thread(location) as restored:
        return [(restored.raw[n].kind, restored.raw[n].text) for n in restored.raw.transcript()]


def _requests(location: str) -> list[str]:
    """The texts of a thread's user turns that are the user's own (not notices)."""
    with read_thread(location) as restored:
        nodes = [restored.raw[n] for n in restored.raw.transcript()]
        return [n.text for n in nodes if isinstance(n, UserNode) and not n.notice]


def _turn(claude: Path, url: str, home: Path, project: Path, prompt: str, *flags: str) -> str:
    """One `claude -p` run to its end: what it printed."""
    agent = start(claude, url, home, project, prompt, *flags)
    out, err = agent.communicate(timeout=600)
    assert agent.returncode == 0, err[-2000:]
    return str(out)


def test_claude_code_continues_its_session_on_a_proxy_killed_between_turns(
    tmp_path: Path,
) -> None:
    claude = _claude_code()
    project, home, store = tmp_path / "project", tmp_path / "home", tmp_path / "store"
    for folder in (project, home, store):
        folder.mkdir()
    script = TwoTurns()
    with ProviderServer("anthropic", respond=script, factor=1.0, limit=BUDGET) as upstream:
        proxy = ProxyProcess(upstream.url, store, BUDGET)
        try:
            first = _turn(claude, proxy.url, home, project, FIRST)
            proxy.popen.kill()  # SIGKILL between the turns
            proxy.popen.wait()
        finally:
            proxy.close()
        (before,) = list_sessions(store)
        again = ProxyProcess(upstream.url, store, BUDGET)
        try:
            second = _turn(claude, again.url, home, project, SECOND, "--continue")
        finally:
            again.close()
    assert f"Finished: {FIRST}" in first and f"Finished: {SECOND}" in second
    assert script.steps == {FIRST: CALLS, SECOND: CALLS}
    assert upstream.refused == [], upstream.refused[:3]
    (after,) = list_sessions(store)
    assert after.session == before.session, "the second turn came in the same session"
    held = [(thread, _texts(thread.location)) for thread in after.threads]
    tasks = [(t, texts) for t, texts in held if any(kind == "tool_result" for kind, _ in texts)]
    assert len(tasks) == 1, [[kind for kind, _ in texts] for _, texts in held]
    ((task, texts),) = tasks  # continued, not started again beside it
    kinds = [kind for kind, _ in texts]
    assert kinds.count("tool_result") == 2 * CALLS, "every output kept once"
    assert sum(FIRST in text for kind, text in texts if kind == "user") == 1
    assert sum(SECOND in text for kind, text in texts if kind == "user") == 1
    finished = [text for kind, text in texts if kind == "assistant" and "Finished" in text]
    assert finished == [f"Finished: {FIRST}"], "the first turn's answer, taken in once"
    # The reminders around each prompt are notices: the two prompts are the user's only
    # requests, the second the latest (context_graph.formats.harness).
    assert _requests(task.location) == [FIRST, SECOND]
