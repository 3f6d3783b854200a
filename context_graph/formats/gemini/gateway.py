"""Gemini's `generateContent` REST API as a gateway reads and writes it (gemini-cli's wire).

A request body holds `systemInstruction`, `contents` and `tools` at its top level (the
model is in the URL: `/v1beta/models/<model>:generateContent`, `:streamGenerateContent`
and `:countTokens`). The engine renders `systemInstruction` and `contents`; every other
field (`generationConfig`, `toolConfig`, `safetySettings`, `labels`, ...) goes upstream
as the agent sent it. So do its `tools`, counted off the budget: gemini-cli declares its
functions with `parametersJsonSchema`, and a tool list sent unchanged keeps the head of
the cached prefix byte for byte. A model turn's `thoughtSignature`s are the importer's
signatures, written back on the parts they came with.

A request naming `cachedContent` continues history the provider keeps (a cache made of
the conversation's head): rendering it would send that history twice, so it is passed
through.

`countTokens` takes either bare `contents` (what the genai SDK sends for the Gemini API,
gemini-cli's counts of a new message's parts) or a whole `generateContentRequest`. Only
the second names a system prompt and tools, so only it is read as a conversation (a
bare one is passed through); the count the gateway asks for is of the
`generateContentRequest` it would send.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from context_graph.errors import SourceLocation
from context_graph.formats.gateway import BodyLayout, GatewayWire, RequestKind, TokenCount, Upstream
from context_graph.formats.sse import data_events
from context_graph.tokens.usage import Usage, read_usage

__all__ = [
    "COUNT_REQUEST",
    "GATEWAY",
    "answer_usage",
    "count_request",
    "counted_tokens",
    "model_of",
    "readable_request",
    "refusal",
    "restore",
    "sse_usage",
    "unreachable",
]

COUNT_REQUEST = "generateContentRequest"
"""The field of a `countTokens` body that holds a whole request."""

_CALLS = frozenset({"generateContent", "streamGenerateContent"})


def readable_request(body: Mapping[str, Any]) -> dict[str, Any]:
    """The request as the engine reads it.

    A `countTokens` body's `generateContentRequest` without its `model` (the URL names
    it); any other body unchanged.
    """
    inner = body.get(COUNT_REQUEST)
    if isinstance(inner, Mapping):
        return {key: value for key, value in inner.items() if key != "model"}
    return dict(body)


def count_request(sent: Mapping[str, Any], body: Mapping[str, Any]) -> dict[str, Any]:
    """The `countTokens` body for the request the gateway would send (`sent`).

    Args:
        sent: The rendered request.
        body: The agent's `countTokens` body (its `generateContentRequest.model` is kept).
    """
    inner = body.get(COUNT_REQUEST)
    model = inner.get("model") if isinstance(inner, Mapping) else None
    request = dict(sent) if model is None else {"model": model, **sent}
    return {COUNT_REQUEST: request}


def counted_tokens(answer: Mapping[str, Any]) -> Any:
    """The count a `countTokens` answer gives (`totalTokens`)."""
    return answer.get("totalTokens")


def model_of(path: str) -> str | None:
    """The model a request's URL path names (`/v1beta/models/<model>:<method>`)."""
    head, _, _method = path.rpartition(":")
    model = head.rpartition("/models/")[2]
    return model or None


def answer_usage(answer: Mapping[str, Any]) -> Usage | None:
    """The usage of a whole `GenerateContentResponse` (its `usageMetadata`).

    Raises:
        IngestError: the usage is malformed.
    """
    where = SourceLocation(path="usageMetadata")
    return read_usage(answer.get("usageMetadata"), "gemini", where=where)


def sse_usage(stream: bytes) -> Usage | None:
    """The usage of a streamed reply: the newest chunk's `usageMetadata` that counts a prompt.

    Every chunk carries the counts so far; the last ones the final output. A chunk cut
    short by the scan does not read and is skipped for the one before it.

    Raises:
        IngestError: the usage is malformed.
    """
    for event in data_events(stream, newest_first=True):
        usage = event.get("usageMetadata")
        if isinstance(usage, dict) and usage.get("promptTokenCount") is not None:
            return answer_usage(event)
    return None


def refusal(message: str) -> dict[str, Any]:
    """The API's error body for a request refused as invalid (a `google.rpc.Status`)."""
    return {"error": {"code": 400, "message": message, "status": "INVALID_ARGUMENT"}}


def unreachable(message: str) -> dict[str, Any]:
    """The API's error body for an upstream that could not be reached (HTTP 502)."""
    return {"error": {"code": 502, "message": message, "status": "UNAVAILABLE"}}


def restore(own: Mapping[str, Any], sent: dict[str, Any]) -> dict[str, Any]:
    """The body with the agent's own `systemInstruction` when the engine's has its parts.

    The engine writes the system prompt's parts alone; gemini-cli sends them with
    `"role": "user"`. Sending the agent's own object then keeps the request's head as the
    agent wrote it.
    """
    mine = own.get("systemInstruction")
    rendered = sent.get("systemInstruction")
    if isinstance(mine, Mapping) and isinstance(rendered, Mapping):
        if mine.get("parts") == rendered.get("parts"):
            sent["systemInstruction"] = mine
    return sent


def _request_kind(path: str, raw: bytes) -> RequestKind | None:
    method = path.rpartition("/")[2].rpartition(":")[2]
    if method in _CALLS:
        return "call"
    if method == "countTokens" and COUNT_REQUEST.encode() in raw:
        return "count"
    return None  # another method, or a count of bare `contents` (see the module)


def _speaks(path: str) -> bool:
    # `models/<model>:<method>`; OpenAI's `/v1/models/<id>` has no method
    return path.startswith("/v1beta/") or (path.startswith("/v1/models/") and ":" in path)


def _agent_setup(url: str) -> tuple[str, ...]:
    return (
        "Set in the agent's environment (gemini-cli, with its Gemini API key auth):",
        f"  export GOOGLE_GEMINI_BASE_URL={url}",
    )


GATEWAY = GatewayWire(
    name="gemini",
    format="gemini",
    upstream=Upstream("gemini", "https://generativelanguage.googleapis.com"),
    layout=BodyLayout("contents", system_key="systemInstruction"),
    routes=("/v1beta/models/{target}",),
    request_kind=_request_kind,
    speaks=_speaks,
    readable=readable_request,
    sse_usage=sse_usage,
    answer_usage=answer_usage,
    refusal=refusal,
    unreachable=unreachable,
    agent_setup=_agent_setup,
    engine_tools=False,
    count=TokenCount(count_request, counted_tokens),
    server_state=("cachedContent",),
    model_of=model_of,
    restore=restore,
)
"""The `generateContent` REST API as the gateway serves it."""
