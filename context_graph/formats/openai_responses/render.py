"""OpenAI Responses API: neutral turns to `instructions` + `input` items, and their count.

Rules enforced here: the system prompt goes to `instructions` (its texts joined by a
blank line); user content is a `message` item of `input_text` / `input_image` /
`input_file` parts, assistant text a `message` item of `output_text` parts; every
`function_call` is answered by one `function_call_output` with its `call_id` (a custom
tool call, `custom_tool_call`, by a `custom_tool_call_output`); a `ReasoningPart` goes
back as a `reasoning` item exactly as received, and only when an item of its own turn
follows it (the API refuses a reasoning item without the item it led to). A unit's
items stay together, so a reasoning item is kept or dropped with its turn. `call_id`s
fit the API's 64 characters.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from context_graph.formats.openai_responses.wire import WIRE
from context_graph.graph.content import (
    ContentPart,
    DocumentPart,
    ImagePart,
    ReasoningPart,
    TextPart,
)
from context_graph.graph.node_tokens import DOCUMENT_TOKENS, IMAGE_TOKENS, NodeTokenCache
from context_graph.render.provider import (
    EMPTY_USER_TEXT,
    LEADING_USER_TEXT,
    AssemblyStats,
)
from context_graph.render.tools import ToolSpec
from context_graph.render.tools import count_tools as count_tool_field
from context_graph.render.turns import Result, Turn, UnitTurns, call_id_for, is_custom_call

__all__ = [
    "OpenAIResponsesRenderer",
    "assemble",
    "count_messages",
    "count_payload",
    "count_tools",
    "instruction_parts",
    "tools_field",
    "unit_messages",
]

Item = dict[str, Any]
_OVERHEAD = WIRE.overhead
#: The keys of a `compaction` input item (the output item has `created_by` too).
_COMPACTION_KEYS = ("type", "id", "encrypted_content")
#: Items that answer a reasoning item: what the model produced after reasoning.
_AFTER_REASONING = frozenset({"message", "function_call", "custom_tool_call"})


def instruction_parts(parts: Sequence[ContentPart]) -> list[Item]:
    """The system prompt's texts, as `instructions` is made of (empty ones left out)."""
    return [
        {"type": "input_text", "text": p.text} for p in parts if isinstance(p, TextPart) and p.text
    ]


def unit_messages(unit: UnitTurns) -> list[Item]:
    """The input items of one unit, standing alone."""
    if unit.native is not None and unit.native.provider == "responses":
        # The API's own compaction item, as it gave it; `created_by` is an output field
        # the input item does not take.
        item = unit.native.item
        return [{k: v for k, v in item.items() if k in _COMPACTION_KEYS and v is not None}]
    out: list[Item] = []
    for turn in unit.turns:
        if turn.role == "assistant":
            out.extend(_assistant_items(turn))
            continue
        out.extend(_output_item(r) for r in turn.results)
        content = _user_content(turn.parts)
        if not content and not turn.results:
            # An empty user turn still happened: keep it (see the Anthropic twin).
            content = [_input_text(EMPTY_USER_TEXT)]
        if content:
            out.append({"type": "message", "role": "user", "content": content})
    return out


def _assistant_items(turn: Turn) -> list[Item]:
    """Reasoning and text in the order of the turn's content, then its calls."""
    items: list[Item] = []
    texts: list[Item] = []
    for part in turn.parts:
        if isinstance(part, TextPart) and part.text:
            texts.append({"type": "output_text", "text": part.text, "annotations": []})
        elif isinstance(part, ReasoningPart):
            reasoning = _reasoning_item(part)
            if reasoning is not None:
                _flush_text(items, texts)
                items.append(reasoning)
    _flush_text(items, texts)
    for call in turn.calls:
        call_id = call_id_for(call, "responses")
        if is_custom_call(call.node):
            items.append(
                {
                    "type": "custom_tool_call",
                    "call_id": call_id,
                    "name": call.node.name,
                    "input": call.node.arguments,
                }
            )
        else:
            items.append(
                {
                    "type": "function_call",
                    "call_id": call_id,
                    "name": call.node.name,
                    "arguments": call.node.arguments,
                }
            )
    return _without_trailing_reasoning(items)


def _flush_text(items: list[Item], texts: list[Item]) -> None:
    if texts:
        items.append({"type": "message", "role": "assistant", "content": list(texts)})
        texts.clear()


def _reasoning_item(part: ReasoningPart) -> Item | None:
    """The item as received; None when it holds nothing to send (no id, no payload)."""
    if part.id is None and part.encrypted_content is None:
        return None
    item: Item = {"type": "reasoning"}
    if part.id is not None:
        item["id"] = part.id
    item["summary"] = [{"type": "summary_text", "text": text} for text in part.summary]
    if part.encrypted_content is not None:
        item["encrypted_content"] = part.encrypted_content
    return item


def _without_trailing_reasoning(items: list[Item]) -> list[Item]:
    """Reasoning at the end of a turn led to nothing that is sent: the API refuses it."""
    end = len(items)
    while end and items[end - 1]["type"] == "reasoning":
        end -= 1
    return items if end == len(items) else items[:end]


def _output_item(result: Result) -> Item:
    kind = "custom_tool_call_output" if is_custom_call(result.call.node) else "function_call_output"
    return {
        "type": kind,
        "call_id": call_id_for(result.call, "responses"),
        "output": _output_text(result.parts),
    }


def _output_text(parts: Sequence[ContentPart]) -> str:
    """A call's output as text: media becomes a short marker, as in Chat Completions."""
    pieces: list[str] = []
    for part in parts:
        if isinstance(part, TextPart):
            pieces.append(part.text)
        elif isinstance(part, ImagePart | DocumentPart):
            pieces.append(f"[{part.type} omitted: tool outputs carry text only]")
    return "\n".join(pieces)


def _input_text(text: str) -> Item:
    return {"type": "input_text", "text": text}


def _user_content(parts: Sequence[ContentPart]) -> list[Item]:
    content: list[Item] = []
    for part in parts:
        if isinstance(part, TextPart):
            if part.text:
                content.append(_input_text(part.text))
        elif isinstance(part, ImagePart):
            url = part.url or f"data:{part.media_type or 'image/png'};base64,{part.data or ''}"
            content.append({"type": "input_image", "image_url": url, "detail": "auto"})
        elif isinstance(part, DocumentPart):
            content.append(_document(part))
    return content


def _document(part: DocumentPart) -> Item:
    if part.media_type == "text/plain" and part.data is not None:
        return _input_text(part.data)
    if part.data is not None:
        media = part.media_type or "application/pdf"
        return {
            "type": "input_file",
            "file_data": f"data:{media};base64,{part.data}",
            "filename": part.title or "document",
        }
    return {"type": "input_file", "file_url": part.url or ""}


def assemble(
    system: list[Item], units: Sequence[list[Item]], stats: AssemblyStats | None = None
) -> dict[str, Any]:
    """The request body: `instructions`, then every unit's items in order.

    Items are never merged (the API takes any order of roles), so a unit's items stay
    as they were rendered. A history with nothing to send gets the minimal user turn.
    """
    items: list[Item] = []
    for unit in units:
        items.extend(unit)
    if not items:
        items.append(
            {"type": "message", "role": "user", "content": [_input_text(LEADING_USER_TEXT)]}
        )
        if stats is not None:
            stats.lead = True
    body: dict[str, Any] = {}
    if system:
        body["instructions"] = "\n\n".join(part["text"] for part in system)
    body["input"] = items
    return body


def tools_field(specs: Sequence[ToolSpec]) -> list[dict[str, Any]]:
    """The `tools` field: one flat `{"type": "function", "name": ...}` per spec.

    The SDK types `strict` as required (a null is allowed): it is always sent.
    """
    out: list[dict[str, Any]] = []
    for spec in specs:
        tool: dict[str, Any] = {"type": "function", "name": spec.name}
        if spec.description:
            tool["description"] = spec.description
        tool["parameters"] = dict(spec.parameters)
        tool["strict"] = spec.strict
        out.append(tool)
    return out


def count_tools(field_value: Any, cache: NodeTokenCache) -> int:
    """Tokens of a rendered `tools` field, with the format's tool overheads."""
    return count_tool_field(field_value, _OVERHEAD, cache)


# --- counting -----------------------------------------------------------------------------


def count_payload(payload: dict[str, Any], cache: NodeTokenCache) -> int:
    """Tokens of a request body: the instructions, every item, and the reply priming."""
    instructions = payload.get("instructions")
    system = cache.count_text(instructions) if isinstance(instructions, str) else 0
    tools = count_tools(payload.get("tools"), cache)
    items = payload.get("input", ())
    if isinstance(items, str):  # the API's shorthand for one user message
        items = [{"role": "user", "content": items}]
    return tools + _OVERHEAD.per_request + system + count_messages(items, cache)


def count_messages(items: Sequence[Item], cache: NodeTokenCache) -> int:
    """Tokens of input items, each with its overhead."""
    return sum(_item_tokens(item, cache) for item in items)


def _item_tokens(item: Item, cache: NodeTokenCache) -> int:
    kind = item.get("type")
    if kind == "function_call":
        return (
            _OVERHEAD.per_tool_call
            + cache.count_text(item["name"])
            + cache.count_text(item["arguments"])
        )
    if kind == "custom_tool_call":
        return (
            _OVERHEAD.per_tool_call
            + cache.count_text(item["name"])
            + cache.count_text(item["input"])
        )
    if kind in ("function_call_output", "custom_tool_call_output"):
        return _OVERHEAD.per_message + _OVERHEAD.per_tool_result + cache.count_text(item["output"])
    if kind == "compaction":
        encrypted = item.get("encrypted_content")
        return _OVERHEAD.per_message + (
            cache.count_text(encrypted) if isinstance(encrypted, str) else 0
        )
    if kind == "reasoning":
        texts = [s["text"] for s in item.get("summary", ())]
        encrypted = item.get("encrypted_content")
        if isinstance(encrypted, str):
            texts.append(encrypted)
        return _OVERHEAD.per_message + sum(cache.count_text(t) for t in texts)
    content = item.get("content", ())
    if isinstance(content, str):  # a message's text shorthand
        return _OVERHEAD.per_message + cache.count_text(content)
    return _OVERHEAD.per_message + sum(_part_tokens(p, cache) for p in content)


def _part_tokens(part: Item, cache: NodeTokenCache) -> int:
    kind = part.get("type")
    if kind in ("input_text", "output_text"):
        return cache.count_text(part["text"])
    if kind == "input_image":
        return IMAGE_TOKENS
    return DOCUMENT_TOKENS


# --- as a provider renderer ---------------------------------------------------------------


class OpenAIResponsesRenderer:
    """The OpenAI Responses API as a `ProviderRenderer`: the functions of this module."""

    format: Final = "responses"
    overhead: Final = _OVERHEAD
    #: None: OpenAI caches prompt prefixes without marks.
    cache_marking: Final = None
    system = staticmethod(instruction_parts)
    unit_messages = staticmethod(unit_messages)
    assemble = staticmethod(assemble)
    count_messages = staticmethod(count_messages)
    count_payload = staticmethod(count_payload)
    render_tools = staticmethod(tools_field)
    count_tools = staticmethod(count_tools)
