"""A rendered Chat Completions body read back as chat messages: it already is them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from context_graph.formats.chat_items import Ids, Item

__all__ = ["chat_messages", "system_body"]


def chat_messages(payload: Mapping[str, Any], original_id: Ids) -> list[Item]:
    """The body's `messages`, as rendered (chat keeps no reasoning to set beside them)."""
    del original_id  # chat's messages are handed on exactly as rendered
    return list(payload["messages"])


def system_body(text: str) -> dict[str, Any]:
    """A request holding only the system prompt `text`, as a system message."""
    return {"messages": [{"role": "system", "content": text}]}
