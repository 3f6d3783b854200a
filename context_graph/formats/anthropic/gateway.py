"""Anthropic's Messages API as a gateway reads and writes it (Claude Code's wire).

Served: `POST /v1/messages` (with or without `?beta=true`) and
`/v1/messages/count_tokens`, whose answer is the upstream's count of what the gateway
would send.

What a request body says is read as the managed `messages.create` reads its keyword
arguments (`messages`, `system`, `tools`), after two changes that make the agent's history
comparable from call to call and readable by the importer:

- `cache_control` marks are taken off: the agent moves its marks to the newest message
  at every call, which would make an unchanged item look changed; the engine places
  its own marks on what it renders.
- a `system` message inside `messages` (Claude Code's mid-conversation system beta)
  becomes a user message whose text is wrapped in `<system-reminder>` tags, the form
  Claude Code itself used for these reminders before the beta: every API version
  accepts it, and the top-level system prompt, the head of the cached prefix, stays
  the same from call to call. It is rewritten for a model that takes such messages
  (`claude-opus-4-8`) too: the engine has no node for a system message held in its
  place (its importer refuses one; a system node is rendered into the top-level
  `system`), so kept it would move to the head and change the cached prefix.
  One such message is the user's, not the harness's: what the user typed while the
  agent worked, which Claude Code 2.1 hands over as a system message that opens with
  `QUEUED_MESSAGE`. It becomes a plain user message (a request, not a notice: the
  brief keeps the user's words, and the render floor anchors on the latest request).

A reply is not read: the agent sends it back in its next request, where it is taken in
with the rest. Only its usage is read (`answer_usage`, `sse_usage`), to calibrate the
engine's count and add to the session's usage.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from context_graph.errors import SourceLocation
from context_graph.formats.gateway import BodyLayout, GatewayWire, RequestKind, TokenCount, Upstream
from context_graph.formats.sse import data_events
from context_graph.tokens.usage import Usage, read_usage

__all__ = [
    "GATEWAY",
    "QUEUED_MESSAGE",
    "answer_usage",
    "count_request",
    "counted_tokens",
    "readable_request",
    "refusal",
    "sse_usage",
    "unreachable",
]

_MESSAGES = "/v1/messages"
_COUNT_TOKENS = "/v1/messages/count_tokens"

_REMINDER = "<system-reminder>\n{}\n</system-reminder>"
#: How Claude Code 2.1 opens the system message that hands the model what the user
#: typed while it worked (its session file records the same as a `queued_command`).
QUEUED_MESSAGE = "The user sent a new message while you were working:"


def readable_request(body: Mapping[str, Any]) -> dict[str, Any]:
    """The request with its cache marks taken off and its system messages made user text."""
    out = dict(body)
    if isinstance(body.get("system"), list):
        out["system"] = [_unmarked(block) for block in body["system"]]
    if isinstance(body.get("tools"), list):
        out["tools"] = [_unmarked(tool) for tool in body["tools"]]
    if isinstance(body.get("messages"), list):
        out["messages"] = [_readable_message(message) for message in body["messages"]]
    return out


def _readable_message(message: Any) -> Any:
    if not isinstance(message, Mapping):
        return message  # the importer names what is wrong with it
    content = message.get("content")
    if isinstance(content, list):
        if message.get("role") != "system" and not any(_marked(b) for b in content):
            # Most of a long history: kept as sent, not copied on every request.
            return message
        content = [_unmarked(block) for block in content]
    if message.get("role") == "system":
        if _queued(content):
            return {"role": "user", "content": content}
        return {"role": "user", "content": _as_reminder(content)}
    return message if content is message.get("content") else {**message, "content": content}


def _queued(content: Any) -> bool:
    """Whether a system message's content is a message the user typed while the agent worked."""
    if isinstance(content, list):
        first = content[0] if content else None
        content = first.get("text") if isinstance(first, Mapping) else None
    return isinstance(content, str) and content.startswith(QUEUED_MESSAGE)


def _marked(block: Any) -> bool:
    return isinstance(block, Mapping) and "cache_control" in block


def _as_reminder(content: Any) -> Any:
    if isinstance(content, str):
        return [{"type": "text", "text": _REMINDER.format(content)}]
    if isinstance(content, list):
        return [
            {**block, "text": _REMINDER.format(block["text"])}
            if isinstance(block, Mapping) and isinstance(block.get("text"), str)
            else block
            for block in content
        ]
    return content


def _unmarked(block: Any) -> Any:
    if isinstance(block, Mapping) and "cache_control" in block:
        return {key: value for key, value in block.items() if key != "cache_control"}
    return block


def answer_usage(answer: Mapping[str, Any]) -> Usage | None:
    """The usage of a whole `Message`: input plus cache reads and writes, and the output.

    Raises:
        IngestError: the usage is malformed.
    """
    return read_usage(answer.get("usage"), "anthropic", where=SourceLocation(path="usage"))


def sse_usage(stream: bytes) -> Usage | None:
    """The usage of a streamed reply: `message_start`'s, with the last `message_delta`'s.

    `message_start` says the input and the cache counts, and a first output count;
    each `message_delta` repeats the counts so far, the last one the final output (and,
    in newer API versions, the input counts too, which then stand). A stream without a
    readable `message_start` gives `None`.

    Raises:
        IngestError: the usage is malformed.
    """
    start: Mapping[str, Any] | None = None
    final: Mapping[str, Any] = {}
    for event in data_events(stream):
        kind, usage = event.get("type"), event.get("usage")
        message = event.get("message")
        if kind == "message_start" and start is None and isinstance(message, dict):
            start = message.get("usage") if isinstance(message.get("usage"), dict) else {}
        elif kind == "message_delta" and isinstance(usage, dict):
            final = usage
    if start is None:
        return None
    merged = {**start, **{key: value for key, value in final.items() if value is not None}}
    return read_usage(merged, "anthropic", where=SourceLocation(path="message_start.usage"))


_COUNTED = frozenset(
    {"model", "system", "messages", "tools", "tool_choice", "thinking", "mcp_servers"}
)
"""The fields a count_tokens request takes."""


def count_request(sent: Mapping[str, Any], body: Mapping[str, Any]) -> dict[str, Any]:
    """The count_tokens body for the request the gateway would send: its counted fields."""
    return {key: value for key, value in sent.items() if key in _COUNTED}


def counted_tokens(answer: Mapping[str, Any]) -> Any:
    """The count a count_tokens answer gives (`input_tokens`)."""
    return answer.get("input_tokens")


def refusal(message: str) -> dict[str, Any]:
    """The API's error body for a request refused as invalid."""
    return {"type": "error", "error": {"type": "invalid_request_error", "message": message}}


def unreachable(message: str) -> dict[str, Any]:
    """The API's error body for an upstream that could not be reached (HTTP 502)."""
    return {"type": "error", "error": {"type": "api_error", "message": message}}


def _request_kind(path: str, raw: bytes) -> RequestKind | None:
    return "count" if path == _COUNT_TOKENS else "call"


def _speaks(path: str) -> bool:
    return path.startswith(_MESSAGES)


def _agent_setup(url: str) -> tuple[str, ...]:
    return ("Set in the agent's environment (Claude Code):", f"  export ANTHROPIC_BASE_URL={url}")


GATEWAY = GatewayWire(
    name="anthropic",
    format="anthropic",
    upstream=Upstream("anthropic", "https://api.anthropic.com"),
    layout=BodyLayout("messages", system_key="system"),
    routes=(_MESSAGES, _COUNT_TOKENS),
    request_kind=_request_kind,
    speaks=_speaks,
    readable=readable_request,
    sse_usage=sse_usage,
    answer_usage=answer_usage,
    refusal=refusal,
    unreachable=unreachable,
    agent_setup=_agent_setup,
    engine_tools=True,
    # The agent moves its marks to the newest message at every call (`readable_request`
    # takes them off): the engine marks the prefix it keeps stable, or nothing is cached.
    engine_cache_marks=True,
    count=TokenCount(count_request, counted_tokens),
    text_shorthand=True,
)
"""The Messages API as the gateway serves it."""
