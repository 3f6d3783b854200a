"""The real gemini-cli, through the gateway, against a strict fake of Gemini's API.

`@google/gemini-cli` from the npm registry runs as a user runs it (`-p`, `--yolo` so its
shell tool runs unasked) with `GOOGLE_GEMINI_BASE_URL` at the gateway and its Gemini API
key auth selected in its settings (with only the base URL set, its non-interactive mode
refuses to start: "Invalid auth method selected"); the upstream is
`ProviderServer("gemini")`. The scripted model asks for `run_shell_command` with a long
output 40 times, then answers. Found and skipped like Claude Code in
test_claude_code.py (`$CONTEXT_GRAPH_AGENTS`, `CONTEXT_GRAPH_REQUIRE_AGENTS`).

gemini-cli 0.61 names no session in what it sends (no header, nothing in the body): its
sessions share the gateway's anonymous session, where conversations are told apart by
their content (`orchestrator.gateway.threads`).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from benchmarks.provider_server import ProviderServer
from orchestrator.gateway import ANONYMOUS, Gateway
from tests.orchestrator.gateway.scripted import (
    Recorder,
    agent_cli,
    gateway_over_fake,
    held_results,
    reuse_between_compactions,
)

BUDGET = 30_000
"""gemini-cli's own system prompt and tools take a third of it (about 10,000 tokens)."""
TURNS = 40
_STEP = re.compile(r"session (\d+), step (\d+)")


def _gemini_cli() -> Path:
    return agent_cli("@google/gemini-cli/bundle/gemini.js", "gemini-cli")


class Script:
    """Asks for `seq` with a long output `turns` times per conversation, then answers.

    The request names no session, and the gateway compacts its history: the
    conversation and its step are written into the command the model asks for, and read
    back from the newest call the request holds (the newest turns are never compacted).
    The CLI's own JSON side calls (its loop check) are answered as it asks.
    """

    def __init__(self, turns: int = TURNS, count: int = 3000) -> None:
        self.turns = turns
        self.count = count
        self.steps: dict[int, int] = {}
        self.side_calls = 0
        self._lock = threading.Lock()

    def __call__(self, body: dict[str, Any]) -> dict[str, Any]:
        if body.get("generationConfig", {}).get("responseMimeType") == "application/json":
            self.side_calls += 1
            return {"text": json.dumps(_side_answer(body["generationConfig"]))}
        with self._lock:
            found = _newest_step(body["contents"])
            session, done = found if found else (len(self.steps) + 1, 0)
            self.steps[session] = done
        if done >= self.turns:
            return {"text": "All done."}
        command = f"echo session {session}, step {done + 1}; seq {done + 1} {self.count}"
        return {"text": f"Step {done + 1}.", "calls": [["run_shell_command", {"command": command}]]}


def _newest_step(contents: list[dict[str, Any]]) -> tuple[int, int] | None:
    for content in reversed(contents):
        for part in reversed(content.get("parts", [])):
            call = part.get("functionCall")
            if call is not None:
                found = _STEP.search(str(call.get("args", {}).get("command", "")))
                if found:
                    return int(found[1]), int(found[2])
    return None


def _side_answer(config: dict[str, Any]) -> dict[str, Any]:
    """What gemini-cli's JSON side calls want: nothing is stuck, the user speaks next."""
    fields = config.get("responseJsonSchema", {}).get("properties", {})
    known = {
        "unproductive_state_analysis": "Each step counts further.",
        "unproductive_state_confidence": 0.0,
        "reasoning": "The task is done.",
        "next_speaker": "user",
    }
    return {name: known[name] for name in fields if name in known}


def start(cli: Path, url: str, home: Path, project: Path, prompt: str) -> Any:
    """gemini-cli started in `project` on `prompt` (`-p`, `--yolo`), with the gateway's URL."""
    settings = home / ".gemini" / "settings.json"
    settings.parent.mkdir(parents=True, exist_ok=True)
    settings.write_text(
        json.dumps(
            {
                "security": {"auth": {"selectedType": "gemini-api-key"}},
                "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
                "privacy": {"usageStatisticsEnabled": False},
                "telemetry": {"enabled": False},
                "ide": {"enabled": False},
            }
        )
    )
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(home),
        "GOOGLE_GEMINI_BASE_URL": url,
        "GEMINI_API_KEY": "test-key",
    }
    command = ["node", str(cli), "-p", prompt, "--yolo", "--skip-trust", "-m", "gemini-2.5-flash"]
    return subprocess.Popen(
        command,
        cwd=project,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _held(gateway: Any) -> dict[str, list[int]]:
    return held_results(gateway, "gemini")


@contextlib.contextmanager
def served(
    tmp_path: Path, script: Script, budget: int = BUDGET
) -> Iterator[tuple[ProviderServer, Recorder, Gateway, str]]:
    """The gateway (coding policy, a SQLite store) before a strict fake of Gemini's API
    answering with `script`; the fake, its recorder, the gateway and the gateway's URL."""
    recorder = Recorder(script, "gemini")
    with gateway_over_fake(
        "gemini", recorder, budget=budget, store=tmp_path / "store", wires=("gemini",)
    ) as running:
        yield running.upstream, recorder, running.gateway, running.url


def test_gemini_cli_finishes_a_long_task_under_the_budget(tmp_path: Path) -> None:
    cli = _gemini_cli()
    project, home = tmp_path / "project", tmp_path / "home"
    project.mkdir()
    home.mkdir()
    script = Script()
    with served(tmp_path, script) as (upstream, recorder, gateway, url):
        agent = start(cli, url, home, project, "Count with seq, step by step.")
        out, err = agent.communicate(timeout=900)
        held = _held(gateway)
        threads = [t for ts in gateway.table_of("gemini").sessions.values() for t in ts]
        recorded = max(t.manager.raw.total_tokens for t in threads)
        main = max(threads, key=lambda t: [n.kind for n in t.manager.raw].count("tool_result"))
        asked = [n for n in main.manager.raw if n.kind == "user" and "Count with seq" in n.text]
        masked = [n for n in main.manager.raw if "<tool_output_masked>" in n.text]
    assert agent.returncode == 0, err[-2000:]
    assert "All done." in out
    assert upstream.refused == [], upstream.refused[:3]
    assert max(upstream.prompts) <= BUDGET
    assert upstream.prompts[0] > BUDGET / 4, "the agent's own part of a request"
    assert script.steps == {1: TURNS}
    assert list(held) == [ANONYMOUS]
    assert max(held[ANONYMOUS]) == TURNS, held
    assert len(asked) == 1, "the task was taken in once, not again with every request"
    # gemini-cli masks its old tool outputs itself past 50,000 tokens of them: each pass
    # rewrites the history's head, which forks the thread (the record is append-only).
    assert masked and len(held[ANONYMOUS]) > 1, held
    assert recorded > 2 * BUDGET, "the agent's history grew far past the budget"
    assert (tmp_path / "store" / "gemini" / ANONYMOUS / "thread-0.db").exists()
    main_calls = [r for r in upstream.requests if "responseMimeType" not in r["generationConfig"]]
    heads = {json.dumps([r["systemInstruction"], r["tools"]]) for r in main_calls}
    assert len(heads) == 1, "the cached prefix's head (system prompt, tools) never changed"
    # Between compactions (the engine's, and gemini-cli's own masking passes).
    share, pairs = reuse_between_compactions(upstream, recorder, _task_call)
    assert share >= 0.9 and pairs > TURNS // 2, (share, pairs)


def _task_call(body: dict[str, Any]) -> bool:
    """A request of the task's conversation (not a JSON-answer side call's)."""
    return "responseMimeType" not in body["generationConfig"]


def test_two_sessions_at_once_in_one_project_stay_apart(tmp_path: Path) -> None:
    """Same project, same prompt, same system prompt, run at the same time: two threads."""
    cli = _gemini_cli()
    project, home = tmp_path / "project", tmp_path / "home"
    project.mkdir()
    home.mkdir()
    script = Script(turns=12)
    with gateway_over_fake(
        "gemini", script, budget=BUDGET, store=None, wires=("gemini",)
    ) as served:
        upstream, gateway, url = served
        agents = [start(cli, url, home, project, "Count with seq.") for _ in range(2)]
        finished = [agent.communicate(timeout=900) for agent in agents]
        held = _held(gateway)
    for agent, (out, err) in zip(agents, finished, strict=True):
        assert agent.returncode == 0, err[-2000:]
        assert "All done." in out
    assert upstream.refused == [], upstream.refused[:3]
    assert script.steps == {1: 12, 2: 12}
    assert sorted(held[ANONYMOUS])[-2:] == [12, 12], held


def test_gemini_cli_folder_tree_is_cut_once_the_task_compacts(tmp_path: Path) -> None:
    """gemini-cli's session context lists the workspace; the engine's first compaction
    trims that tree to its top levels (`trim_preamble_trees`), and it stays trimmed while
    the CLI sends it whole with every request."""
    cli = _gemini_cli()
    project, home = tmp_path / "project", tmp_path / "home"
    for folder in range(12):
        for file in range(12):
            path = project / f"pkg{folder}" / f"module_{folder}_{file}.ts"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("export {};\n")
    home.mkdir()
    # Short outputs: no newest output alone holds what a compaction must free, so the
    # runs go through the stages (a long one is cut first, and the history stays).
    script = Script(turns=30, count=150)
    with served(tmp_path, script, budget=20_000) as (upstream, _, _, url):
        agent = start(cli, url, home, project, "Count with seq, step by step.")
        out, err = agent.communicate(timeout=900)
    assert agent.returncode == 0, err[-2000:]
    assert "All done." in out
    assert upstream.refused == [], upstream.refused[:3]
    task = [json.dumps(body["contents"]) for body in upstream.requests if _task_call(body)]
    whole = [i for i, text in enumerate(task) if "module_11_11.ts" in text]
    trimmed = [i for i, text in enumerate(task) if "deeper entries of this tree omitted" in text]
    assert whole and trimmed, (len(task), whole, trimmed, str(upstream.prompts))
    # The CLI sent its session context and the prompt as one content: the prompt is the
    # user's request, the context a notice, trimmed from the first compaction on.
    first = task[trimmed[0]]
    assert "<session_context>" in first and "pkg11/" in first and "Count with seq" in first
    assert max(whole) < trimmed[0], (whole, trimmed)
