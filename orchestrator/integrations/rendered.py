"""A request rendered in any provider format, read back as chat messages for a framework.

The LangChain and pydantic-ai integrations render the history in the format of the model
the framework calls, so that it is fitted and counted as that provider counts it, and
then hand the framework its own message objects for what was kept. This module reads a
rendered body (`RenderResult.payload`) of any format into one shape the two converters
share, the Chat Completions message list they always read, plus what the chat format has
no place for: each assistant message's `reasoning` (Anthropic thinking and redacted
thinking, Gemini thought parts, Responses reasoning items, as engine content parts).

Reading the rendered body, rather than rendering a second time in the chat format, keeps
one fit: what the framework is given is exactly what was counted. A call id the renderer
rewrote for a format (an Anthropic id with a dot in it) is read back as the id the
framework recorded, so the converters find the original messages by it.

Text blocks stay blocks (a message with several has a list of text parts): a format that
merges neighbouring messages of a role (Anthropic and Gemini send the summary and the
user's new request as one user turn) keeps them apart only as blocks, and the system
prompt and the pinned notes are blocks of one `system` field. A tool result's blocks are
joined, as the converters join the original's to find it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from context_graph.graph.context_graph import ContextGraph
from context_graph.graph.node_tokens import NodeTokenCache
from context_graph.graph.nodes import ToolCallNode
from context_graph.render import RenderResult, count_payload
from context_graph.tokens.counting import ProviderFormat

__all__ = ["REASONING_KEY", "chat_items", "original_ids", "reasoning_key", "system_tokens"]

#: The key of an assistant item's reasoning parts (absent in the chat format, which has none).
REASONING_KEY = "reasoning"

Item = dict[str, Any]
Ids = Callable[[str], str]

# An empty request body of each format, beside which a system prompt is counted.
_EMPTY: dict[str, dict[str, Any]] = {
    "openai": {"messages": []},
    "anthropic": {"messages": []},
    "gemini": {"contents": []},
    "responses": {"input": []},
}


def system_tokens(text: str, format: ProviderFormat, cache: NodeTokenCache) -> int:
    """What a system prompt the framework sends beside the history adds to a request."""
    if not text:
        return 0
    body = dict(_EMPTY[format])
    if format == "openai":
        body["messages"] = [{"role": "system", "content": text}]
    elif format == "anthropic":
        body["system"] = [{"type": "text", "text": text}]
    elif format == "gemini":
        body["systemInstruction"] = {"parts": [{"text": text}]}
    else:
        body["instructions"] = text
    return count_payload(body, format, cache) - count_payload(_EMPTY[format], format, cache)


def reasoning_key(part: Mapping[str, Any]) -> tuple[str, ...] | None:
    """What identifies an engine reasoning part when a message is matched to its original."""
    kind = part.get("type")
    if kind == "thinking":
        return ("thinking", str(part.get("thinking", "")), str(part.get("signature")))
    if kind == "redacted_thinking":
        return ("redacted_thinking", str(part.get("data", "")))
    if kind == "reasoning":
        return ("reasoning", str(part.get("id")))
    return None


def original_ids(result: RenderResult, graph: ContextGraph) -> Ids:
    """The call id the framework recorded, of each id the render sent (most are the same)."""
    recorded: dict[str, str] = {}
    for sent, node_id in result.call_ids.items():
        node = graph.get(node_id)
        if isinstance(node, ToolCallNode) and node.tool_call_id != sent:
            recorded[sent] = node.tool_call_id
    return lambda sent: recorded.get(sent, sent)


def chat_items(result: RenderResult, original_id: Ids) -> list[Item]:
    """The rendered request as Chat Completions messages, reasoning kept beside them.

    Args:
        result: The render.
        original_id: The call id the framework recorded, of an id as rendered.
    """
    payload = result.payload
    if result.format == "openai":
        return list(payload["messages"])
    if result.format == "anthropic":
        return _from_anthropic(payload, original_id)
    if result.format == "gemini":
        return _from_gemini(payload, original_id)
    return _from_responses(payload, original_id)


def _call(call_id: str, name: str, arguments: Any) -> Item:
    text = arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": text}}


def _assistant(texts: Sequence[str], calls: list[Item], reasoning: list[Item]) -> Item:
    item: Item = {"role": "assistant", "content": _said(texts), REASONING_KEY: reasoning}
    if calls:
        item["tool_calls"] = calls
    return item


def _texts(blocks: Sequence[Mapping[str, Any]]) -> list[str]:
    return [str(b.get("text", "")) for b in blocks if b.get("type") == "text"]


def _said(texts: Sequence[str]) -> str | list[Item] | None:
    """An assistant message's content: its non-empty texts, `None` without any."""
    said = [text for text in texts if text]
    return _content(said) if said else None


def _content(texts: Sequence[str]) -> str | list[Item]:
    """One text as a string (as the chat format writes it), several as text blocks."""
    if len(texts) == 1:
        return texts[0]
    return [{"type": "text", "text": text} for text in texts]


# --- Anthropic Messages ---------------------------------------------------------------------


def _from_anthropic(payload: Mapping[str, Any], original_id: Ids) -> list[Item]:
    items: list[Item] = []
    system = payload.get("system")
    if system:
        content = system if isinstance(system, str) else _content(_texts(system))
        items.append({"role": "system", "content": content})
    for message in payload["messages"]:
        blocks = message["content"]
        if isinstance(blocks, str):
            blocks = [{"type": "text", "text": blocks}]
        if message["role"] == "assistant":
            items.append(_anthropic_assistant(blocks, original_id))
            continue
        for block in blocks:
            if block.get("type") == "tool_result":
                content = block.get("content", "")
                text = content if isinstance(content, str) else "".join(_texts(content))
                call_id = original_id(block["tool_use_id"])
                items.append({"role": "tool", "tool_call_id": call_id, "content": text})
        rest = [b for b in blocks if b.get("type") != "tool_result"]
        if rest:
            items.append({"role": "user", "content": _user_content(rest)})
    return items


def _anthropic_assistant(blocks: Sequence[Mapping[str, Any]], original_id: Ids) -> Item:
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
            calls.append(_call(original_id(block["id"]), block["name"], block["input"]))
    return _assistant(_texts(blocks), calls, reasoning)


def _user_content(blocks: Sequence[Mapping[str, Any]]) -> str | list[Item]:
    """Text alone as a string (as the chat format writes it), else the text blocks."""
    if all(b.get("type") == "text" for b in blocks) and len(blocks) == 1:
        return str(blocks[0]["text"])
    return [{"type": "text", "text": text} for text in _texts(blocks)]


# --- Gemini contents ------------------------------------------------------------------------


def _from_gemini(payload: Mapping[str, Any], original_id: Ids) -> list[Item]:
    items: list[Item] = []
    system = payload.get("systemInstruction")
    if system:
        said = [str(p.get("text", "")) for p in system["parts"]]
        items.append({"role": "system", "content": _content(said)})
    for content in payload["contents"]:
        parts = content["parts"]
        if content["role"] == "model":
            reasoning: list[Item] = []
            calls: list[Item] = []
            texts: list[str] = []
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
                    calls.append(_call(original_id(call["id"]), call["name"], call.get("args", {})))
                elif "text" in part:
                    texts.append(part["text"])
            items.append(_assistant(texts, calls, reasoning))
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
            items.append({"role": "user", "content": _user_content(blocks)})
    return items


# --- OpenAI Responses -----------------------------------------------------------------------


def _from_responses(payload: Mapping[str, Any], original_id: Ids) -> list[Item]:
    items: list[Item] = []
    if payload.get("instructions"):
        items.append({"role": "system", "content": payload["instructions"]})
    turn: Item | None = None  # the assistant message being gathered from its items
    for entry in payload["input"]:
        kind = entry.get("type", "message")
        role = entry.get("role")
        if kind in ("reasoning", "function_call", "custom_tool_call") or role == "assistant":
            if turn is None:
                turn = _assistant((), [], [])
                items.append(turn)
            _add_to_turn(turn, entry, original_id)
            continue
        turn = None
        if kind in ("function_call_output", "custom_tool_call_output"):
            call_id = original_id(entry["call_id"])
            items.append({"role": "tool", "tool_call_id": call_id, "content": entry["output"]})
        elif kind == "message":
            content = entry["content"]
            texts = [{"type": "text", "text": p["text"]} for p in content if "text" in p]
            items.append(
                {
                    "role": "system" if role in ("system", "developer") else "user",
                    "content": _user_content(texts) if texts else "",
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
        turn["content"] = _said([*_text_list(turn["content"]), *texts])
    else:
        arguments = entry.get("arguments", entry.get("input", ""))
        call = _call(original_id(entry["call_id"]), entry["name"], arguments)
        turn.setdefault("tool_calls", []).append(call)


def _text_list(content: str | list[Item] | None) -> list[str]:
    """The texts of a chat message's content, in order."""
    if content is None:
        return []
    if isinstance(content, str):
        return [content]
    return [str(block["text"]) for block in content]
