"""Text blocks a render sends apart reach the framework's model apart.

Anthropic and Gemini merge neighbouring messages of a role: the summary of the earlier
conversation and the user's new request become one user turn of two text blocks, two
system prompts one `system` field, two assistant messages in a row one assistant turn.
Read back for pydantic-ai (`FunctionModel` shows the `ModelMessage`s the model receives)
and LangChain (a chat model that records its messages), the blocks stay blocks; joined,
the request would run on from the summary's last word.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import anthropic
import pytest
from langchain.agents import create_agent
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langgraph.checkpoint.memory import InMemorySaver
from pydantic import PrivateAttr
from pydantic_ai import Agent
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    SystemPromptPart,
    TextPart,
    ToolCallPart,
    UserPromptPart,
)
from pydantic_ai.models.anthropic import AnthropicModel
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.providers.anthropic import AnthropicProvider

from benchmarks.provider_server import ProviderServer
from context_graph.graph.anchors import SUMMARY_HEADER
from orchestrator.integrations.langchain import ContextMiddleware
from orchestrator.integrations.pydantic_ai import ContextHistory
from orchestrator.integrations.pydantic_ai_messages import from_payload

MERGING = ["anthropic", "gemini"]
"""The formats that merge neighbouring messages of a role into one turn of blocks."""
FORMATS = [*MERGING, "openai", "responses"]
ASKS = [f"Now check whether module_{n} builds." for n in range(8)]


@pytest.fixture(autouse=True)
def _run_sync_loop() -> Iterator[None]:
    """An event loop for `run_sync`, closed after the test (run_sync leaves it open)."""
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    yield
    asyncio.set_event_loop(None)
    loop.close()


def _log(n: int) -> str:
    return "\n".join(f"[{n}:{i:04d}] cc -c src/module_{i}.c -o build/m{i}.o ok" for i in range(60))


class Doctor:
    """A `FunctionModel` function: reads a log for each new request, then answers."""

    def __init__(self) -> None:
        self.received: list[list[ModelMessage]] = []

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self.received.append(list(messages))
        n = len(self.received)
        if any(isinstance(p, UserPromptPart) for p in messages[-1].parts):
            call = ToolCallPart("read_log", {"n": n}, tool_call_id=f"call_{n}")
            return ModelResponse(parts=[TextPart(f"Reading log {n}."), call])
        return ModelResponse(parts=[TextPart("The build fails in module_3.")])


def _agent(doctor: Doctor, history: ContextHistory, system: tuple[str, ...]) -> Agent[None, str]:
    agent = Agent(FunctionModel(doctor), system_prompt=system, capabilities=[history.capability()])

    @agent.tool_plain
    def read_log(n: int) -> str:
        """Read build log number n."""
        return _log(n)

    return agent


def _parts(messages: list[ModelMessage], kind: type[Any]) -> list[Any]:
    return [
        part.content
        for message in messages
        if isinstance(message, ModelRequest)
        for part in message.parts
        if isinstance(part, kind)
    ]


class TestPydanticAI:
    """The history processor hands the model each block as its own part."""

    @pytest.mark.parametrize("fmt", FORMATS)
    def test_the_new_request_is_not_glued_to_the_summary(self, fmt: str) -> None:
        """Every user part is a request as the user sent it, or the summary alone.

        The summary quotes requests (the goal, verbatim); glued, it would end with one.
        """
        doctor = Doctor()
        history = ContextHistory(budget=4_000, format=fmt, policy="chat")  # type: ignore[arg-type]
        agent = _agent(doctor, history, ("You are a build doctor.",))
        messages: list[ModelMessage] | None = None
        for ask in ASKS:
            messages = agent.run_sync(ask, message_history=messages).all_messages()
        last = _parts(doctor.received[-1], UserPromptPart)
        assert any(p.startswith(SUMMARY_HEADER) for p in last)  # the chat profile summarized
        assert last[-1] == ASKS[-1]
        for received in doctor.received:
            for prompt in _parts(received, UserPromptPart):
                assert prompt in ASKS or (
                    prompt.startswith(SUMMARY_HEADER)
                    and not any(prompt.endswith(ask) for ask in ASKS)
                )

    @pytest.mark.parametrize("fmt", FORMATS)
    def test_system_prompts_stay_apart(self, fmt: str) -> None:
        """Two system prompts, one `system` field in Anthropic, reach the model as two.

        The Responses render writes them as one `instructions` text, a blank line apart.
        """
        doctor = Doctor()
        history = ContextHistory(budget=16_000, format=fmt)  # type: ignore[arg-type]
        system = ["You are a build doctor.", "Answer in English."]
        _agent(doctor, history, tuple(system)).run_sync(ASKS[0])
        sent = ["\n\n".join(system)] if fmt == "responses" else system
        received = [_parts(messages, SystemPromptPart) for messages in doctor.received]
        assert received == [sent] * len(doctor.received)

    async def test_claude_gets_the_summary_and_the_request_as_two_blocks(
        self, provider_server: Any
    ) -> None:
        """On the wire to the real `AnthropicModel`, the user turn holds them as blocks."""
        server: ProviderServer = provider_server(
            "anthropic", respond=lambda body: {"text": _log(len(server.requests))}
        )
        client = anthropic.AsyncAnthropic(base_url=server.url, api_key="test-key", max_retries=0)
        model = AnthropicModel(
            "claude-sonnet-5-5",
            provider=AnthropicProvider(anthropic_client=client),
            settings={"max_tokens": 1024},
        )
        history = ContextHistory(budget=3_000, policy="chat")
        agent = Agent(model, capabilities=[history.capability()])
        messages: list[ModelMessage] | None = None
        try:
            for ask in ASKS:
                messages = (await agent.run(ask, message_history=messages)).all_messages()
        finally:
            await client.close()
        assert server.refused == []
        turns = [
            [block["text"] for block in message["content"] if block["type"] == "text"]
            for message in server.requests[-1]["messages"]
            if message["role"] == "user"
        ]
        # The first request (which every request keeps), the summary, the request after it.
        ((first, summary, after),) = [t for t in turns if len(t) == 3]
        assert (first, after) == (ASKS[0], ASKS[-2])
        assert summary.startswith(SUMMARY_HEADER) and not summary.endswith(ASKS[-2])
        assert turns[-1] == [ASKS[-1]]

    def test_blocks_that_are_original_prompts_come_back_as_them(self) -> None:
        """In a merged user turn, each original prompt is its own object; the rest is new."""
        first, second = UserPromptPart("Why?"), UserPromptPart(["Look at", "this log."])
        history: list[ModelMessage] = [ModelRequest(parts=[first, second])]
        texts = ["Why?", "[a summary]", "Look at", "this log.", "Then fix it.", "Now."]
        payload = [{"role": "user", "content": [{"type": "text", "text": t} for t in texts]}]
        (back,) = from_payload(payload, history, token="tok", conversation_id=None)
        assert isinstance(back, ModelRequest)
        assert back.parts[0] is first and back.parts[2] is second
        new = [p.content for p in back.parts[1::2] if isinstance(p, UserPromptPart)]
        assert new == ["[a summary]", ["Then fix it.", "Now."]]

    def test_a_new_response_keeps_its_text_blocks(self) -> None:
        """Two assistant messages in a row, merged by the render, are two text parts."""
        payload: list[dict[str, Any]] = [
            {"role": "user", "content": "Why?"},
            {"role": "assistant", "content": [{"type": "text", "text": t} for t in ("A.", "B.")]},
        ]
        back = from_payload(payload, [], token="tok", conversation_id=None)
        assert isinstance(back[1], ModelResponse)
        assert [p.content for p in back[1].parts if isinstance(p, TextPart)] == ["A.", "B."]


class Recording(BaseChatModel):
    """A chat model that records the messages of each call and answers at length."""

    _received: list[list[BaseMessage]] = PrivateAttr(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "recording"

    @property
    def received(self) -> list[list[BaseMessage]]:
        """The messages of every call."""
        return self._received

    def bind_tools(self, tools: Any, **kwargs: Any) -> Recording:
        return self

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> ChatResult:
        self._received.append(list(messages))
        answer = AIMessage(content=_log(len(self._received)))
        return ChatResult(generations=[ChatGeneration(message=answer)])


def _texts(content: str | list[Any]) -> list[str]:
    if isinstance(content, str):
        return [content]
    return [block["text"] for block in content if block.get("type") == "text"]


class TestLangChain:
    """The middleware hands the model each block as its own block."""

    @pytest.mark.parametrize("fmt", FORMATS)
    def test_two_ai_messages_in_a_row_are_not_glued(self, fmt: str) -> None:
        """Two AI messages in a row (one turn in Anthropic and Gemini) keep their texts apart."""
        model = Recording()
        middleware = ContextMiddleware(budget=4_000, format=fmt)  # type: ignore[arg-type]
        agent = create_agent(model, [], middleware=[middleware], checkpointer=InMemorySaver())
        state = [
            SystemMessage("Answer in English."),
            HumanMessage("Why does the build fail?"),
            AIMessage("Module 3 fails."),
            AIMessage("Module 4 too."),
            HumanMessage(ASKS[5]),
        ]
        agent.invoke({"messages": state}, {"configurable": {"thread_id": "t"}})
        (received,) = model.received
        said = [_texts(m.content) for m in received if isinstance(m, AIMessage)]
        assert [t for texts in said for t in texts] == ["Module 3 fails.", "Module 4 too."]
        assert [_texts(m.content) for m in received if isinstance(m, HumanMessage)] == [
            ["Why does the build fail?"],
            [ASKS[5]],
        ]

    @pytest.mark.parametrize("fmt", MERGING)
    def test_the_new_request_is_a_block_after_the_summary(self, fmt: str) -> None:
        """The summary and the request after it, one user turn, are blocks of one message."""
        model = Recording()
        middleware = ContextMiddleware(budget=1_500, format=fmt, policy="chat")  # type: ignore[arg-type]
        agent = create_agent(model, [], middleware=[middleware], checkpointer=InMemorySaver())
        config = {"configurable": {"thread_id": "t"}}
        for ask in ASKS:
            agent.invoke({"messages": [HumanMessage(ask)]}, config)
        blocks = [_texts(m.content) for m in model.received[-1] if isinstance(m, HumanMessage)]
        merged = next(b for b in blocks if any(t.startswith(SUMMARY_HEADER) for t in b))
        summary = next(t for t in merged if t.startswith(SUMMARY_HEADER))
        assert not any(summary.endswith(ask) for ask in ASKS)
        assert merged[-1] == ASKS[-1]
