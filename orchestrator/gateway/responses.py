"""OpenAI's Responses API as the gateway reads it (Codex CLI's wire format).

The conversation is read as the managed `responses.create` reads its keyword arguments
(`OPENAI_RESPONSES`): `instructions` and the `input` items; the `developer` messages
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

from orchestrator.gateway.sse import data_events

__all__ = ["prompt_tokens", "readable_request", "sse_usage"]


def readable_request(body: Mapping[str, Any]) -> dict[str, Any]:
    """The request as the engine reads it (unchanged: Responses items carry no cache marks)."""
    return dict(body)


def prompt_tokens(usage: Any) -> int | None:
    """The prompt tokens of a Responses `usage` object (`input_tokens`, cached included)."""
    if not isinstance(usage, Mapping):
        return None
    value = usage.get("input_tokens")
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        return None
    return value


def sse_usage(stream: bytes) -> int | None:
    """The prompt tokens of a streamed reply, from its `response.completed` event."""
    for event in data_events(stream, newest_first=True):
        if event.get("type") == "response.completed":
            response = event.get("response")
            return prompt_tokens(response.get("usage")) if isinstance(response, dict) else None
    return None
