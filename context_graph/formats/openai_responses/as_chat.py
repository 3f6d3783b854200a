"""A rendered Responses body read back as Chat Completions messages.

The items the model made in one turn (reasoning, messages, calls) are gathered into one
assistant message; reasoning items are kept beside it (`REASONING_KEY`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from context_graph.formats.chat_items import (
    REASONING_KEY,
    Ids,
    Item,
    assistant,
    said,
    text_list,
    tool_call,
    user_content,
)

__all__ = ["chat_messages", "system_body"]


def chat_messages(payload: Mapping[str, Any], original_id: Ids) -> list[Item]:
    """The body's `instructions` and `input` as chat messages."""
    items: list[Item] = []
    if payload.get("instructions"):
        items.append({"role": "system", "content": payload["instructions"]})
    turn: Item | None = None  # the assistant message being gathered from its items
    for entry in payload["input"]:
        kind = entry.get("type", "message")
        role = entry.get("role")
        if kind in ("reasoning", "function_call", "custom_tool_call") or role == "assistant":
            if turn is None:
                turn = assistant((), [], [])
                items.append(turn)
            _add_to_turn(turn, entry, original_id)
            continue
        turn = None
        if kind in ("function_call_output", "custom_tool_call_output"):
            call_id = original_id(entry["call_id"])
            items.append({"role": "tool", "tool_call_id": call_id, "content": entry["output"]})
        elif kind == "message":
            texts = [{"type": "text", "text": p["text"]} for p in entry["content"] if "text" in p]
            items.append(
                {
                    "role": "system" if role in ("system", "developer") else "user",
                    "content": user_content(texts) if texts else "",
                }
            )
    return items


def _add_to_turn(turn: Item, entry: Mapping[str, Any], original_id: Ids) -> None:
    kind = entry.get("type", "message")
    if kind == "reasoning":
        summary = [str(s.get("text", "")) for s in entry.get("summary", ())]
        part = {"type": "reasoning", "id": entry.get("id"), "summary": summary}
        if "encrypted_content" in entry:
            part["encrypted_content"] = entry["encrypted_content"]
        turn[REASONING_KEY].append(part)
    elif kind == "message":
        texts = [str(p.get("text", "")) for p in entry["content"]]
        turn["content"] = said([*text_list(turn["content"]), *texts])
    else:
        arguments = entry.get("arguments", entry.get("input", ""))
        call = tool_call(original_id(entry["call_id"]), entry["name"], arguments)
        turn.setdefault("tool_calls", []).append(call)


def system_body(text: str) -> dict[str, Any]:
    """A request holding only the system prompt `text`, as `instructions`."""
    return {"input": [], "instructions": text}
