"""The fake provider's streamed answers: each wire's server-sent events, cut where asked.

`ProviderServer` answers a streaming request (`"stream": true` in the body, or Gemini's
`:streamGenerateContent?alt=sse`) with the events the real API sends, made from the
whole reply it would have answered without streaming, so a streamed reply and a whole
one carry the same content:

- `openai`: `data: {chunk}` lines of `chat.completion.chunk`s (role first, text in
  pieces, each tool call's arguments split over several chunks, a `finish_reason`
  chunk), a last chunk with empty `choices` and the usage when the body asks for it
  (`stream_options.include_usage`), then `data: [DONE]`;
- `responses`: `event:` named events with a `sequence_number` each: `response.created`,
  `response.in_progress`, per output item `response.output_item.added`, its parts and
  deltas (`response.reasoning_summary_*`, `response.content_part.*`,
  `response.output_text.*`, `response.function_call_arguments.*`),
  `response.output_item.done`, then `response.completed` with the whole response;
- `anthropic`: `message_start`, `ping`, per block `content_block_start`, its deltas
  (`text_delta`, `thinking_delta` then `signature_delta`, `input_json_delta` in
  pieces) and `content_block_stop`, `message_delta` (stop reason, usage), `message_stop`;
- `gemini`: `data:` lines of `GenerateContentResponse`s, the text in pieces, each with
  `usageMetadata`, the last with `finishReason`.

The body goes out in HTTP/1.1 chunks, as the APIs send it. A `StreamFault` set on the
server interrupts every stream after some events: the connection drops (`drop`), the
API's error event arrives (`error`), or the stream ends cleanly without its closing
events (`end`).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from typing import Any, Literal

__all__ = ["StreamFault", "stream_events", "wants_stream", "write_stream"]

Event = tuple[str | None, Any]
"""One server-sent event: its `event:` name (`None`: none) and its data."""

_PIECE = 6
"""Characters per text or arguments delta: small, so every reply spans several events."""


@dataclass(frozen=True)
class StreamFault:
    """How a stream is interrupted after `after` events.

    Attributes:
        after: How many events are sent first.
        kind: `drop` closes the connection mid-body; `error` sends the API's error
            event and ends; `end` ends the body cleanly with the closing events missing.
    """

    after: int
    kind: Literal["drop", "error", "end"] = "drop"


def wants_stream(path: str, body: dict[str, Any]) -> bool:
    """Whether a request asks for a streamed answer."""
    return body.get("stream") is True or ":streamGenerateContent" in path


def _pieces(text: str) -> list[str]:
    return [text[i : i + _PIECE] for i in range(0, len(text), _PIECE)] or [""]


# --- OpenAI Chat Completions ------------------------------------------------------------------


def _chat_events(reply: dict[str, Any], body: dict[str, Any]) -> Iterator[Event]:
    options = body.get("stream_options") or {}
    usage = bool(options.get("include_usage"))
    head = {k: reply[k] for k in ("id", "created", "model")}
    head["object"] = "chat.completion.chunk"
    if usage:
        head["usage"] = None  # every chunk carries the key; only the last has the counts
    choice = reply["choices"][0]
    message = choice["message"]

    def chunk(delta: dict[str, Any], finish: str | None = None) -> Event:
        part = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
        return None, {**head, "choices": [part]}

    text = message.get("content")
    yield chunk({"role": "assistant", "content": "" if text else None, "refusal": None})
    if text:
        for piece in _pieces(text):
            yield chunk({"content": piece})
    for i, call in enumerate(message.get("tool_calls") or []):
        function = call["function"]
        start = {"name": function["name"], "arguments": ""}
        yield chunk(
            {"tool_calls": [{"index": i, "id": call["id"], "type": "function", "function": start}]}
        )
        for piece in _pieces(function["arguments"]):
            yield chunk({"tool_calls": [{"index": i, "function": {"arguments": piece}}]})
    yield chunk({}, choice["finish_reason"])
    if usage:
        yield None, {**head, "choices": [], "usage": reply["usage"]}
    yield None, "[DONE]"


# --- OpenAI Responses -------------------------------------------------------------------------


def _item_events(item: dict[str, Any], index: int) -> Iterator[dict[str, Any]]:
    """An output item's events, from `response.output_item.added` to `.done` (no numbers)."""
    at = {"item_id": item["id"], "output_index": index}
    kind = item["type"]
    if kind == "reasoning":
        yield {
            "type": "response.output_item.added",
            "output_index": index,
            "item": {**item, "summary": []},
        }
        for s, summary in enumerate(item.get("summary", [])):
            part = {**at, "summary_index": s}
            yield {
                "type": "response.reasoning_summary_part.added",
                **part,
                "part": {"type": "summary_text", "text": ""},
            }
            for piece in _pieces(summary["text"]):
                yield {"type": "response.reasoning_summary_text.delta", **part, "delta": piece}
            yield {"type": "response.reasoning_summary_text.done", **part, "text": summary["text"]}
            yield {"type": "response.reasoning_summary_part.done", **part, "part": summary}
    elif kind == "message":
        added = {**item, "status": "in_progress", "content": []}
        yield {"type": "response.output_item.added", "output_index": index, "item": added}
        for c, content in enumerate(item["content"]):
            part = {**at, "content_index": c}
            empty = {**content, "text": "", "annotations": []}
            yield {"type": "response.content_part.added", **part, "part": empty}
            for piece in _pieces(content["text"]):
                yield {"type": "response.output_text.delta", **part, "delta": piece, "logprobs": []}
            yield {
                "type": "response.output_text.done",
                **part,
                "text": content["text"],
                "logprobs": [],
            }
            yield {"type": "response.content_part.done", **part, "part": content}
    elif kind == "function_call":
        added = {**item, "arguments": "", "status": "in_progress"}
        yield {"type": "response.output_item.added", "output_index": index, "item": added}
        for piece in _pieces(item["arguments"]):
            yield {"type": "response.function_call_arguments.delta", **at, "delta": piece}
        done = {"arguments": item["arguments"]}
        yield {"type": "response.function_call_arguments.done", **at, **done}
    else:
        yield {"type": "response.output_item.added", "output_index": index, "item": item}
    yield {"type": "response.output_item.done", "output_index": index, "item": item}


def _responses_events(reply: dict[str, Any], body: dict[str, Any]) -> Iterator[Event]:
    pending = {**reply, "status": "in_progress", "output": [], "usage": None}
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": pending},
        {"type": "response.in_progress", "response": pending},
    ]
    for index, item in enumerate(reply["output"]):
        events += _item_events(item, index)
    events.append({"type": "response.completed", "response": reply})
    for number, event in enumerate(events):
        yield event["type"], {**event, "sequence_number": number}


# --- Anthropic Messages -----------------------------------------------------------------------


def _block_events(block: dict[str, Any], index: int) -> Iterator[Event]:
    kind = block["type"]
    start = {
        "text": {"type": "text", "text": ""},
        "thinking": {"type": "thinking", "thinking": "", "signature": ""},
    }.get(kind, {**block, "input": {}})
    deltas: list[dict[str, Any]] = []
    if kind == "text":
        deltas = [{"type": "text_delta", "text": p} for p in _pieces(block["text"])]
    elif kind == "thinking":
        deltas = [{"type": "thinking_delta", "thinking": p} for p in _pieces(block["thinking"])]
        deltas.append({"type": "signature_delta", "signature": block["signature"]})
    elif kind == "tool_use":
        arguments = json.dumps(block["input"])
        deltas = [{"type": "input_json_delta", "partial_json": p} for p in _pieces(arguments)]
    yield (
        "content_block_start",
        {"type": "content_block_start", "index": index, "content_block": start},
    )
    for delta in deltas:
        yield "content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}
    yield "content_block_stop", {"type": "content_block_stop", "index": index}


_DELTA_USAGE = (
    "input_tokens",
    "cache_creation_input_tokens",
    "cache_read_input_tokens",
    "output_tokens",
    "server_tool_use",
)


def _anthropic_events(reply: dict[str, Any], body: dict[str, Any]) -> Iterator[Event]:
    usage = reply["usage"]
    start = {**reply, "content": [], "stop_reason": None, "stop_sequence": None}
    start["usage"] = {**usage, "output_tokens": 1}
    yield "message_start", {"type": "message_start", "message": start}
    yield "ping", {"type": "ping"}
    for index, block in enumerate(reply["content"]):
        yield from _block_events(block, index)
    delta = {"stop_reason": reply["stop_reason"], "stop_sequence": reply["stop_sequence"]}
    # The final counts, in the fields a `message_delta`'s usage has (the message's own
    # usage also says how the cache was written and the service tier; this one does not).
    final = {key: usage[key] for key in _DELTA_USAGE if key in usage}
    yield "message_delta", {"type": "message_delta", "delta": delta, "usage": final}
    yield "message_stop", {"type": "message_stop"}


# --- Gemini -----------------------------------------------------------------------------------


def _gemini_events(reply: dict[str, Any], body: dict[str, Any]) -> Iterator[Event]:
    candidate = reply["candidates"][0]
    usage = reply["usageMetadata"]
    head = {k: v for k, v in reply.items() if k not in ("candidates", "usageMetadata")}
    first = {
        "promptTokenCount": usage["promptTokenCount"],
        "totalTokenCount": usage["promptTokenCount"],
    }
    parts: list[dict[str, Any]] = []
    for part in candidate["content"]["parts"]:
        if "text" in part:
            parts += [{**part, "text": p} for p in _pieces(part["text"])]
        else:
            parts.append(part)
    parts = parts or [{"text": ""}]
    for i, part in enumerate(parts):
        last = i == len(parts) - 1
        chunk = {"content": {"role": "model", "parts": [part]}, "index": 0}
        if last:
            chunk = {**candidate, "content": chunk["content"]}
        yield None, {"candidates": [chunk], "usageMetadata": usage if last else first, **head}


_EVENTS = {
    "openai": _chat_events,
    "responses": _responses_events,
    "anthropic": _anthropic_events,
    "gemini": _gemini_events,
}


def stream_events(wire: str, reply: dict[str, Any], body: dict[str, Any]) -> list[Event]:
    """The events that stream `reply`, the whole answer to `body`, in `wire`'s format."""
    return list(_EVENTS[wire](reply, body))


def _error_event(wire: str, number: int) -> Event:
    message = "The server had an error while processing your request."
    if wire == "anthropic":
        return "error", {
            "type": "error",
            "error": {"type": "overloaded_error", "message": "Overloaded"},
        }
    if wire == "responses":
        error = {"type": "error", "code": "server_error", "message": message, "param": None}
        return "error", {**error, "sequence_number": number}
    if wire == "gemini":
        return None, {"error": {"code": 500, "message": message, "status": "INTERNAL"}}
    return None, {
        "error": {"message": message, "type": "server_error", "param": None, "code": None}
    }


def _encode(event: Event) -> bytes:
    name, data = event
    text = data if isinstance(data, str) else json.dumps(data)
    head = f"event: {name}\n" if name is not None else ""
    return f"{head}data: {text}\n\n".encode()


def write_stream(
    handler: BaseHTTPRequestHandler,
    wire: str,
    events: list[Event],
    fault: StreamFault | None = None,
) -> None:
    """Send `events` as a chunked `text/event-stream` answer, interrupted as `fault` says.

    The connection stays open for the next request, as the providers' does, unless the
    fault drops it.
    """
    handler.send_response(200)
    handler.send_header("Content-Type", "text/event-stream")
    handler.send_header("Transfer-Encoding", "chunked")
    if fault is not None and fault.kind == "drop":
        handler.send_header("Connection", "close")
        handler.close_connection = True
    handler.end_headers()
    sent = events if fault is None else events[: fault.after]
    if fault is not None and fault.kind == "error":
        sent = [*sent, _error_event(wire, len(sent))]
    for event in sent:
        data = _encode(event)
        handler.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        handler.wfile.flush()
    if fault is None or fault.kind != "drop":
        handler.wfile.write(b"0\r\n\r\n")  # a dropped connection never sends the last chunk
    handler.wfile.flush()
