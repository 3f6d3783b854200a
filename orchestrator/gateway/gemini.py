"""Gemini's `generateContent` REST API as the gateway reads and writes it (gemini-cli's wire).

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
the second names a system prompt and tools, so only it is read as a conversation; the
count the gateway asks for is of the `generateContentRequest` it would send.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from context_graph.errors import SourceLocation
from context_graph.tokens.usage import Usage, read_usage
from orchestrator.gateway.sse import data_events
from orchestrator.integrations.clients_apis import GEMINI_CONTENT, Api, Keywords

__all__ = [
    "GEMINI_REST",
    "answer_usage",
    "count_request",
    "counted_tokens",
    "model_of",
    "readable_request",
    "refusal",
    "sse_usage",
]

COUNT_REQUEST = "generateContentRequest"
"""The field of a `countTokens` body that holds a whole request."""


class _RestArguments(Keywords):
    """A REST body's fields, the agent's own `systemInstruction` kept when it renders unchanged.

    The engine writes the system prompt's parts alone; gemini-cli sends them with
    `"role": "user"`. Sending the agent's own object then keeps the request's head as the
    agent wrote it.
    """

    def write(self, kwargs: dict[str, Any], payload: Mapping[str, Any]) -> dict[str, Any]:
        """The body with the rendered payload in place of its own (see the class)."""
        out = super().write(kwargs, payload)
        own = kwargs.get("systemInstruction")
        rendered = out.get("systemInstruction")
        if isinstance(own, Mapping) and isinstance(rendered, Mapping):
            if own.get("parts") == rendered.get("parts"):
                out["systemInstruction"] = own
        return out


GEMINI_REST = Api(
    "models.generateContent (REST)",
    "gemini",
    _RestArguments("contents", system_key="systemInstruction"),
    GEMINI_CONTENT.is_model,
    GEMINI_CONTENT.read_reply,
    GEMINI_CONTENT.lead,
    server_state=("cachedContent",),
)
"""A REST body: the conversation in `contents`, the system prompt in `systemInstruction`."""


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
