"""Claude Code's mid-conversation system message through the gateway (issue 33).

Claude Code 2.1.197 (`claude-opus-4-8`) sends a `role: "system"` message after its first
user message in every request. The engine has no node for a system message held in
place (a system message is the system prompt, rendered into the top-level `system`), so
the gateway reads it as user text in `<system-reminder>` tags, where it stood: the
top-level system prompt, the head of the cached prefix, stays as the agent sent it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx

from benchmarks.gateway_script import SYSTEM
from benchmarks.provider_server import ProviderServer
from orchestrator.gateway import GatewayThread

Serve = Callable[..., tuple[str, GatewayThread]]
Upstream = Callable[..., ProviderServer]

MODEL = "claude-opus-4-8"
AGENT_TYPES = "Available agent types for the Agent tool:\n- Explore: read-only search"
REMINDER = f"<system-reminder>\n{AGENT_TYPES}\n</system-reminder>"


def _texts(message: dict[str, Any]) -> list[str]:
    content = message["content"]
    if isinstance(content, str):
        return [content]
    return [block["text"] for block in content if block.get("type") == "text"]


def test_a_system_message_goes_up_as_a_reminder_where_it_stood(
    upstream: Upstream, serve_gateway: Serve
) -> None:
    """Two calls of a session: no system message upstream, the reminder after the task,
    the top-level system prompt the same in both, every body valid."""
    server = upstream(respond=lambda body: {"text": "Counted."}, factor=1.0)
    url, _ = serve_gateway(server)
    task = {"role": "user", "content": "Count to three."}
    system = {"role": "system", "content": AGENT_TYPES}
    history: list[dict[str, Any]] = [task, system]
    for follow_up in ("And to four.", None):
        body = {"model": MODEL, "max_tokens": 64, "system": SYSTEM, "messages": history}
        answer = httpx.post(
            f"{url}/v1/messages", json=body, headers={"x-context-graph-session": "s-1"}
        )
        assert answer.status_code == 200, answer.text
        if follow_up is not None:
            reply = {"role": "assistant", "content": answer.json()["content"]}
            history = [*history, reply, {"role": "user", "content": follow_up}]
    assert server.refused == []
    assert len(server.requests) == 2
    for request in server.requests:
        assert request["system"] == server.requests[0]["system"]
        assert request["messages"][0]["role"] == "user"
        assert "system" not in [m["role"] for m in request["messages"]]
        assert _texts(request["messages"][0]) == ["Count to three.", REMINDER]
    assert [m["role"] for m in server.requests[1]["messages"]] == ["user", "assistant", "user"]
