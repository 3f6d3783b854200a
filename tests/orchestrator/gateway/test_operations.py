"""Reading a proxy's store: `proxy sessions`, `proxy handoff`, and `inspect` on a thread.

A gateway with a store serves a scripted agent; the commands then read the store as a
user would, beside the serving gateway and after it stopped.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anthropic
import pytest

from benchmarks.provider_server import ProviderServer
from orchestrator.cli import main
from orchestrator.gateway import GatewayThread
from orchestrator.gateway.handoff import HandoffSource, write_handoff
from orchestrator.gateway.listing import list_sessions, read_thread
from tests.orchestrator.gateway.scripted import BUDGET, Steps
from tests.orchestrator.gateway.test_gateway import MODEL, SYSTEM, agent

Serve = Callable[..., tuple[str, GatewayThread]]
Upstream = Callable[..., ProviderServer]

FIRST = "Fix the failing test in tests/test_app.py."
LATEST = "Now add a test for subtraction too,\nand keep the old one as it is."
BASH = {"name": "Bash", "description": "Run a shell command.", "input_schema": {"type": "object"}}
EDIT = {"name": "Edit", "description": "Edit a file.", "input_schema": {"type": "object"}}


def _history() -> list[dict[str, Any]]:
    """A short coding session: a failing test run, an edit, a new request."""
    failed = "FAILED tests/test_app.py::test_add - AssertionError: 5 != -1"
    edit = {"file_path": "src/app.py", "old_string": "a - b", "new_string": "a + b"}
    said = "The addition bug is fixed in src/app.py."
    return [
        {"role": "user", "content": FIRST},
        _assistant(_use("t1", "Bash", {"command": "pytest -q tests/test_app.py"})),
        {"role": "user", "content": [_result("t1", failed, error=True)]},
        _assistant(_use("t2", "Edit", edit)),
        {"role": "user", "content": [_result("t2", "The file src/app.py has been updated.")]},
        _assistant({"type": "text", "text": said}),
        {"role": "user", "content": LATEST},
    ]


def _assistant(block: dict[str, Any]) -> dict[str, Any]:
    return {"role": "assistant", "content": [block]}


def _use(call: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"type": "tool_use", "id": call, "name": name, "input": arguments}


def _result(call: str, text: str, *, error: bool = False) -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": call, "content": text, "is_error": error}


def _send(url: str, session: str, messages: list[dict[str, Any]]) -> None:
    with anthropic.Anthropic(base_url=url, api_key="test-key", max_retries=0) as sdk:
        sdk.messages.create(
            model=MODEL,
            max_tokens=256,
            system=SYSTEM,
            tools=[BASH, EDIT],  # type: ignore[list-item]  # the SDK's TypedDicts, as JSON
            messages=messages,  # type: ignore[arg-type]
            extra_headers={"x-claude-code-session-id": session},
        )


def test_sessions_lists_what_the_store_holds(
    upstream: Upstream, serve_gateway: Serve, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    server = upstream(respond=Steps(6), factor=1.0, limit=BUDGET)
    url, served = serve_gateway(server, store=tmp_path)
    agent(url, "s-long", stream=True)
    _send(url, "s-short", _history())
    # Read beside the serving gateway: the files are opened read only.
    assert main(["proxy", "sessions", "--store", str(tmp_path), "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    by_id = {s["session"]: s for s in listed["sessions"]}
    assert set(by_id) == {"s-long", "s-short"}
    long = by_id["s-long"]
    (thread,) = served.gateway.table.sessions["s-long"]
    (row,) = long["threads"]
    assert long["wire"] == "anthropic"
    assert row["nodes"] == len(thread.manager.raw.transcript())
    assert row["recorded_tokens"] == thread.manager.raw.total_tokens > BUDGET
    assert row["held_tokens"] == thread.manager.working.total_tokens
    assert row["sent_tokens"] == thread.manager.stats().last_render_tokens <= BUDGET
    assert row["usage_calls"] == len(server.requests) - 1 == 7
    assert long["usage"]["prompt_tokens"] == sum(server.prompts[:7])
    assert long["last_activity"] is not None
    assert main(["proxy", "sessions", "--store", str(tmp_path)]) == 0
    table = capsys.readouterr().out.splitlines()
    assert table[0].split()[:3] == ["SESSION", "WIRE", "THREADS"]
    assert [line.split()[0] for line in table[1:]] == ["s-long", "s-short"]


def test_an_empty_or_missing_store(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["proxy", "sessions", "--store", str(tmp_path)]) == 0
    assert capsys.readouterr().out.strip() == f"no sessions in {tmp_path}"
    assert main(["proxy", "sessions", "--store", str(tmp_path / "nope")]) == 2
    assert "not a folder" in capsys.readouterr().err


def test_the_handoff_says_what_a_fresh_session_needs(
    upstream: Upstream, serve_gateway: Serve, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    server = upstream(respond=lambda body: {"text": "On it."}, factor=1.0, limit=BUDGET)
    url, served = serve_gateway(server, store=tmp_path / "store")
    _send(url, "s-1", _history())
    served.__exit__(None, None, None)  # the proxy is stopped
    out = tmp_path / "handoff.md"
    argv = ["proxy", "handoff", "s-1", "--store", str(tmp_path / "store"), "--out", str(out)]
    assert main(argv) == 0
    text = out.read_text()
    assert text.startswith("# Handoff of session s-1 (thread 0, anthropic)")
    latest = text.split("## Latest request (verbatim)\n\n", 1)[1]
    assert latest.startswith(LATEST + "\n")
    assert "- modified: `src/app.py`" in text
    last_error = text.split("## Last error\n\n", 1)[1].split("\n\n")[0]
    assert "pytest -q tests/test_app.py" in last_error and "AssertionError" in last_error
    assert "Answer the latest request" in text
    summary = text.split("## Summary of the session", 1)[1]
    assert FIRST in summary and "\n### Files modified\n" in summary
    assert main(["proxy", "handoff", "s-1", "--store", str(tmp_path / "store")]) == 0
    assert capsys.readouterr().out == text


def test_a_handoff_of_a_session_or_thread_not_held_is_refused(
    upstream: Upstream, serve_gateway: Serve, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    server = upstream(respond=lambda body: {"text": "On it."}, factor=1.0)
    url, _ = serve_gateway(server, store=tmp_path)
    _send(url, "s-1", _history())
    assert main(["proxy", "handoff", "s-2", "--store", str(tmp_path)]) == 2
    assert "no such session" in capsys.readouterr().err
    assert main(["proxy", "handoff", "s-1", "--thread", "4", "--store", str(tmp_path)]) == 2
    assert "has threads 0" in capsys.readouterr().err


def test_a_handoff_after_the_agent_answered_goes_on_from_its_words(
    upstream: Upstream, serve_gateway: Serve, tmp_path: Path
) -> None:
    server = upstream(respond=Steps(2), factor=1.0, limit=BUDGET)
    url, served = serve_gateway(server, store=tmp_path)
    agent(url, "s-1")
    (thread,) = served.gateway.table.sessions["s-1"]
    text = write_handoff(thread.manager.raw, HandoffSource("s-1", "anthropic", 0))
    assert "Run the steps." in text.split("## Latest request (verbatim)", 1)[1]
    # The agent's last words were taken in with the next request only; the record
    # ends on the tool result the last call answered.
    assert "## Next step" in text
    (listed,) = list_sessions(tmp_path)
    with read_thread(listed.threads[0].location) as restored:
        assert restored.raw.transcript() == thread.manager.raw.transcript()


def test_inspect_and_the_html_report_read_a_proxied_session(
    upstream: Upstream, serve_gateway: Serve, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    server = upstream(respond=Steps(8), factor=1.0, limit=BUDGET)
    url, served = serve_gateway(server, store=tmp_path / "store")
    agent(url, "s-1")
    (thread,) = served.gateway.table.sessions["s-1"]
    path = tmp_path / "store" / "anthropic" / "s-1" / "thread-0.db"
    assert main(["inspect", str(path), "--json"]) == 0  # beside the serving gateway
    inspected = json.loads(capsys.readouterr().out)
    assert inspected["nodes"] == len(thread.manager.raw.transcript())
    assert inspected["tool_calls"] == 8
    assert inspected["session"] == "thread-0"
    html = tmp_path / "report.html"
    argv = ["replay", str(path), "--budget", str(BUDGET), "--html", str(html)]
    assert main(argv) == 0
    page = html.read_text()
    assert page.startswith("<!DOCTYPE html>") or page.lower().startswith("<!doctype html>")
    assert "step 7 line 99" in page
