"""OpenAI Chat Completions: neutral turns to `messages`, and their token count.

Rules enforced here: system content first, as `system` messages; an assistant message's
`tool_calls` are followed at once by one `tool` message per call, in call order;
thinking is not sent (Chat Completions has no field for it); ids fit OpenAI's 40
characters.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import chain
from typing import Any, Final

from context_graph.formats.openai_chat.wire import WIRE
from context_graph.graph.content import ContentPart, DocumentPart, ImagePart, TextPart
from context_graph.graph.node_tokens import DOCUMENT_TOKENS, IMAGE_TOKENS, NodeTokenCache
from context_graph.render.provider import LEADING_USER_TEXT, AssemblyStats, Message
from context_graph.render.tools import ToolSpec
from context_graph.render.tools import count_tools as count_tool_field
from context_graph.render.turns import Turn, UnitTurns, arguments_text, call_id_for

__all__ = [
    "OpenAIChatRenderer",
    "assemble",
    "count_messages",
    "count_payload",
    "count_tools",
    "system_messages",
    "tools_field",
    "unit_messages",
]

_OVERHEAD = WIRE.overhead


def system_messages(parts: Sequence[ContentPart]) -> list[Message]:
    """One `system` message per system text part."""
    return [{"role": "system", "content": p.text} for p in parts if isinstance(p, TextPart)]


def unit_messages(unit: UnitTurns) -> list[Message]:
    """The messages of one unit, standing alone."""
    out: list[Message] = []
    for turn in unit.turns:
        if turn.role == "assistant":
            message = _assistant(turn)
            if message is not None:
                out.append(message)
            continue
        for result in turn.results:
            out.append(
                {
                    "role": "tool",
                    "tool_call_id": call_id_for(result.call, "openai"),
                    "content": _text_content(result.parts),
                }
            )
        if turn.parts:
            out.append({"role": "user", "content": _user_content(turn.parts)})
    return out


def assemble(
    system: list[Message], units: Sequence[list[Message]], stats: AssemblyStats | None = None
) -> dict[str, Any]:
    """The request body: system messages first, then every unit's messages in order.

    A history with nothing to send gets the minimal user turn, because an empty
    `messages` list is rejected.
    """
    messages = [*system, *chain.from_iterable(units)]
    if not messages:
        messages.append({"role": "user", "content": LEADING_USER_TEXT})
        if stats is not None:
            stats.lead = True
    return {"messages": messages}


def _assistant(turn: Turn) -> Message | None:
    texts = [p.text for p in turn.parts if isinstance(p, TextPart)]
    if not texts and not turn.calls:
        return None
    message: Message = {"role": "assistant", "content": "\n".join(texts) if texts else None}
    if turn.calls:
        message["tool_calls"] = [
            {
                "id": call_id_for(call, "openai"),
                "type": "function",
                "function": {"name": call.node.name, "arguments": arguments_text(call.node)},
            }
            for call in turn.calls
        ]
    return message


def _text_content(parts: Sequence[ContentPart]) -> str:
    """Tool messages take text only: media becomes a short marker."""
    pieces: list[str] = []
    for part in parts:
        if isinstance(part, TextPart):
            pieces.append(part.text)
        elif isinstance(part, ImagePart | DocumentPart):
            pieces.append(f"[{part.type} omitted: tool messages carry text only]")
    return "\n".join(pieces)


def _user_content(parts: Sequence[ContentPart]) -> str | list[dict[str, Any]]:
    if len(parts) == 1 and isinstance(parts[0], TextPart):
        return parts[0].text
    blocks: list[dict[str, Any]] = []
    for part in parts:
        if isinstance(part, TextPart):
            blocks.append({"type": "text", "text": part.text})
        elif isinstance(part, ImagePart):
            url = part.url or f"data:{part.media_type or 'image/png'};base64,{part.data or ''}"
            blocks.append({"type": "image_url", "image_url": {"url": url}})
        elif isinstance(part, DocumentPart):
            blocks.append(_document(part))
    if not blocks:
        return ""
    return blocks


def _document(part: DocumentPart) -> dict[str, Any]:
    if part.media_type == "text/plain" and part.data is not None:
        return {"type": "text", "text": part.data}
    if part.data is not None:
        media = part.media_type or "application/pdf"
        file: dict[str, Any] = {"file_data": f"data:{media};base64,{part.data}"}
        if part.title:
            file["filename"] = part.title
        return {"type": "file", "file": file}
    return {"type": "text", "text": f"[document at {part.url}]"}


def tools_field(specs: Sequence[ToolSpec]) -> list[dict[str, Any]]:
    """The `tools` field: one `{"type": "function", "function": {...}}` per spec."""
    out: list[dict[str, Any]] = []
    for spec in specs:
        function: dict[str, Any] = {"name": spec.name}
        if spec.description:
            function["description"] = spec.description
        function["parameters"] = dict(spec.parameters)
        if spec.strict is not None:
            function["strict"] = spec.strict
        out.append({"type": "function", "function": function})
    return out


def count_tools(field_value: Any, cache: NodeTokenCache) -> int:
    """Tokens of a rendered `tools` field, with the format's tool overheads."""
    return count_tool_field(field_value, _OVERHEAD, cache)


# --- counting ---------------------------------------------------------------------------


def count_payload(payload: dict[str, Any], cache: NodeTokenCache) -> int:
    """Tokens of a request body: every message plus the reply priming."""
    tools = count_tools(payload.get("tools"), cache)
    return tools + _OVERHEAD.per_request + count_messages(payload.get("messages", ()), cache)


def count_messages(messages: Sequence[Message], cache: NodeTokenCache) -> int:
    """Tokens of messages, each with its overhead."""
    total = 0
    for message in messages:
        total += _OVERHEAD.per_message + _content_tokens(message.get("content"), cache)
        if message.get("role") == "tool":
            total += _OVERHEAD.per_tool_result
        for call in message.get("tool_calls") or ():
            function = call["function"]
            total += _OVERHEAD.per_tool_call + cache.count_text(function["name"])
            total += cache.count_text(function["arguments"])
    return total


def _content_tokens(content: Any, cache: NodeTokenCache) -> int:
    if content is None:
        return 0
    if isinstance(content, str):
        return cache.count_text(content)
    total = 0
    for block in content:
        kind = block.get("type")
        if kind == "text":
            total += cache.count_text(block["text"])
        elif kind == "image_url":
            total += IMAGE_TOKENS
        else:
            total += DOCUMENT_TOKENS
    return total


# --- as a provider renderer ---------------------------------------------------------------


class OpenAIChatRenderer:
    """OpenAI Chat Completions as a `ProviderRenderer`: the functions of this module."""

    format: Final = "openai"
    overhead: Final = _OVERHEAD
    #: None: OpenAI caches prompt prefixes without marks.
    cache_marking: Final = None
    system = staticmethod(system_messages)
    unit_messages = staticmethod(unit_messages)
    assemble = staticmethod(assemble)
    count_messages = staticmethod(count_messages)
    count_payload = staticmethod(count_payload)
    render_tools = staticmethod(tools_field)
    count_tools = staticmethod(count_tools)
