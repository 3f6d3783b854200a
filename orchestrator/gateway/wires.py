"""The wire formats the gateway serves: how each reads a request and the usage of an answer."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from context_graph.render import count_payload
from context_graph.tokens.counting import default_counter
from context_graph.tokens.usage import Usage
from orchestrator.gateway import anthropic, chat, gemini, responses
from orchestrator.gateway.failures import openai_refusal
from orchestrator.integrations.clients_apis import (
    ANTHROPIC_MESSAGES,
    OPENAI_CHAT,
    OPENAI_RESPONSES,
    Api,
)

__all__ = ["ANTHROPIC", "CHAT", "GEMINI", "RESPONSES", "WIRES", "Wire"]


@dataclass(frozen=True)
class Wire:
    """One API the gateway manages.

    Attributes:
        name: The wire's name (`anthropic`, `responses`, `chat`).
        api: How a request holds its conversation, system prompt and tools.
        readable: The request as the engine reads it (see each wire's module).
        sse_usage: The usage a streamed answer reports (`None`: not found).
        answer_usage: The usage of a whole JSON answer (`None`: it has none).
        engine_tools: Whether the engine renders the tools (else they are sent as the
            agent sent them and counted off the budget).
        server_state: Request fields that continue history kept by the provider: such
            a request is passed through.
        count_request: The token-count body for a rendered request (and the agent's
            count body).
        counted_tokens: The count a token-count answer gives.
        model_of: The model a request's URL path names (`None`: the body names it).
        refusal: The API's own error body (HTTP 400) for a message (`--strict`).
        text_shorthand: A string content stands for one text block
            (`[{"type": "text", "text": ...}]`): the engine's reading of the one as the
            other is sent in the agent's spelling (`spelling`).
    """

    name: str
    api: Api
    readable: Callable[[Mapping[str, Any]], dict[str, Any]]
    sse_usage: Callable[[bytes], Usage | None]
    answer_usage: Callable[[Mapping[str, Any]], Usage | None]
    engine_tools: bool
    server_state: tuple[str, ...] = ()
    count_request: Callable[[Mapping[str, Any], Mapping[str, Any]], dict[str, Any]] = (
        anthropic.count_request
    )
    counted_tokens: Callable[[Mapping[str, Any]], Any] = anthropic.counted_tokens
    model_of: Callable[[str], str | None] = lambda path: None
    refusal: Callable[[str], dict[str, Any]] = anthropic.refusal
    text_shorthand: bool = False

    def held_upstream(self, body: Mapping[str, Any]) -> bool:
        """Whether a request continues history the provider keeps (not the gateway's)."""
        return any(body.get(key) not in (None, "") for key in self.server_state)

    def tool_tokens(self, tools: Sequence[Any]) -> int:
        """What the agent's own tool definitions cost, as the engine counts a request."""
        return count_payload({"tools": list(tools)}, self.api.format, default_counter())


ANTHROPIC = Wire(
    "anthropic",
    ANTHROPIC_MESSAGES,
    anthropic.readable_request,
    anthropic.sse_usage,
    anthropic.answer_usage,
    engine_tools=True,
    text_shorthand=True,
)
RESPONSES = Wire(
    "responses",
    OPENAI_RESPONSES,
    responses.readable_request,
    responses.sse_usage,
    responses.answer_usage,
    engine_tools=False,
    server_state=OPENAI_RESPONSES.server_state,
    refusal=openai_refusal,
)
GEMINI = Wire(
    "gemini",
    gemini.GEMINI_REST,
    gemini.readable_request,
    gemini.sse_usage,
    gemini.answer_usage,
    engine_tools=False,
    server_state=gemini.GEMINI_REST.server_state,
    count_request=gemini.count_request,
    counted_tokens=gemini.counted_tokens,
    model_of=gemini.model_of,
    refusal=gemini.refusal,
)
CHAT = Wire(
    "chat",
    OPENAI_CHAT,
    chat.readable_request,
    chat.sse_usage,
    chat.answer_usage,
    engine_tools=False,
    refusal=openai_refusal,
    text_shorthand=True,
)
WIRES = {wire.name: wire for wire in (ANTHROPIC, RESPONSES, CHAT, GEMINI)}
"""Every wire, by name."""
