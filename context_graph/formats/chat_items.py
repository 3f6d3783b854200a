"""Chat Completions messages built from another format's rendered body: the shared pieces.

Each format's `as_chat` module reads its own rendered request back as the Chat
Completions message list the framework integrations convert (`Wire.as_chat`); these are
the pieces every such reader builds with. What the chat format has no place for, an
assistant message's reasoning, is kept beside it under `REASONING_KEY`. Nothing here
names a format.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeAlias

__all__ = [
    "REASONING_KEY",
    "ChatReader",
    "Ids",
    "Item",
    "assistant",
    "content",
    "said",
    "text_list",
    "texts",
    "tool_call",
    "user_content",
]

#: The key of an assistant item's reasoning parts (absent in the chat format, which has none).
REASONING_KEY = "reasoning"

Item: TypeAlias = dict[str, Any]
"""One Chat Completions message, as plain data."""
Ids: TypeAlias = Callable[[str], str]
"""The call id the framework recorded, of an id as rendered."""
ChatReader: TypeAlias = Callable[[Mapping[str, Any], Ids], list[Item]]
"""Reads a format's rendered body as Chat Completions messages, reasoning kept beside them."""


def tool_call(call_id: str, name: str, arguments: Any) -> Item:
    """A chat tool call; arguments that are not already a JSON string are written as one."""
    text = arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": text}}


def assistant(said_texts: Sequence[str], calls: list[Item], reasoning: list[Item]) -> Item:
    """An assistant message with its texts, its calls (if any) and its reasoning."""
    item: Item = {"role": "assistant", "content": said(said_texts), REASONING_KEY: reasoning}
    if calls:
        item["tool_calls"] = calls
    return item


def texts(blocks: Sequence[Mapping[str, Any]]) -> list[str]:
    """The texts of the `text` blocks among `blocks`, in order."""
    return [str(b.get("text", "")) for b in blocks if b.get("type") == "text"]


def said(parts: Sequence[str]) -> str | list[Item] | None:
    """An assistant message's content: its non-empty texts, `None` without any."""
    kept = [text for text in parts if text]
    return content(kept) if kept else None


def content(parts: Sequence[str]) -> str | list[Item]:
    """One text as a string (as the chat format writes it), several as text blocks."""
    if len(parts) == 1:
        return parts[0]
    return [{"type": "text", "text": text} for text in parts]


def user_content(blocks: Sequence[Mapping[str, Any]]) -> str | list[Item]:
    """Text alone as a string (as the chat format writes it), else the text blocks."""
    if all(b.get("type") == "text" for b in blocks) and len(blocks) == 1:
        return str(blocks[0]["text"])
    return [{"type": "text", "text": text} for text in texts(blocks)]


def text_list(message_content: str | list[Item] | None) -> list[str]:
    """The texts of a chat message's content, in order."""
    if message_content is None:
        return []
    if isinstance(message_content, str):
        return [message_content]
    return [str(block["text"]) for block in message_content]
