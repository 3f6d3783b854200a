"""The gateway on OpenAI's Chat Completions API (opencode's format), with the real `openai` client.

The upstream is `ProviderServer("openai")`: every body checked with our validator and the
SDK's request types, every prompt counted, a body over `limit` refused.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import httpx
import openai
import pytest
from hypothesis import given
from hypothesis import strategies as st

from benchmarks.provider_server import ProviderServer
from context_graph.formats.openai_chat.gateway import answer_usage, sse_usage
from orchestrator.gateway import OUTCOME, GatewayThread
from tests.orchestrator.gateway.scripted import BUDGET, Steps
from tests.orchestrator.gateway.test_gateway_usage import settled

SYSTEM = "You are a coding agent. Run the steps, one tool call at a time."
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "run",
            "description": "Run one step and return its output.",
            "parameters": {"type": "object", "properties": {"step": {"type": "integer"}}},
        },
    }
]
MODEL = "gpt-5.5"

Serve = Callable[..., tuple[str, GatewayThread]]


@pytest.fixture(name="chat_gateway")
def chat_gateway_fixture(
    provider_server: Callable[..., ProviderServer], serve_gateway: Serve
) -> Callable[..., tuple[ProviderServer, str, GatewayThread]]:
    """A factory: a Chat Completions `ProviderServer` and a gateway in front of it."""

    def make(**options: Any) -> tuple[ProviderServer, str, GatewayThread]:
        server = provider_server("openai", **options)
        url, thread = serve_gateway(server)
        return server, url, thread

    return make


def output(step: int) -> str:
    return "\n".join(f"step {step} line {n}: value {step * 1000 + n}" for n in range(100))


def agent(
    url: str,
    session: str,
    *,
    stream: bool = False,
    usage: bool = True,
    tools: list[dict[str, Any]] = TOOLS,
) -> list[Any]:
    """A chat agent loop as opencode runs one: the whole history every call, `X-Session-Id`."""
    sdk = openai.OpenAI(base_url=f"{url}/v1", api_key="test-key", max_retries=0)
    messages: list[Any] = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": "Run the steps."},
    ]
    while True:
        kwargs: dict[str, Any] = {
            "model": MODEL,
            "messages": messages,
            "tools": tools,
            "tool_choice": "auto",
            "max_tokens": 32_000,
            "extra_headers": {"X-Session-Id": session, "x-session-affinity": session},
        }
        if stream:
            if usage:
                kwargs["stream_options"] = {"include_usage": True}
            message = _streamed(sdk, kwargs)
        else:
            reply = sdk.chat.completions.create(**kwargs)
            message = reply.choices[0].message.model_dump(exclude_none=True)
        messages.append(message)
        calls = message.get("tool_calls") or []
        if not calls:
            return messages
        for call in calls:
            step = json.loads(call["function"]["arguments"])["step"]
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": output(step)})


def _streamed(sdk: openai.OpenAI, kwargs: dict[str, Any]) -> dict[str, Any]:
    """The assistant message of a streamed reply, put together from its chunks as a client does."""
    text, calls = "", {}
    for chunk in sdk.chat.completions.create(stream=True, **kwargs):
        for choice in chunk.choices:
            text += choice.delta.content or ""
            for call in choice.delta.tool_calls or []:
                held = calls.setdefault(call.index, {"id": "", "name": "", "arguments": ""})
                held["id"] = call.id or held["id"]
                if call.function is not None:
                    held["name"] = call.function.name or held["name"]
                    held["arguments"] += call.function.arguments or ""
    message: dict[str, Any] = {"role": "assistant", "content": text or None}
    if calls:
        message["tool_calls"] = [
            {
                "id": c["id"],
                "type": "function",
                "function": {"name": c["name"], "arguments": c["arguments"]},
            }
            for _, c in sorted(calls.items())
        ]
    return message


@pytest.mark.parametrize("stream", [False, True], ids=["create", "stream"])
def test_a_long_loop_stays_valid_and_under_budget(chat_gateway: Any, stream: bool) -> None:
    server, url, served = chat_gateway(respond=Steps(14), factor=1.0, limit=BUDGET)
    messages = agent(url, "ses_1", stream=stream)
    assert messages[-1]["content"] == "All done."
    assert server.refused == []
    assert len(server.requests) == 15 and max(server.prompts) <= BUDGET
    assert all(r["tools"] == TOOLS for r in server.requests), "the tools go as the agent sent them"
    assert all(r["messages"][0] == {"role": "system", "content": SYSTEM} for r in server.requests)
    (thread,) = served.gateway.table_of("chat").sessions["ses_1"]
    assert [n.kind for n in thread.manager.raw].count("tool_result") == 14
    assert sum(n.kind == "system" for n in thread.manager.raw) == 1


@pytest.mark.parametrize("stream", [False, True], ids=["create", "stream"])
def test_the_usage_of_each_answer_adds_up(chat_gateway: Any, stream: bool) -> None:
    """A whole answer's `usage` and a stream's last chunk: each call adds its prompt."""
    server, url, served = chat_gateway(respond=Steps(3), factor=1.0)
    agent(url, "ses_1", stream=stream)
    (thread,) = served.gateway.table_of("chat").sessions["ses_1"]
    usage = settled(thread, 4)
    assert (usage.calls, usage.prompt_tokens) == (4, sum(server.prompts))
    assert usage.completion_tokens == 4 * 5, "the fake's output count, from each answer"
    assert usage.cached_tokens > 0, "the prefix the calls share, as the provider reports it"


def test_a_stream_without_usage_asked_reports_none_and_is_not_changed(chat_gateway: Any) -> None:
    server, url, served = chat_gateway(respond=Steps(2), factor=1.0)
    agent(url, "ses_1", stream=True, usage=False)
    assert all("stream_options" not in r for r in server.requests), "the gateway adds nothing"
    (thread,) = served.gateway.table_of("chat").sessions["ses_1"]
    assert thread.manager.stats().usage.calls == 0


def test_the_stream_calibrates_the_engine(chat_gateway: Any) -> None:
    """The provider counts 1.4x what the engine does: its usage chunk teaches the engine."""
    server, url, _ = chat_gateway(respond=Steps(14), factor=1.4)
    agent(url, "ses_1", stream=True)
    assert max(server.prompts[-5:]) <= BUDGET, server.prompts


def test_an_agent_with_many_tools_fills_its_budget(chat_gateway: Any) -> None:
    """Tools that take 40% of the budget, sent as the agent sent them: the provider's
    prompt count covers them, and the engine learns its count from the whole request.
    Before, it learned it from the render alone, so the factor grew by the tools' share
    (about 1.7 here) and the requests stayed under three quarters of the budget."""
    many = [
        {
            "type": "function",
            "function": {
                "name": "run" if n == 0 else f"tool_{n}",
                "description": f"Tool {n}: " + "runs one careful step and returns it. " * 30,
                "parameters": {"type": "object", "properties": {"step": {"type": "integer"}}},
            },
        }
        for n in range(8)
    ]
    server, url, _ = chat_gateway(respond=Steps(14), factor=1.0, limit=BUDGET)
    messages = agent(url, "ses_1", tools=many)
    assert messages[-1]["content"] == "All done."
    assert server.refused == [] and max(server.prompts) <= BUDGET
    tools = server.count({"model": MODEL, "messages": [], "tools": many})
    assert 0.35 * BUDGET < tools < 0.45 * BUDGET
    assert max(server.prompts) >= 0.9 * BUDGET, server.prompts


def test_two_sessions_with_one_prompt_stay_apart(chat_gateway: Any) -> None:
    _, url, served = chat_gateway(respond=Steps(4), factor=1.0)
    agent(url, "ses_a")
    agent(url, "ses_b", stream=True)
    sessions = served.gateway.table_of("chat").sessions
    assert sorted(sessions) == ["ses_a", "ses_b"]
    counts = [[n.kind for n in t.manager.raw].count("tool_result") for t in sessions["ses_a"]]
    assert counts == [4]


@pytest.mark.parametrize(
    "body",
    [
        {"model": MODEL, "messages": "not a list"},
        {"model": MODEL, "messages": [{"role": "wizard", "content": "hi"}]},
        {"model": MODEL, "messages": [{"role": "user"}]},
    ],
    ids=["messages-not-a-list", "unknown-role", "no-content"],
)
def test_a_malformed_body_goes_through_unchanged(chat_gateway: Any, body: Any) -> None:
    """The engine cannot read it: the upstream gets it as sent and names what is wrong."""
    server, url, served = chat_gateway()
    answer = httpx.post(f"{url}/v1/chat/completions", json=body, headers={"X-Session-Id": "s"})
    assert len(server.refused) == 1 and server.requests == []
    assert answer.headers[OUTCOME] == "passthrough"
    assert answer.status_code == 400
    assert answer.json()["error"]["type"] == "invalid_request_error"
    assert served.gateway.table_of("chat").sessions.get("s", []) == []


def test_a_body_that_is_not_json_goes_through_unchanged(chat_gateway: Any) -> None:
    _, url, served = chat_gateway()
    answer = httpx.post(f"{url}/v1/chat/completions", content=b"{not json", timeout=10)
    assert answer.headers[OUTCOME] == "passthrough"
    assert served.gateway.table_of("chat").sessions == {}


def test_strict_refuses_a_body_the_engine_cannot_read(
    provider_server: Callable[..., ProviderServer], serve_gateway: Serve
) -> None:
    server = provider_server("openai")
    url, _ = serve_gateway(server, strict=True)
    body = {"model": MODEL, "messages": [{"role": "wizard", "content": "hi"}]}
    answer = httpx.post(f"{url}/v1/chat/completions", json=body)
    assert answer.status_code == 400 and answer.headers[OUTCOME] == "refused"
    assert "wizard" in answer.text
    # OpenAI's error shape, which the client's SDK reads (`message`, `type`, `param`, `code`).
    assert answer.json()["error"]["type"] == "invalid_request_error"
    assert set(answer.json()["error"]) == {"message", "type", "param", "code"}
    assert server.requests == [] and server.refused == []


class TestUsageReaders:
    def test_a_whole_answer_with_cached_tokens(self) -> None:
        usage = answer_usage(
            {
                "usage": {
                    "prompt_tokens": 2000,
                    "completion_tokens": 7,
                    "total_tokens": 2007,
                    "prompt_tokens_details": {"cached_tokens": 1536},
                }
            }
        )
        assert usage is not None
        assert (usage.prompt_tokens, usage.cached_tokens, usage.completion_tokens) == (
            2000,
            1536,
            7,
        )

    def test_the_last_chunk_holds_the_usage(self) -> None:
        head = {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m"}
        chunks = [
            {**head, "choices": [{"index": 0, "delta": {"content": "hi"}}], "usage": None},
            {**head, "choices": [], "usage": {"prompt_tokens": 40, "completion_tokens": 2}},
        ]
        stream = b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks)
        usage = sse_usage(stream + b"data: [DONE]\n\n")
        assert usage is not None and (usage.prompt_tokens, usage.completion_tokens) == (40, 2)

    def test_a_stream_without_a_usage_chunk_has_none(self) -> None:
        chunk = {"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {}}]}
        assert sse_usage(b"data: " + json.dumps(chunk).encode() + b"\n\ndata: [DONE]\n\n") is None

    @given(
        st.lists(st.none() | st.tuples(st.integers(0, 10**6), st.integers(0, 10**4)), max_size=8),
        st.integers(1, 64),
    )
    def test_the_newest_usage_is_read_from_any_cut(
        self, usages: list[tuple[int, int] | None], cut: int
    ) -> None:
        """Whatever the chunks say, the newest usage stands; a line cut in two is skipped."""
        head = {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m"}
        lines = [
            b"data: "
            + json.dumps(
                {
                    **head,
                    "choices": [],
                    "usage": None
                    if u is None
                    else {"prompt_tokens": u[0], "completion_tokens": u[1]},
                }
            ).encode()
            + b"\n\n"
            for u in usages
        ]
        stream = b"".join(lines) + b"data: [DONE]\n\n"
        said = [u for u in usages if u is not None]
        usage = sse_usage(stream)
        if said:
            assert usage is not None
            assert (usage.prompt_tokens, usage.completion_tokens) == said[-1]
        else:
            assert usage is None
        # The head of a stream cut anywhere reads as the chunks it holds whole, or none.
        partial = sse_usage(stream[: max(0, len(stream) - cut)])
        assert partial is None or (partial.prompt_tokens, partial.completion_tokens) in said


def test_a_mid_conversation_system_message_stays_in_place(chat_gateway: Any) -> None:
    """A `developer` message at the head is the system prompt; a later system message is
    sent where the agent put it, as a marked user message: the head (the provider's
    cached prefix) stays the same from call to call, and a server that takes a system
    message only first takes the request."""
    server, url, served = chat_gateway()
    sdk = openai.OpenAI(base_url=f"{url}/v1", api_key="test-key", max_retries=0)
    messages: list[Any] = [
        {"role": "developer", "content": "Answer briefly."},
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "hello"},
    ]
    for extra in ([], [{"role": "system", "content": "The user is in a hurry."}]):
        messages += [*extra, {"role": "user", "content": f"turn {len(messages)}"}]
        sdk.chat.completions.create(
            model=MODEL, messages=messages, extra_headers={"X-Session-Id": "ses_d"}
        )
        messages.append({"role": "assistant", "content": "ok"})
    before, sent = (r["messages"] for r in server.requests[-2:])
    assert sent[: len(before)] == before, "the second request extends the first"
    assert [m["role"] for m in sent].count("system") == 1
    assert sent[0] == {"role": "system", "content": "Answer briefly."}
    assert sent[len(before) :] == [
        {"role": "assistant", "content": "ok"},
        {
            "role": "user",
            "content": "<system-reminder>\nThe user is in a hurry.\n</system-reminder>",
        },
        {"role": "user", "content": "turn 5"},
    ]
    (thread,) = served.gateway.table_of("chat").sessions["ses_d"]
    assert sum(n.kind == "system" for n in thread.manager.raw) == 1
