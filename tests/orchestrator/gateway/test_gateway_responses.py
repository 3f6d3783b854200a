"""The gateway on OpenAI's Responses API (Codex CLI's format), with the real `openai` client.

The upstream is `ProviderServer("responses")`: every body checked with our validator and
the SDK's request types, every prompt counted, a body over `limit` refused.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import httpx
import openai
import pytest

from benchmarks.provider_server import ProviderServer
from orchestrator.gateway import OUTCOME, GatewayThread
from tests.orchestrator.gateway.scripted import BUDGET, Steps

INSTRUCTIONS = "You are a coding agent. Run the steps, one tool call at a time."
TOOLS = [
    {
        "type": "function",
        "name": "run",
        "description": "Run one step and return its output.",
        "parameters": {"type": "object", "properties": {"step": {"type": "integer"}}},
        "strict": False,
    }
]
MODEL = "gpt-5.5"

Serve = Callable[..., tuple[str, GatewayThread]]


@pytest.fixture(name="responses_gateway")
def responses_gateway_fixture(
    provider_server: Callable[..., ProviderServer], serve_gateway: Serve
) -> Callable[..., tuple[ProviderServer, str, GatewayThread]]:
    """A factory: a Responses `ProviderServer` and a gateway in front of it."""

    def make(**options: Any) -> tuple[ProviderServer, str, GatewayThread]:
        server = provider_server("responses", **options)
        url, thread = serve_gateway(server)
        return server, url, thread

    return make


def output(step: int) -> str:
    return "\n".join(f"step {step} line {n}: value {step * 1000 + n}" for n in range(100))


def agent(url: str, session: str, *, stream: bool = False) -> list[Any]:
    """A Responses agent loop (as Codex runs one: the whole input every call, no store)."""
    sdk = openai.OpenAI(base_url=f"{url}/v1", api_key="test-key", max_retries=0)
    items: list[Any] = [{"role": "user", "content": "Run the steps."}]
    while True:
        kwargs: dict[str, Any] = {
            "model": MODEL,
            "instructions": INSTRUCTIONS,
            "input": items,
            "tools": TOOLS,
            "store": False,
            "metadata": {"user_id": session},
            "extra_headers": {"session-id": session},
        }
        if stream:
            with sdk.responses.stream(**kwargs) as streamed:
                reply = streamed.get_final_response()
        else:
            reply = sdk.responses.create(**kwargs)
        out = [item.model_dump(exclude_none=True) for item in reply.output]
        items.extend(out)
        calls = [item for item in out if item["type"] == "function_call"]
        if not calls:
            return items
        for call in calls:
            step = json.loads(call["arguments"])["step"]
            items.append(
                {"type": "function_call_output", "call_id": call["call_id"], "output": output(step)}
            )


@pytest.mark.parametrize("stream", [False, True], ids=["create", "stream"])
def test_a_long_loop_stays_valid_and_under_budget(responses_gateway: Any, stream: bool) -> None:
    server, url, served = responses_gateway(respond=Steps(14), factor=1.0, limit=BUDGET)
    items = agent(url, "codex-1", stream=stream)
    assert items[-1]["content"][0]["text"] == "All done."
    assert server.refused == []
    assert len(server.requests) == 15 and max(server.prompts) <= BUDGET
    assert all(r["tools"] == TOOLS for r in server.requests), "the tools go as the agent sent them"
    (thread,) = served.gateway.table_of("responses").sessions["codex-1"]
    assert [n.kind for n in thread.manager.raw].count("tool_result") == 14


def test_the_usage_of_the_last_event_calibrates(responses_gateway: Any) -> None:
    """Responses says its usage in its last streamed event: the engine learns the 1.4x."""
    server, url, _ = responses_gateway(respond=Steps(14), factor=1.4)
    agent(url, "codex-1", stream=True)
    assert max(server.prompts[-5:]) <= BUDGET, server.prompts


def test_history_kept_upstream_is_passed_through(responses_gateway: Any) -> None:
    _, url, served = responses_gateway()
    body = {"model": MODEL, "input": "next", "previous_response_id": "resp_1"}
    answer = httpx.post(f"{url}/v1/responses", json=body)
    assert answer.headers[OUTCOME] == "passthrough"
    assert served.gateway.table_of("responses").sessions == {}


def test_tools_over_the_budget_pass_through_with_a_warning(responses_gateway: Any) -> None:
    _, url, _ = responses_gateway()
    huge = [dict(TOOLS[0], name=f"tool_{n}", description="x " * 400) for n in range(40)]
    body = {"model": MODEL, "input": "hi", "tools": huge}
    answer = httpx.post(f"{url}/v1/responses", json=body)
    assert answer.headers[OUTCOME] == "passthrough"
