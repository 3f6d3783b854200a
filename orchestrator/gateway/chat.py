"""OpenAI's Chat Completions API as the gateway reads it (opencode's wire format).

opencode 1.18 talks to a provider configured with the `@ai-sdk/openai-compatible`
package over `POST /v1/chat/completions`, streamed, with
`stream_options.include_usage` set (docs/proxy.md, "opencode").

The conversation is read as the managed `chat.completions.create` reads its keyword
arguments (`OPENAI_CHAT`): `messages`, whose `system` and `developer` messages are the
system prompt (the renderer sends it first, as `system` messages).

The agent's `tools` are sent as it sent them, counted off the budget: a tool list sent
unchanged keeps the head of the provider's automatic prefix cache the same from call
to call, and Chat Completions has no cache marks for the engine to place on it.

Usage comes from a whole answer's `usage` and from a stream's last chunk, which the API
sends only when the request asked for it (`stream_options.include_usage`). The gateway
does not ask for it on a client's behalf: the client would get a chunk, and a `usage`
key on every chunk, that it did not ask for. Such a stream reports no usage, and the
engine's own count stands.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from context_graph.errors import SourceLocation
from context_graph.tokens.usage import Usage, read_usage
from orchestrator.gateway.sse import data_events

__all__ = ["answer_usage", "readable_request", "sse_usage"]


def readable_request(body: Mapping[str, Any]) -> dict[str, Any]:
    """The request as the engine reads it (unchanged: the importer reads every role)."""
    return dict(body)


def answer_usage(answer: Mapping[str, Any]) -> Usage | None:
    """The usage of a whole `ChatCompletion` (`prompt_tokens`, the cached ones included).

    Raises:
        IngestError: the usage is malformed.
    """
    return read_usage(answer.get("usage"), "openai", where=SourceLocation(path="usage"))


def sse_usage(stream: bytes) -> Usage | None:
    """The usage of a streamed reply, from the newest chunk that carries one.

    With `include_usage`, every chunk has a `usage` key, `null` until the last chunk
    (its `choices` empty), which holds the counts; without it no chunk has one.

    Raises:
        IngestError: the usage is malformed.
    """
    for event in data_events(stream, newest_first=True):
        usage = event.get("usage")
        if event.get("object") == "chat.completion.chunk" and usage is not None:
            return read_usage(usage, "openai", where=SourceLocation(path="usage"))
    return None
