"""A rendered Gemini `contents` body read back as Chat Completions messages.

Thought parts are kept beside each model turn (`REASONING_KEY`) with their signatures.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from context_graph.formats.chat_items import (
    Ids,
    Item,
    assistant,
    content,
    tool_call,
    user_content,
)

__all__ = ["chat_messages", "system_body"]


def chat_messages(payload: Mapping[str, Any], original_id: Ids) -> list[Item]:
    """The body's `systemInstruction` and `contents` as chat messages."""
    items: list[Item] = []
    system = payload.get("systemInstruction")
    if system:
        said = [str(p.get("text", "")) for p in system["parts"]]
        items.append({"role": "system", "content": content(said)})
    for turn in payload["contents"]:
        parts = turn["parts"]
        if turn["role"] == "model":
            items.append(_model_turn(parts, original_id))
            continue
        for part in parts:
            if "functionResponse" in part:
                answer = part["functionResponse"]
                response = answer.get("response") or {}
                text = response.get("output", response.get("error", ""))
                call_id = original_id(answer["id"])
                items.append({"role": "tool", "tool_call_id": call_id, "content": str(text)})
        blocks = [{"type": "text", "text": p["text"]} for p in parts if "text" in p]
        if blocks:
            items.append({"role": "user", "content": user_content(blocks)})
    return items


def _model_turn(parts: Sequence[Mapping[str, Any]], original_id: Ids) -> Item:
    reasoning: list[Item] = []
    calls: list[Item] = []
    said: list[str] = []
    for part in parts:
        if part.get("thought"):
            reasoning.append(
                {
                    "type": "thinking",
                    "thinking": part.get("text", ""),
                    "signature": part.get("thoughtSignature"),
                    "provider": "gemini",
                }
            )
        elif "functionCall" in part:
            call = part["functionCall"]
            calls.append(tool_call(original_id(call["id"]), call["name"], call.get("args", {})))
        elif "text" in part:
            said.append(part["text"])
    return assistant(said, calls, reasoning)


def system_body(text: str) -> dict[str, Any]:
    """A request holding only the system prompt `text`, as `systemInstruction`."""
    return {"contents": [], "systemInstruction": {"parts": [{"text": text}]}}
