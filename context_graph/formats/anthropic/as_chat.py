"""A rendered Anthropic Messages body read back as Chat Completions messages.

Thinking and redacted thinking are kept beside each assistant message (`REASONING_KEY`);
a call id the renderer rewrote (one with a dot in it) is read back as the one recorded.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from context_graph.formats.chat_items import (
    Ids,
    Item,
    assistant,
    content,
    texts,
    tool_call,
    user_content,
)

__all__ = ["chat_messages", "system_body"]


def chat_messages(payload: Mapping[str, Any], original_id: Ids) -> list[Item]:
    """The body's `system` and `messages` as chat messages, tool results one per message."""
    items: list[Item] = []
    system = payload.get("system")
    if system:
        said = system if isinstance(system, str) else content(texts(system))
        items.append({"role": "system", "content": said})
    for message in payload["messages"]:
        blocks = message["content"]
        if isinstance(blocks, str):
            blocks = [{"type": "text", "text": blocks}]
        if message["role"] == "assistant":
            items.append(_assistant(blocks, original_id))
            continue
        for block in blocks:
            if block.get("type") == "tool_result":
                result = block.get("content", "")
                text = result if isinstance(result, str) else "".join(texts(result))
                call_id = original_id(block["tool_use_id"])
                items.append({"role": "tool", "tool_call_id": call_id, "content": text})
        rest = [b for b in blocks if b.get("type") != "tool_result"]
        if rest:
            items.append({"role": "user", "content": user_content(rest)})
    return items


def _assistant(blocks: Sequence[Mapping[str, Any]], original_id: Ids) -> Item:
    reasoning: list[Item] = []
    calls: list[Item] = []
    for block in blocks:
        kind = block.get("type")
        if kind == "thinking":
            reasoning.append(
                {
                    "type": "thinking",
                    "thinking": block["thinking"],
                    "signature": block["signature"],
                    "provider": "anthropic",
                }
            )
        elif kind == "redacted_thinking":
            reasoning.append({"type": "redacted_thinking", "data": block["data"]})
        elif kind == "tool_use":
            calls.append(tool_call(original_id(block["id"]), block["name"], block["input"]))
    return assistant(texts(blocks), calls, reasoning)


def system_body(text: str) -> dict[str, Any]:
    """A request holding only the system prompt `text`, as one text block of `system`."""
    return {"messages": [], "system": [{"type": "text", "text": text}]}
