"""OpenAI's Chat Completions API as a gateway reads it (opencode's and Qwen Code's wire format).

Served: `POST /v1/chat/completions`. The OpenAI upstream (`OPENAI`) and its error body
(`openai_error`) are shared with the Responses API's wire.

opencode 1.18 talks to a provider configured with the `@ai-sdk/openai-compatible`
package over `POST /v1/chat/completions`, streamed, with
`stream_options.include_usage` set (docs/proxy.md, "opencode").

The conversation is read as the managed `chat.completions.create` reads its keyword
arguments: `messages`, whose leading `system` and `developer` messages
are the system prompt (the renderer sends it first, as `system` messages). A `system` or
`developer` message later in the conversation (a reminder an agent adds mid-task) would
be read as a new system prompt and sent at the head, changing the head of the provider's
prefix cache and moving the reminder away from where the agent put it; it is read as a
user message in its place instead, its text wrapped in `<system-reminder>` tags (as the
Anthropic wire reads Claude Code's). A user message is accepted at any place by every
Chat Completions server, where some (the chat templates of several open models) refuse
a system message that is not first.

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
from context_graph.formats.gateway import BodyLayout, GatewayWire, RequestKind, Upstream
from context_graph.formats.sse import data_events
from context_graph.tokens.usage import Usage, read_usage

__all__ = [
    "GATEWAY",
    "OPENAI",
    "answer_usage",
    "openai_error",
    "readable_request",
    "sse_usage",
    "unreachable",
]

OPENAI = Upstream("openai", "https://api.openai.com")
"""OpenAI's API: Chat Completions and Responses."""


_SYSTEM_ROLES = frozenset({"system", "developer"})
_REMINDER = "<system-reminder>\n{}\n</system-reminder>"


def readable_request(body: Mapping[str, Any]) -> dict[str, Any]:
    """The request as the engine reads it: a system message past the head made user text."""
    out = dict(body)
    messages = body.get("messages")
    if isinstance(messages, list):
        head = next(
            (i for i, m in enumerate(messages) if not _is_system(m)),
            len(messages),
        )
        if any(_is_system(m) for m in messages[head:]):
            out["messages"] = [
                *messages[:head],
                *(_as_user(m) if _is_system(m) else m for m in messages[head:]),
            ]
    return out


def _is_system(message: Any) -> bool:
    return isinstance(message, Mapping) and message.get("role") in _SYSTEM_ROLES


def _as_user(message: Mapping[str, Any]) -> dict[str, Any]:
    """A mid-conversation system message as a user message, its text marked a reminder."""
    content = message.get("content")
    if isinstance(content, str):
        content = _REMINDER.format(content)
    elif isinstance(content, list):
        content = [
            {**part, "text": _REMINDER.format(part["text"])}
            if isinstance(part, Mapping) and isinstance(part.get("text"), str)
            else part
            for part in content
        ]
    return {"role": "user", "content": content}


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


def openai_error(message: str, kind: str = "invalid_request_error") -> dict[str, Any]:
    """OpenAI's error body (`invalid_request_error`: HTTP 400; `server_error`: 5xx)."""
    return {"error": {"message": message, "type": kind, "param": None, "code": None}}


def unreachable(message: str) -> dict[str, Any]:
    """OpenAI's error body for an upstream that could not be reached (HTTP 502)."""
    return openai_error(message, "server_error")


def _request_kind(path: str, raw: bytes) -> RequestKind | None:
    return "call"


def _speaks(path: str) -> bool:
    return path.startswith(("/v1/chat/", "/v1/completions", "/v1/embeddings"))


def _agent_setup(url: str) -> tuple[str, ...]:
    return (
        "For opencode, an @ai-sdk/openai-compatible provider in opencode.json with:",
        f'  "options": {{"baseURL": "{url}/v1"}}',
        "For Qwen Code (its OpenAI sign-in), in its shell:",
        f"  export OPENAI_BASE_URL={url}/v1",
        "For Cline (its OpenAI-compatible provider), once:",
        f"  cline auth -p openai -k $OPENAI_API_KEY -m MODEL -b {url}/v1",
    )


GATEWAY = GatewayWire(
    name="chat",
    format="openai",
    upstream=OPENAI,
    layout=BodyLayout("messages"),
    routes=("/v1/chat/completions",),
    request_kind=_request_kind,
    speaks=_speaks,
    readable=readable_request,
    sse_usage=sse_usage,
    answer_usage=answer_usage,
    refusal=openai_error,
    unreachable=unreachable,
    agent_setup=_agent_setup,
    engine_tools=False,
    text_shorthand=True,
)
"""The Chat Completions API as the gateway serves it."""
