"""The session file the real Claude Code writes, imported.

`@anthropic-ai/claude-code` from the npm registry runs as a user runs it, against
`ProviderServer("anthropic")` (a strict fake of the API) with a scripted model, in a
project of our own: the prompt names a file and a folder with `@`, the agent reads a file
in a sub-folder that has its own `CLAUDE.md`, reads the named file again (unchanged),
runs a command, and the user sends a second message while the first turn runs (stream
JSON input, so it is queued). The session file the CLI writes under `$HOME/.claude` is
then imported strictly and checked against what the model was sent.

The CLI is looked up in `$CONTEXT_GRAPH_AGENTS` (a `node_modules` folder; `.ci/run`
installs it). Without it the test is skipped, unless `CONTEXT_GRAPH_REQUIRE_AGENTS=1`.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path
from typing import Any

from benchmarks.provider_server import ProviderServer
from context_graph.graph.content import TextPart
from context_graph.graph.events import (
    AssistantTurn,
    Compaction,
    FileRead,
    Note,
    SubagentResult,
    ToolResult,
    UserTurn,
)
from context_graph.importers import load_sessions
from orchestrator import ContextManager
from tests.orchestrator.gateway.scripted import agent_cli
from tests.orchestrator.gateway.test_claude_code import start

QUEUED = "Also: the budget cap is now $900."
NOTES = "alpha line one\nbeta budget cap is $500\n"
RULE = "Sub rule: never touch sub/.\n"
STARTED = "The repo uses tabs."
PROMPTED = "Deploy freeze until Friday."
SUMMARY = "The user asked to count; two steps are done."


class _Model:
    """Reads `sub/x.txt`, reads `notes.txt` again, runs `echo hi`, then answers.

    The first answer waits until the CLI has queued the user's second message (it writes
    the queue operation to the session file), so the message is queued, not a turn of
    its own, however fast the machine.
    """

    def __init__(self, project: Path, home: Path) -> None:
        self.home = home
        self.steps = [
            ["Read", {"file_path": str(project / "sub" / "x.txt")}],
            ["Read", {"file_path": str(project / "notes.txt")}],
            ["Bash", {"command": "echo hi"}],
        ]
        self.asked: list[dict[str, Any]] = []

    def __call__(self, body: dict[str, Any]) -> dict[str, Any]:
        if body.get("output_config", {}).get("format"):  # the session title
            return {"text": json.dumps({"title": "Notes"})}
        self.asked.append(body)
        step = len(self.asked) - 1
        if step == 0:
            self._await_queued()
        if step < len(self.steps):
            return {"text": f"Step {step}.", "calls": [self.steps[step]]}
        return {"text": "All done."}

    def _await_queued(self) -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if any(QUEUED in p.read_text("utf-8") for p in self.home.rglob("*.jsonl")):
                return
            time.sleep(0.05)


def _record(tmp_path: Path) -> tuple[Path, Path, _Model]:
    """Run the CLI; the project, the session file it wrote, and the model's requests."""
    claude = agent_cli("@anthropic-ai/claude-code/cli-wrapper.cjs", "Claude Code")
    project, home = tmp_path / "project", tmp_path / "home"
    (project / "sub").mkdir(parents=True)
    home.mkdir()
    (project / "notes.txt").write_text(NOTES, "utf-8")
    (project / "sub" / "CLAUDE.md").write_text(RULE, "utf-8")
    (project / "sub" / "x.txt").write_text("x content 42\n", "utf-8")
    (project / ".claude").mkdir()
    hooks = {
        "SessionStart": [{"hooks": [{"type": "command", "command": f"echo '{STARTED}'"}]}],
        "UserPromptSubmit": [{"hooks": [{"type": "command", "command": f"echo '{PROMPTED}'"}]}],
    }
    (project / ".claude" / "settings.json").write_text(json.dumps({"hooks": hooks}), "utf-8")
    model = _Model(project, home)
    with ProviderServer("anthropic", respond=model, factor=1.0, limit=200_000) as upstream:
        env = {
            "PATH": os.environ["PATH"],
            "HOME": str(home),
            "ANTHROPIC_BASE_URL": upstream.url,
            "ANTHROPIC_API_KEY": "sk-test",
            "DISABLE_AUTOUPDATER": "1",
            "DISABLE_TELEMETRY": "1",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        }
        command = ["node", str(claude), "-p", "--input-format", "stream-json"]
        command += ["--output-format", "stream-json", "--verbose", "--allowedTools", "Read,Bash"]
        messages = ["Look at @notes.txt and @sub/ then work.", QUEUED]
        lines = "".join(
            json.dumps({"type": "user", "message": {"role": "user", "content": text}}) + "\n"
            for text in messages
        )
        run = subprocess.run(
            command,
            cwd=project,
            env=env,
            input=lines,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        assert run.returncode == 0, run.stderr[-2000:]
        assert upstream.refused == [], upstream.refused[:3]
    (session,) = [p for p in home.rglob("*.jsonl") if p.parent.name != "subagents"]
    return project, session, model


def _text(event: Any) -> str:
    return "".join(part.text for part in event.content if isinstance(part, TextPart))


def test_the_real_session_file_imports_what_the_model_was_given(tmp_path: Path) -> None:
    project, path, model = _record(tmp_path)
    (session,) = load_sessions(path, strict=True)
    events = list(session.events)
    kinds = [type(e).__name__ for e in events]
    # The user's words, both of them, as the user's (not notices).
    asked = [e for e in events if isinstance(e, UserTurn) and not e.notice]
    assert [e.content for e in asked] == [
        (TextPart(text="Look at @notes.txt and @sub/ then work."),),
        (TextPart(text=QUEUED),),
    ]
    # What the project's hooks added, as notices: at the session's start, and with
    # each prompt (the queued one is no prompt of its own: no hook ran for it).
    hooked = [_text(e) for e in events if isinstance(e, UserTurn) and "hook:" in _text(e)]
    assert hooked == [
        f"Context from the SessionStart hook:\n{STARTED}",
        f"Context from the UserPromptSubmit hook:\n{PROMPTED}",
    ]
    events = [e for e in events if not (isinstance(e, UserTurn) and "hook:" in _text(e))]
    kinds = [type(e).__name__ for e in events]
    # `@notes.txt`: a read of the file, with its text, before the agent's first turn.
    named = events[1]
    assert isinstance(named, FileRead) and named.call_id is None
    assert (named.path, named.content) == (str(project / "notes.txt"), (TextPart(text=NOTES),))
    # `@sub/`: the listing, as a notice.
    listing = events[2]
    assert isinstance(listing, UserTurn) and listing.notice
    assert "CLAUDE.md" in _text(listing) and "x.txt" in _text(listing)
    assert kinds.index("AssistantTurn") == 3
    # The sub-folder's CLAUDE.md, loaded when the agent read there: a pinned note.
    (note,) = [e for e in events if isinstance(e, Note)]
    assert note.pinned and RULE in _text(note)
    # The second read of the unchanged file is no read of it: the first stays its text.
    reads = [e for e in events if isinstance(e, FileRead) and e.path.endswith("notes.txt")]
    assert reads == [named]
    calls = [c for e in events if isinstance(e, AssistantTurn) for c in e.tool_calls]
    results = [e for e in events if isinstance(e, ToolResult | FileRead) and e.call_id]
    assert [r.call_id for r in results] == [c.id for c in calls] and len(calls) == 3
    # The queued message comes after the result the agent was waiting for, as the model
    # was given it (Claude Code sends it after the tool result, before the next turn).
    second = [m for m in model.asked[1]["messages"] if QUEUED in json.dumps(m)]
    assert second, "the model was sent the queued message"
    assert kinds[kinds.index("AssistantTurn") + 2] == "UserTurn"
    assert session.meta["skipped_records"].get("attachment:skill_listing") == 1
    # And it renders: every call paired, the note in the system prompt.
    manager = ContextManager("anthropic", 20_000)
    manager.ingest(events)
    body = manager.render_sync().payload
    assert RULE.strip() in json.dumps(body["system"])
    assert QUEUED in json.dumps(body["messages"])


def test_a_session_compacted_with_its_own_command_imports_the_summary(tmp_path: Path) -> None:
    """Claude Code's own `/compact` on a resumed session, then one more prompt: the session
    file holds its compaction, which imports as a `Compaction` with the summary the model
    wrote, and the command's lines as notices."""
    claude = agent_cli("@anthropic-ai/claude-code/cli-wrapper.cjs", "Claude Code")
    project, home = tmp_path / "project", tmp_path / "home"
    project.mkdir()
    home.mkdir()
    steps = iter([["Bash", {"command": "echo 0"}], ["Bash", {"command": "echo 1"}]])

    def model(body: dict[str, Any]) -> dict[str, Any]:
        if body.get("output_config", {}).get("format"):  # the session title
            return {"text": json.dumps({"title": "Counting"})}
        if "TEXT ONLY" in json.dumps(body["messages"][-1]):  # the compaction's request
            return {"text": f"<summary>{SUMMARY}</summary>"}
        step = next(steps, None)
        return {"text": "Done."} if step is None else {"text": "Next.", "calls": [step]}

    with ProviderServer("anthropic", respond=model, factor=1.0, limit=200_000) as upstream:
        for prompt, *flags in (
            ("Count.",),
            ("/compact", "--resume"),
            ("Go on.", "--resume"),
        ):
            resume = []
            if flags:
                (session_file,) = (home / ".claude" / "projects").rglob("*.jsonl")
                resume = [*flags, session_file.stem]
            run = start(claude, upstream.url, home, project, prompt, *resume)
            _, err = run.communicate(timeout=300)
            assert run.returncode == 0, err[-2000:]
        assert upstream.refused == [], upstream.refused[:3]
    (session,) = load_sessions(session_file, strict=True)
    events = list(session.events)
    (compaction,) = [e for e in events if isinstance(e, Compaction)]
    assert SUMMARY in _text(compaction)
    after = events[events.index(compaction) + 1 :]
    told = [e for e in after if isinstance(e, UserTurn)]
    assert [_text(e) for e in told if not e.notice] == ["Go on."]
    assert any("/compact" in _text(e) for e in told if e.notice)
    results = [e for e in events if isinstance(e, ToolResult)]
    assert [_text(r) for r in results] == ["0", "1"]
    manager = ContextManager("anthropic", 20_000)
    manager.ingest(events)
    assert SUMMARY in json.dumps(manager.render_sync().payload)


def test_a_sub_agents_run_imports_linked_to_its_transcript(tmp_path: Path) -> None:
    """The model hands a task to a sub-agent (`Agent`), which runs a command: the main
    session's result is a sub-agent result naming the transcript Claude Code wrote under
    `<session>/subagents/`, which imports as a session of its own."""
    claude = agent_cli("@anthropic-ai/claude-code/cli-wrapper.cjs", "Claude Code")
    project, home = tmp_path / "project", tmp_path / "home"
    project.mkdir()
    home.mkdir()
    task = "Find the answer with echo."
    said = {"main": 0, "helper": 0}

    def model(body: dict[str, Any]) -> dict[str, Any]:
        if body.get("output_config", {}).get("format"):  # the session title
            return {"text": json.dumps({"title": "Helping"})}
        who = "helper" if task in json.dumps(body["messages"][0]) else "main"
        said[who] += 1
        if who == "helper":
            if said[who] == 1:
                return {"text": "Looking.", "calls": [["Bash", {"command": "echo 42"}]]}
            return {"text": "The answer is 42."}
        if said[who] == 1:
            ask = {"description": "find", "prompt": task, "subagent_type": "general-purpose"}
            return {"text": "Delegating.", "calls": [["Agent", ask]]}
        return {"text": "All done."}

    with ProviderServer("anthropic", respond=model, factor=1.0, limit=200_000) as upstream:
        run = start(claude, upstream.url, home, project, "Ask a helper.", "--allowedTools", "Agent")
        _, err = run.communicate(timeout=300)
        assert run.returncode == 0, err[-2000:]
        assert upstream.refused == [], upstream.refused[:3]
    (path,) = [p for p in home.rglob("*.jsonl") if p.parent.name != "subagents"]
    main, helper = load_sessions(path, strict=True)
    (handed,) = [e for e in main.events if isinstance(e, SubagentResult)]
    assert "The answer is 42." in _text(handed)
    assert handed.transcript == f"{path.stem}/subagents/agent-{handed.agent_id}.jsonl"
    assert helper.meta["parent_session"] == main.name
    assert [_text(e) for e in helper.events if isinstance(e, UserTurn)] == [task]
    assert [_text(e) for e in helper.events if isinstance(e, ToolResult)] == ["42"]


def test_a_rewound_session_imports_the_branch_the_cli_resumes(tmp_path: Path) -> None:
    """Two prompts, then the session resumed at the first answer (`--resume-session-at`,
    what a rewind does) with a third: the file holds the second prompt's abandoned turn,
    and the import is the conversation the model was sent last, without it."""
    claude = agent_cli("@anthropic-ai/claude-code/cli-wrapper.cjs", "Claude Code")
    project, home = tmp_path / "project", tmp_path / "home"
    project.mkdir()
    home.mkdir()
    asked: list[dict[str, Any]] = []

    def model(body: dict[str, Any]) -> dict[str, Any]:
        if body.get("output_config", {}).get("format"):  # the session title
            return {"text": json.dumps({"title": "Branches"})}
        asked.append(body)
        last = body["messages"][-1]["content"]
        if isinstance(last, list) and any(b.get("type") == "tool_result" for b in last):
            return {"text": f"Answer {len(asked)}."}
        return {"text": "Running.", "calls": [["Bash", {"command": f"echo run{len(asked)}"}]]}

    prompts = ["First: the budget is $500.", "Second: to be abandoned.", "Third: kept."]
    with ProviderServer("anthropic", respond=model, factor=1.0, limit=200_000) as upstream:
        for number, prompt in enumerate(prompts):
            flags: list[str] = []
            if number:
                (path,) = (home / ".claude" / "projects").rglob("*.jsonl")
                flags = ["--resume", path.stem]
            if number == 2:  # back to the first prompt's answer
                records = [json.loads(line) for line in path.read_text("utf-8").splitlines()]
                (answer,) = [r for r in records if "Answer 2." in json.dumps(r.get("message", {}))]
                flags += ["--resume-session-at", answer["uuid"]]
            run = start(claude, upstream.url, home, project, prompt, *flags)
            _, err = run.communicate(timeout=300)
            assert run.returncode == 0, err[-2000:]
        assert upstream.refused == [], upstream.refused[:3]
    assert prompts[1] in path.read_text("utf-8")  # the abandoned turn is in the file
    sent = json.dumps(asked[-1]["messages"])
    assert prompts[1] not in sent and prompts[0] in sent  # and not in the last request

    (session,) = load_sessions(path, strict=True)
    told = [_text(e) for e in session.events if isinstance(e, UserTurn) and not e.notice]
    assert told == [prompts[0], prompts[2]]
    results = [_text(e) for e in session.events if isinstance(e, ToolResult)]
    assert results == ["run1", "run5"]
    assert session.meta["abandoned_records"] >= 4
    manager = ContextManager("anthropic", 20_000)
    manager.ingest(session.events)
    body = manager.render_sync().payload
    assert prompts[1] not in json.dumps(body)
