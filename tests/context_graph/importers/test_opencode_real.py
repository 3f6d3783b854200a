"""A session the real opencode ran, exported with `opencode export` and imported.

`opencode-ai` from the npm registry runs `opencode run` offline straight against
`ProviderServer("openai")` (the project's `opencode.json` points a provider at it, as in
the gateway test) with a scripted model: it reads a file that does not exist and runs a
command in one step, runs a failing command in the next, then answers. `opencode
export <session id>` writes the session out; the export is imported strictly and
checked against what the model was sent, and so is the database opencode keeps it in.
Found and skipped like Claude Code
(`$CONTEXT_GRAPH_AGENTS`, `CONTEXT_GRAPH_REQUIRE_AGENTS`).
"""

from __future__ import annotations

import json
import socket
import sqlite3
import subprocess
import time
import urllib.request
from pathlib import Path
from typing import Any

from benchmarks.provider_server import ProviderServer
from context_graph.graph.content import TextPart
from context_graph.graph.context_graph import ContextGraph
from context_graph.graph.events import AssistantTurn, Compaction, ToolResult, UserTurn
from context_graph.importers import load_sessions
from context_graph.testing import WordCounter
from orchestrator import ContextManager
from tests.orchestrator.gateway.scripted import agent_cli
from tests.orchestrator.gateway.test_opencode import configure, offline, start
from tests.orchestrator.gateway.test_opencode_compacts_itself import Compacting
from tests.orchestrator.gateway.test_opencode_compacts_itself import configure as configure_window


def _text(event: Any) -> str:
    return "".join(part.text for part in event.content if isinstance(part, TextPart))


class _Scripted:
    """The model: its answers in turn (the last again once they run out); opencode's
    session-title requests are answered apart and not counted."""

    def __init__(self, answers: list[dict[str, Any]]) -> None:
        self.answers = answers
        self.asked: list[dict[str, Any]] = []

    def __call__(self, body: dict[str, Any]) -> dict[str, Any]:
        if "title generator" in str(body["messages"][0].get("content")):
            return {"text": "Notes"}
        self.asked.append(body)
        return self.answers[min(len(self.asked), len(self.answers)) - 1]


def _export(opencode: Path, home: Path, project: Path, session_id: str, path: Path) -> Path:
    """`opencode export <session_id>`, written to `path`."""
    exported = subprocess.run(
        [str(opencode), "export", session_id],
        cwd=project,
        env=offline(home),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    path.write_text(exported.stdout, "utf-8")
    return path


def _run(opencode: Path, home: Path, project: Path, model: _Scripted) -> str:
    """`opencode run` on "Check the notes." against `model`; its output."""
    with ProviderServer("openai", respond=model, factor=1.0, limit=200_000) as upstream:
        configure(project, upstream.url)
        agent = start(opencode, home, project, "Check the notes.")
        out, err = agent.communicate(timeout=600)
        assert upstream.refused == [], upstream.refused[:3]
    assert agent.returncode == 0, err[-2000:]
    return str(out)


def test_an_exported_session_imports_what_the_model_was_given(tmp_path: Path) -> None:
    opencode = agent_cli("opencode-ai/bin/opencode.exe", "opencode")
    home, project = tmp_path / "home", tmp_path / "project"
    home.mkdir()
    project.mkdir()
    missing = str(project / "missing.txt")
    answers: list[dict[str, Any]] = [
        {
            "text": "Reading.",
            "calls": [
                ["read", {"filePath": missing}],
                ["bash", {"command": "echo two", "description": "Two"}],
            ],
        },
        {"calls": [["bash", {"command": "false", "description": "Fail"}]]},
        {"text": "All done."},
    ]
    model = _Scripted(answers)
    out = _run(opencode, home, project, model)
    asked = model.asked
    assert "All done." in out and len(asked) == 3
    database = home / ".local" / "share" / "opencode" / "opencode.db"
    with sqlite3.connect(database) as db:
        (session_id,) = db.execute("select id from session").fetchone()
    path = _export(opencode, home, project, session_id, tmp_path / "session.json")
    (session,) = load_sessions(path, strict=True)
    events = list(session.events)
    assert session.meta["session_id"] == session_id and session.meta["version"] == "1.18.33"
    told = [e for e in events if isinstance(e, UserTurn)]
    assert len(told) == 1 and "Check the notes." in _text(told[0])
    turns = [e for e in events if isinstance(e, AssistantTurn)]
    assert [[c.name for c in t.tool_calls] for t in turns] == [["read", "bash"], ["bash"], []]
    results = [e for e in events if isinstance(e, ToolResult)]
    assert [r.call_id for r in results] == [c.id for t in turns for c in t.tool_calls]
    # The failed read is an error; the failing command's exit status is kept.
    assert results[0].is_error and "missing.txt" in _text(results[0])
    assert (results[1].exit_code, results[2].exit_code) == (0, 1)
    # Each output as the model was sent it.
    sent = {
        m["tool_call_id"]: m["content"] for m in asked[-1]["messages"] if m.get("role") == "tool"
    }
    for result in results:
        content = sent[result.call_id]
        text = content if isinstance(content, str) else json.dumps(content)
        assert _text(result) in text
    assert _text(events[-1]) == "All done."
    manager = ContextManager("openai", 20_000)
    manager.ingest(events)
    assert "echo two" in json.dumps(manager.render_sync().payload)
    # The database opencode keeps (write-ahead log and all) reads as the export does.
    (stored,) = load_sessions(database, strict=True)
    assert [e.model_dump(exclude={"source"}) for e in stored.events] == [
        e.model_dump(exclude={"source"}) for e in events
    ]


def test_opencodes_own_compactions_import_as_compactions(tmp_path: Path) -> None:
    """opencode compacting itself (a model window of 20,000 tokens, as in the gateway's
    test of it): each of its compactions imports as a `Compaction` holding the summary
    the model wrote, and the session ingests."""
    opencode = agent_cli("opencode-ai/bin/opencode.exe", "opencode")
    home, project = tmp_path / "home", tmp_path / "project"
    home.mkdir()
    project.mkdir()
    script = Compacting()
    with ProviderServer("openai", respond=script, factor=1.0, limit=200_000) as upstream:
        configure_window(project, upstream.url, 20_000)
        agent = start(opencode, home, project, "Count with seq.")
        _, err = agent.communicate(timeout=900)
        assert upstream.refused == [], upstream.refused[:3]
    assert agent.returncode == 0, err[-2000:]
    assert script.summaries > 0
    database = home / ".local" / "share" / "opencode" / "opencode.db"
    (session,) = load_sessions(database, strict=True)
    compactions = [e for e in session.events if isinstance(e, Compaction)]
    assert len(compactions) == script.summaries
    assert all(_text(c).startswith("Ran seq up to step") for c in compactions)
    assert all(c.origin == "opencode" for c in compactions)
    ContextGraph(counter=WordCounter()).ingest(session.events)


def test_the_storage_folder_of_an_older_opencode_imports_as_its_export(tmp_path: Path) -> None:
    """opencode 1.1 (installed as `opencode-storage`) kept its sessions as a folder of JSON
    files, not a database: the folder, the data folder holding it and the session's own
    file import as that version's `opencode export` of the session does."""
    opencode = agent_cli("opencode-storage/bin/opencode", "opencode 1.1")
    home, project = tmp_path / "home", tmp_path / "project"
    home.mkdir()
    project.mkdir()
    answers: list[dict[str, Any]] = [
        {"text": "Reading.", "calls": [["bash", {"command": "echo two", "description": "Two"}]]},
        {"calls": [["bash", {"command": "false", "description": "Fail"}]]},
        {"text": "All done."},
    ]
    model = _Scripted(answers)
    _run(opencode, home, project, model)
    asked = model.asked
    data = home / ".local" / "share" / "opencode"
    assert not (data / "opencode.db").exists()  # this version keeps no database
    (session_file,) = (data / "storage" / "session").glob("*/*.json")
    path = _export(opencode, home, project, session_file.stem, tmp_path / "session.json")
    (export,) = load_sessions(path, strict=True)
    assert export.meta["version"] == "1.1.65" and len(asked) == 3

    def dumped(session: Any) -> list[Any]:
        return [e.model_dump(exclude={"source"}) for e in session.events]

    for source in (data, data / "storage", session_file):
        (stored,) = load_sessions(source, strict=True)
        assert stored.name == session_file.stem
        assert dumped(stored) == dumped(export)
        assert stored.meta == export.meta
    results = [e for e in stored.events if isinstance(e, ToolResult)]
    assert [r.exit_code for r in results] == [0, 1]
    sent = [m["content"] for m in asked[-1]["messages"] if m.get("role") == "tool"]
    assert [_text(r) for r in results] == [s if isinstance(s, str) else json.dumps(s) for s in sent]
    assert _text(stored.events[-1]) == "All done."


def test_a_reverted_session_imports_without_what_opencode_undoes(tmp_path: Path) -> None:
    """`opencode serve`'s API: two prompts, then the session reverted to the second
    (`/undo` in the TUI). The database still holds the undone turn; the import leaves it
    out, and the next prompt's request shows that the model is never sent it again."""
    opencode = agent_cli("opencode-ai/bin/opencode.exe", "opencode")
    home, project = tmp_path / "home", tmp_path / "project"
    home.mkdir()
    project.mkdir()
    asked: list[dict[str, Any]] = []

    def model(body: dict[str, Any]) -> dict[str, Any]:
        if "title generator" in str(body["messages"][0].get("content")):
            return {"text": "Notes"}
        asked.append(body)
        if body["messages"][-1].get("role") == "tool":
            return {"text": f"Answer {len(asked)}."}
        command = {"command": f"echo run{len(asked)}", "description": "Run"}
        return {"text": "Running.", "calls": [["bash", command]]}

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]

    def call(method: str, path: str, body: Any = None, timeout: float = 120) -> Any:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(
            f"http://127.0.0.1:{port}{path}",
            data=data,
            method=method,
            headers={"content-type": "application/json", "x-opencode-directory": str(project)},
        )
        with urllib.request.urlopen(request, timeout=timeout) as response:
            text = response.read().decode()
        return json.loads(text) if text else None

    prompts = ["First: the budget is $500.", "Second: undone.", "Third: after the undo."]
    database = home / ".local" / "share" / "opencode" / "opencode.db"
    with ProviderServer("openai", respond=model, factor=1.0, limit=200_000) as upstream:
        configure(project, upstream.url)
        server = subprocess.Popen(
            [str(opencode), "serve", "--port", str(port)],
            cwd=project,
            env=offline(home),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            for _ in range(300):
                try:  # the first request after it starts listening may hang: ask again
                    call("GET", "/session", timeout=2)
                    break
                except OSError:
                    time.sleep(0.1)
            session_id = call("POST", "/session", {})["id"]
            for prompt in prompts[:2]:
                call(
                    "POST",
                    f"/session/{session_id}/message",
                    {"parts": [{"type": "text", "text": prompt}]},
                )
            messages = call("GET", f"/session/{session_id}/message")
            second = [m["info"]["id"] for m in messages if m["info"]["role"] == "user"][1]
            call("POST", f"/session/{session_id}/revert", {"messageID": second})
            (reverted,) = load_sessions(database, strict=True)
            call(
                "POST",
                f"/session/{session_id}/message",
                {"parts": [{"type": "text", "text": prompts[2]}]},
            )
        finally:
            server.terminate()
            server.wait(timeout=60)
        assert upstream.refused == [], upstream.refused[:3]
    told = [_text(e) for e in reverted.events if isinstance(e, UserTurn)]
    assert told == [prompts[0]]
    assert reverted.meta["reverted_messages"] == 3  # the prompt and the two steps after it
    sent = json.dumps(asked[-1]["messages"])
    assert prompts[1] not in sent and prompts[0] in sent and prompts[2] in sent
    # The turns the model was sent before the third prompt are the import's.
    results = [_text(e) for e in reverted.events if isinstance(e, ToolResult)]
    assert results == ["run1\n"]
