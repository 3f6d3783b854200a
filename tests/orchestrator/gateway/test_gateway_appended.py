"""A request whose last message is the previous one with more appended to it.

Claude Code (2.1.197, seen through the gateway) asks for its own compaction so: the
history of the turn before, with its compaction prompt appended as a text block to the
last message, the one holding the tool results. That message is only in part the one
the record holds: the gateway forks the thread before it and takes it in whole.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from benchmarks.gateway_script import MODEL, SYSTEM, TOOLS, agent, client
from benchmarks.provider_server import ProviderServer
from orchestrator.gateway import OUTCOME, GatewayThread
from tests.orchestrator.gateway.scripted import BUDGET, Steps

Serve = Callable[..., tuple[str, GatewayThread]]
Upstream = Callable[..., ProviderServer]

PROMPT = "Your task is to create a detailed summary of the conversation so far."


def test_a_prompt_appended_to_the_tool_results_is_rendered_not_passed_through(
    upstream: Upstream, serve_gateway: Serve
) -> None:
    server = upstream(respond=Steps(30), factor=1.0, limit=BUDGET)
    url, served = serve_gateway(server)
    messages = agent(url, "s-1", turns=3)
    assert messages[-1]["content"][0]["type"] == "tool_result"
    assert _create(url, messages).headers[OUTCOME] == "rendered"  # the turn, as usual
    (first,) = served.gateway.table.sessions["s-1"]
    before = first.manager.raw.transcript()
    # The same turn again, with the prompt in its last message.
    asked = [*messages[:-1], {**messages[-1], "content": [*messages[-1]["content"], _text()]}]
    assert _create(url, asked).headers[OUTCOME] == "rendered"
    assert server.refused == []
    old, new = served.gateway.table.sessions["s-1"]
    assert old is first and old.manager.raw.transcript() == before
    record = new.manager.raw
    # Shared up to the turn making the last calls; its results and the prompt are the fork's.
    kinds = [record[node_id].kind for node_id in record.transcript()]
    assert kinds[-2:] == ["tool_result", "user"]
    assert record[record.transcript()[-1]].text == PROMPT
    assert kinds.count("tool_result") == 3


def _create(url: str, messages: list[dict[str, Any]]) -> Any:
    with client(url) as sdk:
        return sdk.messages.with_raw_response.create(
            model=MODEL,
            max_tokens=1024,
            system=SYSTEM,
            tools=TOOLS,
            messages=messages,
            metadata={"user_id": json.dumps({"session_id": "s-1"})},
        )


def _text() -> dict[str, Any]:
    return {"type": "text", "text": PROMPT}
