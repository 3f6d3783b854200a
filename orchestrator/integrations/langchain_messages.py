"""LangChain messages to engine events, and a rendered request back to messages.

The request comes back as Chat Completions messages with each assistant message's
reasoning beside them (`orchestrator.integrations.rendered.chat_items`, from any format).
Both directions key on what LangChain keeps stable: a message's `id` (LangGraph's
`add_messages` gives every message one) and a tool message's `tool_call_id`. Going back,
a rendered message that says what its original said is the original object itself, so
its id, `additional_kwargs`, `response_metadata`, usage and reasoning blocks reach the
model untouched; only what the engine changed (a masked or truncated output, a summary,
the marker where units were left out) is a new message. An AI message is its original
only when the render kept its reasoning as it was (an Anthropic render leaves unsigned
or Gemini-signed thinking out); otherwise it is a copy without the reasoning blocks the
render left out, and a message the engine rewrote is new, with the reasoning the render
sent as content blocks the provider's package sends back (Anthropic `thinking` and
`redacted_thinking`, Responses `reasoning`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

from context_graph.errors import IngestError, SourceLocation
from context_graph.formats.wires import GEMINI_FORMAT
from orchestrator.integrations.extras import missing_extra
from orchestrator.integrations.rendered import REASONING_KEY, reasoning_key

try:
    from langchain_core.messages import (
        AIMessage,
        AnyMessage,
        BaseMessage,
        HumanMessage,
        SystemMessage,
        ToolMessage,
    )
except ImportError as exc:  # the extra is not installed
    raise missing_extra(__name__, "LangChain", "langchain", "langchain langgraph") from exc

__all__ = [
    "HASH_KEY",
    "ID_KEY",
    "fingerprint",
    "from_payload",
    "message_key",
    "text_of",
    "to_events",
]

#: The `meta` key of the node an ingested message became, holding its key (`message_key`).
ID_KEY = "langchain_id"
#: The `meta` key holding the message's `fingerprint`, to notice an edit upstream.
HASH_KEY = "langchain_hash"

# Blocks an AI message may carry besides its text and reasoning: the provider's own copy
# of a tool call (already in `tool_calls`) and its server-side tool traffic.
_AI_SKIPPED = frozenset({"tool_use", "tool_call", "server_tool_use", "server_tool_call"})


def fingerprint(message: BaseMessage) -> str:
    """A digest of what the model is shown of `message` (edits upstream change it)."""
    shown: dict[str, Any] = {"type": message.type, "content": message.content}
    if isinstance(message, AIMessage):
        shown["tool_calls"] = [[c.get("id"), c["name"], c["args"]] for c in message.tool_calls]
    if isinstance(message, ToolMessage):
        shown["tool_call_id"] = message.tool_call_id
    text = json.dumps(shown, sort_keys=True, default=str, ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def message_key(message: BaseMessage) -> str:
    """The message's id, or its fingerprint when it has none."""
    return message.id if message.id else f"sha:{fingerprint(message)}"


def text_of(content: str | list[str | dict[str, Any]]) -> str:
    """The text blocks of a LangChain (or OpenAI) content, joined."""
    if isinstance(content, str):
        return content
    parts = [
        block if isinstance(block, str) else str(block.get("text", ""))
        for block in content
        if isinstance(block, str) or block.get("type") == "text"
    ]
    return "".join(parts)


def to_events(messages: Sequence[BaseMessage], start: int = 0) -> list[dict[str, Any]]:
    """The engine events of `messages` (their index in the state counts from `start`).

    Raises:
        IngestError: a message of a kind or with a content block the engine cannot read,
            naming its index in the state.
    """
    events = []
    for offset, message in enumerate(messages):
        index = start + offset
        meta = {ID_KEY: message_key(message), HASH_KEY: fingerprint(message)}
        events.append(_event(message, index) | {"meta": meta})
    return events


def _event(message: BaseMessage, index: int) -> dict[str, Any]:
    if isinstance(message, AIMessage):
        calls = [
            {
                "id": call.get("id") or f"call_{index}_{k}",
                "name": call["name"],
                "arguments": call["args"],
            }
            for k, call in enumerate(message.tool_calls)
        ]
        content = _parts(message.content, index, skip=_AI_SKIPPED)
        return {"type": "assistant", "content": content, "tool_calls": calls}
    if isinstance(message, ToolMessage):
        return {
            "type": "tool_result",
            "call_id": message.tool_call_id,
            "content": _parts(message.content, index),
            "name": message.name,
            "is_error": message.status == "error",
        }
    if isinstance(message, HumanMessage):
        return {"type": "user", "content": _parts(message.content, index)}
    if isinstance(message, SystemMessage):
        return {"type": "system", "content": _parts(message.content, index)}
    msg = (
        f"a `{type(message).__name__}` (type {message.type!r}) has no place in a model "
        "request; only human, AI, tool and system messages are read"
    )
    raise IngestError(msg, SourceLocation(index=index))


def _parts(
    content: str | list[str | dict[str, Any]], index: int, *, skip: frozenset[str] = frozenset()
) -> list[dict[str, Any]]:
    """Content parts of the engine from a LangChain content (a string or blocks)."""
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    parts: list[dict[str, Any]] = []
    for block in content:
        if isinstance(block, str):
            parts.append({"type": "text", "text": block})
            continue
        kind = block.get("type")
        if kind in skip:
            continue
        part = _part(block)
        if part is None:
            msg = (
                f"content block of type {kind!r} is not read by the engine "
                "(text, image, reasoning and thinking blocks are)"
            )
            raise IngestError(msg, SourceLocation(index=index))
        parts.append(part)
    return parts


def _part(block: Mapping[str, Any]) -> dict[str, Any] | None:
    kind = block.get("type")
    if kind == "text":
        return {"type": "text", "text": str(block.get("text", ""))}
    if kind == "thinking":
        signature = block.get("signature")
        return {
            "type": "thinking",
            "thinking": str(block.get("thinking", "")),
            "signature": signature,
        }
    if kind == "redacted_thinking":
        return {"type": "redacted_thinking", "data": str(block.get("data", ""))}
    if kind == "reasoning":
        summary = block.get("summary")
        texts = [str(s.get("text", "")) for s in summary] if isinstance(summary, list) else []
        if not texts and block.get("reasoning"):
            texts = [str(block["reasoning"])]
        part: dict[str, Any] = {"type": "reasoning", "id": block.get("id"), "summary": texts}
        if block.get("encrypted_content"):  # sent back to the Responses API with the item
            part["encrypted_content"] = str(block["encrypted_content"])
        return part
    if kind == "image_url":
        url = block.get("image_url")
        return {"type": "image", "url": url.get("url") if isinstance(url, Mapping) else url}
    if kind == "image":
        if block.get("url"):
            return {"type": "image", "url": block["url"]}
        data = block.get("base64") or block.get("data")
        return {"type": "image", "data": data, "media_type": block.get("mime_type")}
    return None


def from_payload(
    payload: Sequence[Mapping[str, Any]], originals: Sequence[BaseMessage]
) -> list[AnyMessage]:
    """The LangChain messages of a rendered request, as Chat Completions messages.

    An assistant message may carry its reasoning parts under `REASONING_KEY` (a render
    in a format that has them); without the key, reasoning is not compared.
    A rendered message that says what an original said is that original; a tool output
    the engine shortened is a copy of its `ToolMessage` with the new content.
    """
    tools = {m.tool_call_id: m for m in originals if isinstance(m, ToolMessage)}
    calls = {
        call_id: m
        for m in originals
        if isinstance(m, AIMessage)
        for call in m.tool_calls
        if (call_id := call.get("id"))
    }
    said: dict[tuple[str, str], BaseMessage] = {
        (m.type, text_of(m.content)): m for m in originals if not isinstance(m, ToolMessage)
    }
    return [_message(item, tools, calls, said) for item in payload]


def _message(
    item: Mapping[str, Any],
    tools: Mapping[str, ToolMessage],
    calls: Mapping[str, AIMessage],
    said: Mapping[tuple[str, str], BaseMessage],
) -> AnyMessage:
    role, content = item["role"], item.get("content") or ""
    text = text_of(content)
    if role == "tool":
        original = tools.get(item["tool_call_id"])
        if original is None:  # the renderer's placeholder for a call that got no result
            return ToolMessage(content=text, tool_call_id=item["tool_call_id"])
        if text_of(original.content) == text:
            return original
        return original.model_copy(update={"content": text})
    if role == "assistant":
        wanted = item.get("tool_calls") or []
        reasoning = item.get(REASONING_KEY)
        found = calls.get(wanted[0]["id"]) if wanted else said.get(("ai", text))
        if isinstance(found, AIMessage) and text_of(found.content) == text:
            same_calls = [c["id"] for c in wanted] == [c.get("id") for c in found.tool_calls]
            if same_calls and (reasoning is None or _reasoning(found) == _keys(reasoning)):
                return found
            if same_calls and reasoning is not None:
                return _with_reasoning(found, _keys(reasoning))
        tool_calls = [
            {
                "id": c["id"],
                "name": c["function"]["name"],
                "args": json.loads(c["function"]["arguments"] or "{}"),
                "type": "tool_call",
            }
            for c in wanted
        ]
        return AIMessage(content=_ai_content(content, reasoning or ()), tool_calls=tool_calls)
    kind = "human" if role == "user" else "system"
    original_message = said.get((kind, text))
    if isinstance(original_message, HumanMessage | SystemMessage):
        return original_message
    if role == "user":
        return HumanMessage(content=content)
    return SystemMessage(content=content)


def _keys(parts: Sequence[Mapping[str, Any]]) -> list[tuple[str, ...]]:
    return [key for part in parts if (key := reasoning_key(part)) is not None]


def _reasoning(message: AIMessage) -> list[tuple[str, ...]]:
    """The reasoning of an AI message as the engine reads it (its keys, in order)."""
    return _keys(_parts(message.content, 0, skip=_AI_SKIPPED))


def _with_reasoning(message: AIMessage, kept: Sequence[tuple[str, ...]]) -> AIMessage:
    """A copy of `message` whose reasoning blocks are only those the render sent."""
    if isinstance(message.content, str):
        return message
    content: list[str | dict[str, Any]] = []
    for block in message.content:
        part = _part(block) if isinstance(block, dict) else None
        key = reasoning_key(part) if part is not None else None
        if key is None or key in kept:
            content.append(block)
    return message.model_copy(update={"content": content})


def _ai_content(
    content: str | list[dict[str, Any]], reasoning: Sequence[Mapping[str, Any]]
) -> str | list[str | dict[str, Any]]:
    """A new AI message's content: its text blocks, after the reasoning the render sent."""
    blocks: list[str | dict[str, Any]] = []
    for part in reasoning:
        kind = part["type"]
        if kind == "thinking" and part.get("provider") != GEMINI_FORMAT:
            blocks.append(
                {"type": "thinking", "thinking": part["thinking"], "signature": part["signature"]}
            )
        elif kind == "redacted_thinking":
            blocks.append({"type": "redacted_thinking", "data": part["data"]})
        elif kind == "reasoning":
            block = {
                "type": "reasoning",
                "id": part["id"],
                "summary": [{"type": "summary_text", "text": t} for t in part["summary"]],
            }
            if "encrypted_content" in part:
                block["encrypted_content"] = part["encrypted_content"]
            blocks.append(block)
    if isinstance(content, str):
        if not blocks:
            return content
        content = [{"type": "text", "text": content}] if content else []
    blocks.extend(
        {"type": "text", "text": str(block["text"])}
        for block in content
        if block.get("type") == "text"
    )
    return blocks
