"""The LangChain middleware on the real ChatAnthropic and ChatOpenAI, against the fake server.

Each agent's model is the provider package's own chat model with its `base_url` at a
`ProviderServer` of its wire format, which validates every body (our validator and the
SDK's request types) and refuses a prompt over the budget by its own count (ours times
1.25). The middleware must render in the model's format: each body the server receives
is then exactly the request the engine counted (the rendered history plus the system
prompt), and a 30-turn loop of ~5,000-token tool outputs stays valid and under budget.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver

from benchmarks.provider_server import ProviderServer
from context_graph.render import count_payload
from context_graph.tokens.counting import default_counter
from orchestrator import ContextManager
from orchestrator.integrations.langchain import ContextMiddleware, model_provider
from orchestrator.integrations.langchain_messages import from_payload, to_events
from orchestrator.integrations.rendered import chat_items, original_ids
from orchestrator.policy import Policy

langchain_anthropic = pytest.importorskip("langchain_anthropic")
langchain_openai = pytest.importorskip("langchain_openai")

BUDGET = 16_000
TURNS = 30
SYSTEM = "You are a build doctor."
ANSWER = "The build fails in module 7."
SLACK = 3
_BODY = {"anthropic": ("system", "messages", "tools"), "openai": ("messages", "tools")}


def _log(n: int) -> str:
    """A tool output of about 5,000 tokens, every line distinct."""
    return "\n".join(f"[{n}:{i:04d}] cc -c src/module_{i}.c -o build/m{i}.o ok" for i in range(300))


@tool
def read_log(n: int) -> str:
    """Read build log number n."""
    return _log(n)


def _script(reasoning: bool) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """The model: `read_log(k)` on accepted request k (thinking first), then the answer."""
    seen = [0]

    def respond(body: dict[str, Any]) -> dict[str, Any]:
        seen[0] += 1
        if seen[0] > TURNS:
            return {"text": ANSWER}
        return {"calls": [["read_log", {"n": seen[0]}]], "reasoning": reasoning}

    return respond


def _chat_model(wire: str, url: str) -> Any:
    if wire == "anthropic":
        return langchain_anthropic.ChatAnthropic(
            model="claude-sonnet-4-5", base_url=url, api_key="test-key", max_retries=0
        )
    return langchain_openai.ChatOpenAI(
        model="gpt-4o", base_url=f"{url}/v1", api_key="test-key", max_retries=0
    )


class _Counted:
    """A factory of managers that records what each render counted."""

    def __init__(self) -> None:
        self.tokens: list[int] = []

    def __call__(self, thread_id: str) -> ContextManager:
        manager = ContextManager(policy=Policy())
        manager.bus.connect("render_done", self._done)
        return manager

    def _done(self, sender: object, **payload: Any) -> None:
        self.tokens.append(int(payload["tokens"]))


def _agent(wire: str, url: str, middleware: ContextMiddleware) -> Any:
    return create_agent(
        _chat_model(wire, url),
        [read_log],
        system_prompt=SYSTEM,
        middleware=[middleware],
        checkpointer=InMemorySaver(),
    )


_CONFIG: Any = {"configurable": {"thread_id": "t"}, "recursion_limit": 4 * TURNS + 10}
_PROMPT = {"messages": [{"role": "user", "content": "Why does the build fail?"}]}


def _assert_counted_as_sent(server: ProviderServer, counted: _Counted, wire: str) -> None:
    """Every body is valid, under budget, and is the request the engine counted."""
    assert server.refused == []
    assert len(server.requests) == TURNS + 1
    assert max(server.prompts) <= BUDGET
    cache = ContextManager(policy=Policy()).raw.token_cache
    system = count_payload(_system_body(wire), wire, cache) - count_payload(
        {"messages": []}, wire, cache
    )
    for body, tokens in zip(server.requests, counted.tokens, strict=True):
        sent = {k: body[k] for k in _BODY[wire] if k in body}
        # Within the few tokens a tool schema's key order moves its JSON text.
        assert abs(count_payload(sent, wire, default_counter()) - (tokens + system)) <= SLACK


def _system_body(wire: str) -> dict[str, Any]:
    if wire == "anthropic":
        return {"system": [{"type": "text", "text": SYSTEM}], "messages": []}
    return {"messages": [{"role": "system", "content": SYSTEM}]}


class TestProvider:
    """The middleware reads the provider off the chat model."""

    def test_each_package_model_names_its_format(self) -> None:
        """ChatAnthropic is Anthropic, ChatOpenAI is chat (Responses when it says so)."""
        url = "http://127.0.0.1:9"
        assert model_provider(_chat_model("anthropic", url)) == ("anthropic", "anthropic")
        assert model_provider(_chat_model("openai", url)) == ("openai", "openai")
        responses = langchain_openai.ChatOpenAI(
            model="gpt-4o", base_url=url, api_key="k", use_responses_api=True
        )
        assert model_provider(responses) == ("openai", "responses")

    def test_an_unknown_provider_falls_back_and_says_so(
        self, caplog: pytest.LogCaptureFixture
    ) -> None:
        """A fake model is rendered in the chat format; `last_format` and a log line say so."""
        middleware = ContextMiddleware(budget=BUDGET)
        agent = create_agent(FakeListChatModel(responses=["ok"]), [], middleware=[middleware])
        with caplog.at_level(logging.WARNING, logger="orchestrator.integrations"):
            agent.invoke(_PROMPT)
            agent.invoke(_PROMPT)
        choice = middleware.last_format
        assert choice is not None and choice.fallback and choice.format == "openai"
        assert choice.model == "FakeListChatModel"
        assert len([r for r in caplog.records if "FakeListChatModel" in r.message]) == 1

    def test_the_format_option_wins(self, provider_server: Any) -> None:
        """`format="openai"` renders an Anthropic model's calls in the chat format."""
        server = provider_server("anthropic", respond=lambda body: {"text": ANSWER})
        middleware = ContextMiddleware(budget=BUDGET, format="openai")
        _agent("anthropic", server.url, middleware).invoke(_PROMPT, _CONFIG)
        assert middleware.last_format is not None
        assert (middleware.last_format.format, middleware.last_format.source) == (
            "openai",
            "option",
        )


class TestThirtyTurns:
    """30 turns of ~5,000-token outputs under a 16,000-token budget, on each provider."""

    @pytest.mark.parametrize("wire", ["anthropic", "openai"])
    def test_sync_loop_is_valid_and_counted_as_sent(self, wire: str, provider_server: Any) -> None:
        """`invoke`: every body valid, under budget, exactly the request counted."""
        server = provider_server(wire, respond=_script(wire == "anthropic"), limit=BUDGET)
        counted = _Counted()
        middleware = ContextMiddleware(budget=BUDGET, factory=counted)
        result = _agent(wire, server.url, middleware).invoke(_PROMPT, _CONFIG)
        assert result["messages"][-1].content == ANSWER
        assert middleware.last_format is not None and middleware.last_format.format == wire
        _assert_counted_as_sent(server, counted, wire)

    @pytest.mark.parametrize("wire", ["anthropic", "openai"])
    async def test_async_loop_is_valid_and_counted_as_sent(
        self, wire: str, provider_server: Any
    ) -> None:
        """`ainvoke`: the same loop through `awrap_model_call`."""
        server = provider_server(wire, respond=_script(wire == "anthropic"), limit=BUDGET)
        counted = _Counted()
        middleware = ContextMiddleware(budget=BUDGET, factory=counted)
        result = await _agent(wire, server.url, middleware).ainvoke(_PROMPT, _CONFIG)
        assert result["messages"][-1].content == ANSWER
        _assert_counted_as_sent(server, counted, wire)


class TestAnthropicThinking:
    """Anthropic thinking blocks and their signatures, through the Anthropic render."""

    def test_signed_thinking_reaches_every_later_request(self, provider_server: Any) -> None:
        """Each kept assistant turn goes back with the thinking block and signature it came with."""
        server = provider_server("anthropic", respond=_script(True), limit=BUDGET)
        _agent("anthropic", server.url, ContextMiddleware(budget=BUDGET)).invoke(_PROMPT, _CONFIG)
        assert server.refused == []
        sent = 0
        for body in server.requests[1:]:
            for message in body["messages"]:
                if message["role"] != "assistant":
                    continue
                blocks = message["content"]
                uses = [b for b in blocks if b["type"] == "tool_use"]
                thinking = [b for b in blocks if b["type"] == "thinking"]
                if not uses:
                    continue
                serial = int(uses[0]["id"].split("_")[1])
                assert thinking == [
                    {"type": "thinking", "thinking": f"thinking {serial}", "signature": "sig"}
                ]
                sent += 1
        assert sent >= TURNS

    def test_the_round_trip_keeps_the_original_messages(self) -> None:
        """Rendered in Anthropic's format and read back, signed AI messages are the originals."""
        call = {"id": "toolu_1", "name": "read_log", "args": {"n": 1}}
        thinking = {"type": "thinking", "thinking": "Check it.", "signature": "sig-1"}
        redacted = {"type": "redacted_thinking", "data": "opaque"}
        messages = [
            HumanMessage("Why?", id="h1"),
            AIMessage([thinking, redacted], tool_calls=[call], id="a1"),
            ToolMessage("log", tool_call_id="toolu_1", id="t1"),
        ]
        manager = ContextManager(format="anthropic", policy=Policy())
        manager.ingest(to_events(messages))
        result = manager.render_sync()
        sent = result.payload["messages"][1]["content"]
        assert sent[:2] == [thinking, redacted]
        back = from_payload(chat_items(result, original_ids(result, manager.raw)), messages)
        assert back[0] is messages[0] and back[1] is messages[1] and back[2] is messages[2]

    def test_unsigned_thinking_is_left_out_of_the_message_sent(self) -> None:
        """Thinking Anthropic cannot take back (no signature) is not in the message sent."""
        call = {"id": "toolu_1", "name": "read_log", "args": {"n": 1}}
        original = AIMessage(
            [{"type": "thinking", "thinking": "hm"}, {"type": "text", "text": "Reading."}],
            tool_calls=[call],
            id="a1",
        )
        messages = [
            HumanMessage("Why?", id="h1"),
            original,
            ToolMessage("log", tool_call_id="toolu_1"),
        ]
        manager = ContextManager(format="anthropic", policy=Policy())
        manager.ingest(to_events(messages))
        result = manager.render_sync()
        back = from_payload(chat_items(result, original_ids(result, manager.raw)), messages)
        assert back[1] is not original and isinstance(back[1], AIMessage)
        assert back[1].content == [{"type": "text", "text": "Reading."}]
        assert (back[1].id, [c["id"] for c in back[1].tool_calls]) == ("a1", ["toolu_1"])

    def test_a_rewritten_call_id_reads_back_as_the_recorded_one(self) -> None:
        """An id Anthropic refuses (a dot in it) is sent rewritten and read back as recorded."""
        call = {"id": "call.1", "name": "read_log", "args": {"n": 1}}
        messages = [
            HumanMessage("Why?", id="h1"),
            AIMessage("", tool_calls=[call], id="a1"),
            ToolMessage("log", tool_call_id="call.1", id="t1"),
        ]
        manager = ContextManager(format="anthropic", policy=Policy())
        manager.ingest(to_events(messages))
        result = manager.render_sync()
        assert result.payload["messages"][1]["content"][0]["id"] != "call.1"
        back = from_payload(chat_items(result, original_ids(result, manager.raw)), messages)
        assert back[1] is messages[1] and back[2] is messages[2]


class TestResponsesReasoning:
    """A Responses reasoning item on an AI message, through the Responses render."""

    def test_the_reasoning_item_goes_back_whole(self) -> None:
        """Id, summary and encrypted content are sent; the AI message read back is the original."""
        reasoning = {
            "type": "reasoning",
            "id": "rs_1",
            "summary": [{"type": "summary_text", "text": "Plan."}],
            "encrypted_content": "enc-1",
        }
        call = {"id": "call_1", "name": "read_log", "args": {"n": 1}}
        messages = [
            HumanMessage("Why?", id="h1"),
            AIMessage([reasoning], tool_calls=[call], id="a1"),
            ToolMessage("log", tool_call_id="call_1", id="t1"),
        ]
        manager = ContextManager(format="responses", policy=Policy())
        manager.ingest(to_events(messages))
        result = manager.render_sync()
        assert result.payload["input"][1] == reasoning
        back = from_payload(chat_items(result, original_ids(result, manager.raw)), messages)
        assert back[1] is messages[1] and back[2] is messages[2]
        claude = ContextManager(format="anthropic", policy=Policy())
        claude.ingest(to_events(messages))
        blocks = claude.render_sync().payload["messages"][1]["content"]
        assert [b["type"] for b in blocks] == ["tool_use"]  # not Anthropic's to take back
