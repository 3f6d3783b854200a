"""The session files the real Cline CLI writes, imported.

`cline` from the npm registry (3.0.65) runs `--json "..."` with its OpenAI-compatible
sign-in (`cline auth -p openai -b <url>/v1`) straight against `ProviderServer("openai")`
(a strict fake of Chat Completions) with a scripted model, in a home of its own:

- a task that runs a command that fails, reads a file, and writes one with Cline's
  `editor` (created, edited, a failed edit, a failed second create, an insertion): the
  import is what the model was sent, and a brief of it carries the file as it is on disk;
- a task of 40 long `seq` outputs: Cline compacts it itself (its summary request has no
  tools) and writes `<id>.compaction.json`: the summary stands for the messages before
  those Cline kept, and what follows it is what the model was sent last.

Cline leaves a hub daemon running after a run; the tests stop those they started. Found
and skipped like Claude Code (`$CONTEXT_GRAPH_AGENTS`, `CONTEXT_GRAPH_REQUIRE_AGENTS`).
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.provider_server import ProviderServer
from context_graph.graph.content import TextPart
from context_graph.graph.events import AssistantTurn, Compaction, ToolResult, UserTurn
from context_graph.importers import detect_format, load_graph, load_sessions
from processors.summarize.brief import parse
from processors.summarize.extractive import ExtractiveSummarizer
from tests.orchestrator.gateway.scripted import cline_cli, cline_hubs_stopped

__all__ = ["cline_hubs_stopped"]  # a fixture: imported here to be found by name


def _run(
    cli: Path,
    home: Path,
    project: Path,
    respond: Callable[[dict[str, Any]], dict[str, Any]],
    prompt: str,
) -> tuple[Path, list[dict[str, Any]]]:
    """Sign Cline in at a fake upstream, run `prompt`; its session file and the requests."""
    env = {"PATH": os.environ["PATH"], "HOME": str(home)}
    asked: list[dict[str, Any]] = []

    def recorded(body: dict[str, Any]) -> dict[str, Any]:
        asked.append(body)
        return respond(body)

    with ProviderServer("openai", respond=recorded, factor=1.0) as upstream:
        for args in (
            [
                "auth",
                "-p",
                "openai",
                "-k",
                "sk-test",
                "-m",
                "test-model",
                "-b",
                f"{upstream.url}/v1",
            ],
            ["--json", prompt],
        ):
            done = subprocess.run(
                ["node", str(cli), *args],
                cwd=project,
                env=env,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                timeout=600,
            )
            assert done.returncode == 0, done.stderr[-2000:]
        assert upstream.refused == [], upstream.refused[:3]
    (path,) = (home / ".cline" / "data" / "sessions").glob("*/*.messages.json")
    return path, asked


def _text(event: Any) -> str:
    return "".join(p.text for p in event.content if isinstance(p, TextPart))


def _tools(messages: list[dict[str, Any]]) -> list[str]:
    return [m["content"] for m in messages if m["role"] == "tool"]


class EditorTask:
    """A failing command, a read, then Cline's `editor`: create, edit, two that fail, insert."""

    def __init__(self, project: Path) -> None:
        self.notes = project / "notes.txt"
        self.out = str(project / "out.txt")

    def __call__(self, body: dict[str, Any]) -> dict[str, Any]:
        steps: list[tuple[str, dict[str, Any]]] = [
            ("run_commands", {"commands": ["false"]}),
            ("read_files", {"files": [{"path": str(self.notes)}]}),
            ("editor", {"path": self.out, "new_text": "cap is $500\ndone\n"}),
            ("editor", {"path": self.out, "old_text": "cap is $500", "new_text": "cap is $800"}),
            ("editor", {"path": self.out, "old_text": "not in the file", "new_text": "x"}),
            ("editor", {"path": self.out, "new_text": "again"}),
            ("editor", {"path": self.out, "insert_line": 2, "new_text": "inserted"}),
        ]
        done = len(_tools(body["messages"]))
        if done < len(steps):
            return {"text": f"Step {done + 1}.", "calls": [list(steps[done])]}
        return {"text": "All done."}


def test_a_task_imports_as_the_model_was_sent_it(tmp_path: Path, cline_hubs_stopped: None) -> None:
    cli = cline_cli()
    home, project = tmp_path / "home", tmp_path / "project"
    home.mkdir()
    project.mkdir()
    (project / "notes.txt").write_text("alpha\nbudget cap is $500\n", "utf-8")
    path, asked = _run(
        cli, home, project, EditorTask(project), "Check notes.txt, then write out.txt."
    )
    assert detect_format(path) == "cline"
    (session,) = load_sessions(path, strict=True)
    # Cline's `<id>.json` beside the messages: where and how the session ran.
    assert (session.meta["cwd"], session.meta["status"]) == (str(project), "completed")
    assert session.meta["version"] == "3.0.65"
    events = session.events
    last = asked[-1]["messages"]
    # The system prompt and the user's words as sent (Cline stores them wrapped).
    assert _text(events[0]) == last[0]["content"]
    (user,) = [e for e in events if isinstance(e, UserTurn)]
    assert _text(user) == last[1]["content"] == "Check notes.txt, then write out.txt."
    # Every call and output as sent: the tool's JSON output is the JSON text Cline sent.
    results = [e for e in events if isinstance(e, ToolResult)]
    assert [_text(r) for r in results] == _tools(last)
    calls = [c for e in events if isinstance(e, AssistantTurn) for c in e.tool_calls]
    sent = [c for m in last if m["role"] == "assistant" for c in m.get("tool_calls") or []]
    assert [(c.id, c.name) for c in calls] == [(c["id"], c["function"]["name"]) for c in sent]
    assert isinstance(events[-1], AssistantTurn) and _text(events[-1]) == "All done."
    assert events[-1].model == "test-model"
    # A brief of the session carries the file the agent wrote, as it is on disk: the
    # failed edit and the failed second create left out, the edit and insertion applied.
    graph = load_graph(path)
    brief = parse(ExtractiveSummarizer().brief([graph[i] for i in graph.transcript()]))
    assert brief is not None
    assert brief.written == {str(project / "out.txt"): (project / "out.txt").read_text()}
    # Cline reports the failing command in its JSON output, with no error flag: the brief
    # reads the report, and lists the command as it ran.
    assert brief.commands[0] == (
        "ran `false`: failed (exit 1); output of `run_commands`: `Command exited with code 1`"
    )


class SeqTask:
    """`seq <n> 3000` forty times, then an answer; Cline's summary request (no tools) gets text."""

    SUMMARY = "SUMMARY: counting with seq; the cap is $500."

    def __call__(self, body: dict[str, Any]) -> dict[str, Any]:
        if not body.get("tools"):
            return {"text": self.SUMMARY}
        made = [
            int(n)
            for m in body["messages"]
            for c in m.get("tool_calls") or []
            for n in re.findall(r"seq (\d+) 3000", c["function"]["arguments"])
        ]
        step = max(made, default=0) + 1
        if step > 40:
            return {"text": "All done."}
        return {
            "text": f"Step {step}.",
            "calls": [["run_commands", {"commands": [f"seq {step} 3000"]}]],
        }


def test_clines_compaction_imports_where_cline_put_it(
    tmp_path: Path, cline_hubs_stopped: None
) -> None:
    cli = cline_cli()
    home, project = tmp_path / "home", tmp_path / "project"
    home.mkdir()
    project.mkdir()
    path, asked = _run(cli, home, project, SeqTask(), "Count with seq; the cap is $500.")
    assert path.with_name(path.name.replace(".messages.", ".compaction.")).is_file()
    assert any(not body.get("tools") for body in asked)  # Cline asked for its summary
    (session,) = load_sessions(path, strict=True)
    assert session.meta["compaction"].startswith("applied")
    (summary,) = [e for e in session.events if isinstance(e, Compaction)]
    assert summary.origin == "cline"
    last = asked[-1]["messages"]
    # Cline sends its summary as a user message right after the system prompt.
    assert _text(summary) == last[1]["content"] and SeqTask.SUMMARY in _text(summary)
    after = session.events[session.events.index(summary) + 1 :]
    calls = [c.id for e in after if isinstance(e, AssistantTurn) for c in e.tool_calls]
    sent = [c["id"] for m in last if m["role"] == "assistant" for c in m.get("tool_calls") or []]
    assert calls == sent
    # Cline cuts long outputs in the middle when it sends them; the record keeps them
    # whole: each sent output starts as the recorded one does.
    for result, text in zip(
        [e for e in after if isinstance(e, ToolResult)], _tools(last), strict=True
    ):
        recorded = _text(result)
        # (the cut is made in the output's text, whose newlines the JSON then escapes)
        head = re.sub(r"(\\n|\s)+$", "", text.split("...[truncated", 1)[0])
        assert recorded.startswith(head)
