"""The pydantic-ai history processor on AnthropicModel and OpenAIChatModel, against the fake server.

Each agent's model is pydantic-ai's own model class, its provider's SDK client pointed at
a `ProviderServer` of its wire format, which validates every body (our validator and the
SDK's request types) and refuses a prompt over the budget by its own count (ours times
1.25). The processor must render in the model's format: each body the server receives is
then exactly the request the engine counted (the rendered history plus the
instructions), and a 30-turn loop of ~5,000-token tool outputs stays valid and under
budget.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Iterator
from typing import Any

import anthropic
import openai
import pytest
from pydantic_ai import Agent
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.anthropic import AnthropicModel
from pydantic_ai.models.google import GoogleModel
from pydantic_ai.models.instrumented import InstrumentedModel
from pydantic_ai.models.openai import OpenAIChatModel, OpenAIResponsesModel
from pydantic_ai.models.test import TestModel
from pydantic_ai.providers.anthropic import AnthropicProvider
from pydantic_ai.providers.google import GoogleProvider
from pydantic_ai.providers.openai import OpenAIProvider
from pydantic_ai.usage import UsageLimits

from benchmarks.provider_server import ProviderServer
from context_graph.render import count_payload
from context_graph.tokens.counting import default_counter
from orchestrator import ContextManager
from orchestrator.integrations.pydantic_ai import ContextHistory, model_provider
from orchestrator.integrations.pydantic_ai_messages import from_payload, to_events
from orchestrator.integrations.pydantic_ai_thinking import add_thinking
from orchestrator.integrations.rendered import chat_items, original_ids, system_tokens
from orchestrator.policy import Policy

BUDGET = 16_000
TURNS = 30
SYSTEM = "You are a build doctor."
ANSWER = "The build fails in module 7."
SLACK = 3
_BODY = {"anthropic": ("system", "messages", "tools"), "openai": ("messages", "tools")}


def _log(n: int) -> str:
    """A tool output of about 5,000 tokens, every line distinct."""
    return "\n".join(f"[{n}:{i:04d}] cc -c src/module_{i}.c -o build/m{i}.o ok" for i in range(300))


def _script(body: dict[str, Any], seen: list[int]) -> dict[str, Any]:
    seen[0] += 1
    if seen[0] > TURNS:
        return {"text": ANSWER}
    return {"calls": [["read_log", {"n": seen[0]}]], "reasoning": True}


def _model(wire: str, url: str, clients: list[Any]) -> Any:
    """The model of `wire`; its SDK client is added to `clients` (to close)."""
    if wire == "anthropic":
        client = anthropic.AsyncAnthropic(base_url=url, api_key="test-key", max_retries=0)
        clients.append(client)
        # A set max_tokens keeps the SDK from asking for a stream (the server answers JSON).
        return AnthropicModel(
            "claude-sonnet-5-5",
            provider=AnthropicProvider(anthropic_client=client),
            settings={"max_tokens": 1024},
        )
    chat = openai.AsyncOpenAI(base_url=f"{url}/v1", api_key="test-key", max_retries=0)
    clients.append(chat)
    return OpenAIChatModel("gpt-4o", provider=OpenAIProvider(openai_client=chat))


@pytest.fixture(name="clients")
async def clients_fixture() -> AsyncIterator[list[Any]]:
    """The SDK clients an async test made; closed after it, on the test's event loop.

    The fake upstream keeps connections open as the providers do, and a client's open
    connections belong to the loop that opened them.
    """
    made: list[Any] = []
    yield made
    for client in made:
        await client.close()


@pytest.fixture(name="own_loop")
def own_loop_fixture() -> Iterator[asyncio.AbstractEventLoop]:
    """An event loop for `run_sync` to use, closed after the test (run_sync leaves it open)."""
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    yield loop
    asyncio.set_event_loop(None)
    loop.close()


@pytest.fixture(name="sync_clients")
def sync_clients_fixture(own_loop: asyncio.AbstractEventLoop) -> Iterator[list[Any]]:
    """The SDK clients a `run_sync` test made; closed on its loop before that closes."""
    made: list[Any] = []
    yield made
    for client in made:
        own_loop.run_until_complete(client.close())


class _Counted:
    """A factory of managers that records what each render counted."""

    def __init__(self) -> None:
        self.tokens: list[int] = []

    def __call__(self, conversation_id: str) -> ContextManager:
        manager = ContextManager(policy=Policy())
        manager.bus.connect("render_done", self._done)
        return manager

    def _done(self, sender: object, **payload: Any) -> None:
        self.tokens.append(int(payload["tokens"]))


def _agent(wire: str, url: str, history: ContextHistory, clients: list[Any]) -> Agent[None, str]:
    model = _model(wire, url, clients)
    agent = Agent(model, instructions=SYSTEM, capabilities=[history.capability()])

    @agent.tool_plain
    def read_log(n: int) -> str:
        """Read build log number n."""
        return _log(n)

    return agent


def _server(provider_server: Any, wire: str) -> ProviderServer:
    seen = [0]
    server: ProviderServer = provider_server(
        wire, respond=lambda body: _script(body, seen), limit=BUDGET
    )
    return server


def _assert_counted_as_sent(server: ProviderServer, counted: _Counted, wire: Any) -> None:
    """Every body is valid, under budget, and is the request the engine counted."""
    assert server.refused == []
    assert len(server.requests) == TURNS + 1
    assert max(server.prompts) <= BUDGET
    system = system_tokens(SYSTEM, wire, ContextManager(policy=Policy()).raw.token_cache)
    for body, tokens in zip(server.requests, counted.tokens, strict=True):
        sent = {k: body[k] for k in _BODY[wire] if k in body}
        # Within the few tokens a tool schema's key order moves its JSON text.
        assert abs(count_payload(sent, wire, default_counter()) - (tokens + system)) <= SLACK


class TestProvider:
    """The processor reads the format off the model class."""

    def test_each_model_class_names_its_format(self) -> None:
        """Anthropic, chat, Responses and Google models, a wrapper looked through."""
        chat = openai.AsyncOpenAI(base_url="http://127.0.0.1:9/v1", api_key="k")
        client = anthropic.AsyncAnthropic(base_url="http://127.0.0.1:9", api_key="k")
        openai_provider = OpenAIProvider(openai_client=chat)
        claude = AnthropicModel(
            "claude-sonnet-5-5", provider=AnthropicProvider(anthropic_client=client)
        )
        assert model_provider(claude) == ("anthropic", "anthropic")
        assert model_provider(OpenAIChatModel("gpt-4o", provider=openai_provider)) == (
            "openai",
            "openai",
        )
        assert model_provider(OpenAIResponsesModel("gpt-4o", provider=openai_provider)) == (
            "openai",
            "responses",
        )
        gemini = GoogleModel("gemini-2.5-flash", provider=GoogleProvider(api_key="k"))
        assert model_provider(gemini) == ("google", "gemini")
        assert model_provider(InstrumentedModel(claude)) == ("anthropic", "anthropic")

    async def test_an_unknown_provider_falls_back_and_says_so(
        self, caplog: pytest.LogCaptureFixture
    ) -> None:
        """`TestModel` is rendered in the chat format; `last_format` and one log line say so."""
        history = ContextHistory(budget=BUDGET)
        agent = Agent(TestModel(call_tools=[]), capabilities=[history.capability()])
        with caplog.at_level(logging.WARNING, logger="orchestrator.integrations"):
            await agent.run("hi")
            await agent.run("again")
        choice = history.last_format
        assert choice is not None and choice.fallback and choice.format == "openai"
        assert (choice.provider, choice.model) == ("test", "TestModel")
        assert len([r for r in caplog.records if "TestModel" in r.message]) == 1


class TestThirtyTurns:
    """30 turns of ~5,000-token outputs under a 16,000-token budget, on each provider."""

    @pytest.mark.parametrize("wire", ["anthropic", "openai"])
    async def test_async_loop_is_valid_and_counted_as_sent(
        self, wire: str, provider_server: Any, clients: list[Any]
    ) -> None:
        """`await agent.run`: every body valid, under budget, exactly the request counted."""
        server = _server(provider_server, wire)
        counted = _Counted()
        history = ContextHistory(budget=BUDGET, factory=counted)
        agent = _agent(wire, server.url, history, clients)
        result = await agent.run("Why?", usage_limits=UsageLimits(request_limit=None))
        assert result.output == ANSWER
        assert history.last_format is not None and history.last_format.format == wire
        _assert_counted_as_sent(server, counted, wire)

    @pytest.mark.parametrize("wire", ["anthropic", "openai"])
    def test_sync_loop_is_valid_and_counted_as_sent(
        self, wire: str, provider_server: Any, sync_clients: list[Any]
    ) -> None:
        """`run_sync`: the same loop."""
        server = _server(provider_server, wire)
        counted = _Counted()
        history = ContextHistory(budget=BUDGET, factory=counted)
        agent = _agent(wire, server.url, history, sync_clients)
        result = agent.run_sync("Why?", usage_limits=UsageLimits(request_limit=None))
        assert result.output == ANSWER
        _assert_counted_as_sent(server, counted, wire)


def _history(thinking: list[ThinkingPart]) -> list[ModelMessage]:
    call = ToolCallPart("read_log", {"n": 1}, tool_call_id="toolu_1")
    return [
        ModelRequest(parts=[UserPromptPart("Why?")]),
        ModelResponse(parts=[*thinking, TextPart("Reading."), call]),
        ModelRequest(parts=[ToolReturnPart("read_log", "log", tool_call_id="toolu_1")]),
    ]


def _round_trip(history: list[ModelMessage], fmt: Any) -> tuple[Any, list[ModelMessage]]:
    manager = ContextManager(format=fmt, policy=Policy())
    manager.ingest(to_events(list(enumerate(history))))
    result = manager.render_sync()
    items = chat_items(result, original_ids(result, manager.raw))
    back = from_payload(items, history, token="tok", conversation_id=None, provider_name="x")
    return result, back


class TestThinking:
    """Each provider's thinking goes back to that provider, signature and all."""

    @pytest.mark.parametrize(
        ("provider_name", "signer"),
        [
            ("anthropic", "anthropic"),
            ("google", "gemini"),
            ("google-gla", "gemini"),
            ("google-vertex", "gemini"),
            ("google-cloud", "gemini"),
            ("gemini", "gemini"),
            ("openai", None),
            ("azure", None),
            ("mistral", None),
            (None, None),
        ],
    )
    def test_a_thought_is_signed_by_the_format_of_its_provider(
        self, provider_name: str | None, signer: str | None
    ) -> None:
        """A provider that signs thinking names its format; any other leaves it unsigned."""
        content: list[dict[str, Any]] = []
        add_thinking(ThinkingPart("Think.", signature="s", provider_name=provider_name), content)
        assert content == [
            {"type": "thinking", "thinking": "Think.", "signature": "s", "provider": signer}
        ]

    async def test_anthropic_signatures_survive_the_loop(
        self, provider_server: Any, clients: list[Any]
    ) -> None:
        """Every later request to Claude carries each kept turn's thinking and signature."""
        server = _server(provider_server, "anthropic")
        agent = _agent("anthropic", server.url, ContextHistory(budget=BUDGET), clients)
        result = await agent.run("Why?", usage_limits=UsageLimits(request_limit=None))
        assert server.refused == []
        checked = 0
        for body in server.requests[1:]:
            for message in body["messages"]:
                uses = [b for b in message["content"] if b["type"] == "tool_use"]
                if message["role"] == "assistant" and uses:
                    serial = uses[0]["id"].split("_")[1]
                    thinking = [b for b in message["content"] if b["type"] == "thinking"]
                    assert [(b["thinking"], b["signature"]) for b in thinking] == [
                        (f"thinking {serial}", "sig")
                    ]
                    checked += 1
        assert checked >= TURNS
        kept = [
            p
            for m in result.all_messages()
            if isinstance(m, ModelResponse)
            for p in m.parts
            if isinstance(p, ThinkingPart)
        ]
        assert kept and all(p.signature == "sig" and p.provider_name == "anthropic" for p in kept)

    def test_anthropic_thinking_and_redacted_thinking_round_trip(self) -> None:
        """Signed and redacted thinking go as Anthropic blocks; the response is the original."""
        thinking = ThinkingPart("Check it.", signature="sig-1", provider_name="anthropic")
        redacted = ThinkingPart(
            "", id="redacted_thinking", signature="opaque", provider_name="anthropic"
        )
        history = _history([thinking, redacted])
        result, back = _round_trip(history, "anthropic")
        assert result.payload["messages"][1]["content"][:2] == [
            {"type": "thinking", "thinking": "Check it.", "signature": "sig-1"},
            {"type": "redacted_thinking", "data": "opaque"},
        ]
        assert back[1].parts == history[1].parts

    def test_gemini_thinking_goes_to_gemini_only(self) -> None:
        """A Google-signed thought is sent to Gemini with its signature, and never to Claude."""
        thought = ThinkingPart("Think.", signature="g-sig", provider_name="google")
        history = _history([thought])
        gemini, back = _round_trip(history, "gemini")
        parts = gemini.payload["contents"][1]["parts"]
        assert parts[0] == {"text": "Think.", "thought": True, "thoughtSignature": "g-sig"}
        assert back[1].parts == history[1].parts
        claude, rebuilt = _round_trip(history, "anthropic")
        blocks = claude.payload["messages"][1]["content"]
        assert [b["type"] for b in blocks] == ["text", "tool_use"]
        response = rebuilt[1]
        assert isinstance(response, ModelResponse)
        assert not [p for p in response.parts if isinstance(p, ThinkingPart)]

    def test_a_gemini_call_keeps_its_signature_details(self) -> None:
        """An unsigned thought (as GoogleModel records it) is left out; the call part is kept."""
        call = ToolCallPart(
            "read_log",
            {"n": 1},
            tool_call_id="toolu_1",
            provider_name="google",
            provider_details={"thought_signature": "c2ln"},
        )
        history = _history([ThinkingPart("Think.")])
        response = history[1]
        assert isinstance(response, ModelResponse)
        response.parts = [response.parts[0], response.parts[1], call]
        result, back = _round_trip(history, "gemini")
        assert all("thought" not in p for p in result.payload["contents"][1]["parts"])
        kept = back[1]
        assert isinstance(kept, ModelResponse)
        assert [type(p).__name__ for p in kept.parts] == ["TextPart", "ToolCallPart"]
        assert kept.parts[1] is call

    def test_responses_reasoning_round_trip(self) -> None:
        """An OpenAI reasoning item goes back to Responses whole: id, summary, encrypted content."""
        reasoning = ThinkingPart("Plan.", id="rs_1", signature="enc-1", provider_name="openai")
        history = _history([reasoning])
        result, back = _round_trip(history, "responses")
        assert result.payload["input"][1] == {
            "type": "reasoning",
            "id": "rs_1",
            "summary": [{"type": "summary_text", "text": "Plan."}],
            "encrypted_content": "enc-1",
        }
        assert back[1].parts == history[1].parts
        claude, _ = _round_trip(history, "anthropic")
        assert all(b["type"] != "thinking" for b in claude.payload["messages"][1]["content"])
