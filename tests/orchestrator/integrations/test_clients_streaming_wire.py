"""The fake provider streams as the real APIs do: every event checked with the SDKs' types.

Raw server-sent events are read over HTTP (no SDK in between) and each event's data is
validated with the SDK type its name or `type` selects; a key the type does not know is
a failure too (the OpenAI and Anthropic models would keep it silently as an extra).
"""

from __future__ import annotations

import json
import typing
from typing import Any

import httpx
import pytest
from anthropic.types import RawMessageStreamEvent
from google.genai import types as genai_types
from openai.types.chat import ChatCompletionChunk
from openai.types.responses import Response, ResponseStreamEvent
from pydantic import BaseModel

SPEC = {"text": "hello there, world", "calls": [["read_file", {"path": "src/app.py"}]]}
USER = {"role": "user", "content": "hi"}
REQUESTS: dict[str, tuple[str, dict[str, Any]]] = {
    "openai": (
        "/v1/chat/completions",
        {
            "model": "m",
            "messages": [USER],
            "stream": True,
            "stream_options": {"include_usage": True},
        },
    ),
    "responses": ("/v1/responses", {"model": "m", "input": [USER], "stream": True}),
    "anthropic": (
        "/v1/messages",
        {"model": "m", "max_tokens": 10, "messages": [USER], "stream": True},
    ),
    "gemini": (
        "/v1beta/models/g:streamGenerateContent?alt=sse",
        {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]},
    ),
}


def read_sse(url: str, path: str, body: dict[str, Any]) -> tuple[httpx.Headers, list[Any]]:
    """The answer's headers and its events as (name, data) pairs, data parsed unless `[DONE]`."""
    with httpx.stream("POST", url + path, json=body) as response:
        text = response.read().decode()
        headers = response.headers
    events = []
    for block in text.split("\n\n"):
        if not block:
            continue
        fields = dict(line.split(": ", 1) for line in block.split("\n"))
        data = fields["data"]
        events.append((fields.get("event"), data if data == "[DONE]" else json.loads(data)))
    return headers, events


def stream_of(provider_server: Any, wire: str, **changes: Any) -> list[Any]:
    """The events of one streamed answer (`changes` go into the request body)."""
    server = provider_server(wire, respond=lambda body: {**SPEC, "reasoning": True})
    path, body = REQUESTS[wire]
    headers, events = read_sse(server.url, path, {**body, **changes})
    assert (headers["content-type"], headers["transfer-encoding"]) == (
        "text/event-stream",
        "chunked",
    )
    return events


def extras(value: Any, path: str = "$") -> list[str]:
    """Where a validated SDK model holds keys its type does not declare."""
    if isinstance(value, BaseModel):
        found = [f"{path}.{key}" for key in value.model_extra or {}]
        for name in type(value).model_fields:
            found += extras(getattr(value, name), f"{path}.{name}")
        return found
    if isinstance(value, list | tuple):
        return [e for i, v in enumerate(value) for e in extras(v, f"{path}[{i}]")]
    if isinstance(value, dict):
        return [e for k, v in value.items() for e in extras(v, f"{path}.{k}")]
    return []


def by_type(union: Any) -> dict[str, type[BaseModel]]:
    """The members of an SDK event union, by the literal of their `type` field."""
    members = typing.get_args(typing.get_args(union)[0])
    return {typing.get_args(m.model_fields["type"].annotation)[0]: m for m in members}


RESPONSES_EVENTS = by_type(ResponseStreamEvent)
ANTHROPIC_EVENTS = by_type(RawMessageStreamEvent)


def validated(wire: str, name: str | None, data: Any) -> BaseModel | None:
    """An event's data as the SDK type it names (`None`: `[DONE]` and `ping`, untyped)."""
    if wire == "openai":
        assert name is None
        return None if data == "[DONE]" else ChatCompletionChunk.model_validate(data)
    if wire == "gemini":
        assert name is None
        return genai_types.GenerateContentResponse.model_validate(data)
    assert name == data["type"]
    if wire == "anthropic" and name == "ping":
        assert data == {"type": "ping"}
        return None
    events = RESPONSES_EVENTS if wire == "responses" else ANTHROPIC_EVENTS
    return events[name].model_validate(data)


class TestEventShapes:
    @pytest.mark.parametrize("wire", sorted(REQUESTS))
    def test_every_event_is_the_sdks_type(self, wire: str, provider_server: Any) -> None:
        """Each event validates as the SDK type of its kind, with no key the type lacks."""
        events = stream_of(provider_server, wire)
        problems = []
        # The Responses object's `billing` and `store` come from the real API, untyped in the
        # SDK (tests/benchmarks/test_provider_server.py, UNTYPED).
        untyped = {"$.response.billing", "$.response.store"} if wire == "responses" else set()
        for i, (name, data) in enumerate(events):
            model = validated(wire, name, data)
            problems += [f"event {i}: {p}" for p in extras(model) if p not in untyped]
        assert (len(events) > 3, problems) == (True, [])

    def test_chat_chunks(self, provider_server: Any) -> None:
        """Role first, text and arguments in pieces, the finish chunk, usage alone, `[DONE]`."""
        events = [data for _name, data in stream_of(provider_server, "openai")]
        assert events[-1] == "[DONE]"
        chunks = events[:-1]
        assert all(set(c) >= {"id", "object", "created", "model", "usage"} for c in chunks)
        deltas = [c["choices"][0]["delta"] for c in chunks[:-1]]
        assert deltas[0]["role"] == "assistant"
        assert "".join(d.get("content") or "" for d in deltas) == SPEC["text"]
        pieces = [d["tool_calls"][0]["function"]["arguments"] for d in deltas if "tool_calls" in d]
        assert len(pieces) > 2 and json.loads("".join(pieces)) == {"path": "src/app.py"}
        assert chunks[-2]["choices"][0]["finish_reason"] == "tool_calls"
        assert (chunks[-1]["choices"], chunks[-1]["usage"]["prompt_tokens"] > 0) == ([], True)

    def test_chat_chunks_without_usage(self, provider_server: Any) -> None:
        """Without `include_usage` no chunk carries `usage` and none has empty `choices`."""
        events = stream_of(provider_server, "openai", stream_options=None)
        chunks = [data for _name, data in events[:-1]]
        assert all("usage" not in c and c["choices"] for c in chunks)

    def test_responses_sequence(self, provider_server: Any) -> None:
        """Every event, numbered from 0; the last carries the whole response."""
        events = stream_of(provider_server, "responses")
        assert [data["sequence_number"] for _n, data in events] == list(range(len(events)))
        assert [name for name, _data in events] == [
            "response.created",
            "response.in_progress",
            "response.output_item.added",
            "response.reasoning_summary_part.added",
            "response.reasoning_summary_text.delta",
            "response.reasoning_summary_text.delta",
            "response.reasoning_summary_text.done",
            "response.reasoning_summary_part.done",
            "response.output_item.done",
            "response.output_item.added",
            "response.content_part.added",
            *["response.output_text.delta"] * 3,
            "response.output_text.done",
            "response.content_part.done",
            "response.output_item.done",
            "response.output_item.added",
            *["response.function_call_arguments.delta"] * 4,
            "response.function_call_arguments.done",
            "response.output_item.done",
            "response.completed",
        ]
        completed = Response.model_validate(events[-1][1]["response"])
        done = [data["item"] for name, data in events if name == "response.output_item.done"]
        assert completed.model_dump(mode="json", exclude_none=True)["output"] == done
        assert completed.status == "completed" and completed.usage is not None

    def test_anthropic_sequence(self, provider_server: Any) -> None:
        """`message_start`, `ping`, each block's start, deltas and stop, then the stop reason."""
        events = stream_of(provider_server, "anthropic")
        deltas = [d["delta"]["type"] for n, d in events if n == "content_block_delta"]
        assert [n for n, _d in events if n != "content_block_delta"] == [
            "message_start",
            "ping",
            *["content_block_start", "content_block_stop"] * 3,
            "message_delta",
            "message_stop",
        ]
        assert deltas == [
            *["thinking_delta"] * 2,
            "signature_delta",
            *["text_delta"] * 3,
            *["input_json_delta"] * 4,
        ]
        message_delta = events[-2][1]
        assert message_delta["delta"]["stop_reason"] == "tool_use"
        assert message_delta["usage"]["input_tokens"] > 0

    def test_gemini_chunks(self, provider_server: Any) -> None:
        """Text in pieces, the call whole, `finishReason` and full usage on the last chunk."""
        chunks = [data for _name, data in stream_of(provider_server, "gemini")]
        parts = [p for c in chunks for p in c["candidates"][0]["content"]["parts"]]
        assert "".join(p.get("text", "") for p in parts) == SPEC["text"]
        assert parts[-1] == {"functionCall": {"name": "read_file", "args": {"path": "src/app.py"}}}
        assert [("finishReason" in c["candidates"][0]) for c in chunks] == [False] * 3 + [True]
        assert "candidatesTokenCount" in chunks[-1]["usageMetadata"]
