"""OpenAI's Responses API as a gateway reads it (Codex CLI's wire format).

Served: `POST /v1/responses`.

The conversation is read as the managed `responses.create` reads its keyword arguments:
`instructions` and the `input` items; the `developer` messages
Codex puts at the head of `input` are its instructions and go into `instructions`.

The agent's `tools` are sent as it sent them, counted off the budget: Codex declares
freeform (`custom`) and server tools (`web_search`, `tool_search`) beside its function
tools, which the engine does not render, and a tool list sent unchanged keeps the
head of the cached prefix byte for byte.

A request that continues history kept on the provider's servers
(`previous_response_id`, `conversation`) cannot be rendered (the engine would send the
history twice): it is passed through.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from context_graph.errors import SourceLocation
from context_graph.formats.gateway import BodyLayout, GatewayWire, RequestKind
from context_graph.formats.openai_chat.gateway import OPENAI, openai_error
from context_graph.formats.openai_chat.gateway import unreachable as openai_unreachable
from context_graph.formats.sse import data_events
from context_graph.tokens.usage import Usage, read_usage

__all__ = ["GATEWAY", "answer_usage", "readable_request", "sse_usage"]

_RESPONSES = "/v1/responses"


def readable_request(body: Mapping[str, Any]) -> dict[str, Any]:
    """The request as the engine reads it (unchanged: Responses items carry no cache marks)."""
    return dict(body)


def answer_usage(answer: Mapping[str, Any]) -> Usage | None:
    """The usage of a whole `Response` (`input_tokens`, the cached ones included).

    Raises:
        IngestError: the usage is malformed.
    """
    return read_usage(answer.get("usage"), "responses", where=SourceLocation(path="usage"))


def sse_usage(stream: bytes) -> Usage | None:
    """The usage of a streamed reply, from its `response.completed` event's response.

    Raises:
        IngestError: the usage is malformed.
    """
    for event in data_events(stream, newest_first=True):
        if event.get("type") == "response.completed":
            response = event.get("response")
            return answer_usage(response) if isinstance(response, dict) else None
    return None


def _request_kind(path: str, raw: bytes) -> RequestKind | None:
    return "call"


def _speaks(path: str) -> bool:
    return path.startswith(_RESPONSES)


def _agent_setup(url: str) -> tuple[str, ...]:
    return (
        "Add to ~/.codex/config.toml (Codex CLI), and run codex with that key set:",
        '  model_provider = "context-graph"',
        "  [model_providers.context-graph]",
        '  name = "context-graph"',
        f'  base_url = "{url}/v1"',
        '  env_key = "OPENAI_API_KEY"',
        '  wire_api = "responses"',
    )


GATEWAY = GatewayWire(
    name="responses",
    format="responses",
    upstream=OPENAI,
    layout=BodyLayout("input", system_key="instructions", text_role="user"),
    routes=(_RESPONSES,),
    request_kind=_request_kind,
    speaks=_speaks,
    readable=readable_request,
    sse_usage=sse_usage,
    answer_usage=answer_usage,
    refusal=openai_error,
    unreachable=openai_unreachable,
    agent_setup=_agent_setup,
    engine_tools=False,
    server_state=("previous_response_id", "conversation"),
)
"""The Responses API as the gateway serves it."""
