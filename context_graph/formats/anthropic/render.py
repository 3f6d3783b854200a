"""Anthropic Messages: neutral turns to `system` + `messages`, and their token count.

Rules enforced here: system content goes to the top-level `system` field; roles
alternate and the first message is a user message (neighbours of one role are merged;
a session that opens with the assistant gets a minimal leading user turn); `tool_result`
blocks come first in the user message after their `tool_use`; thinking blocks go back
unchanged, first in their message, and only when they carry an Anthropic signature;
whitespace-only text blocks are dropped and a final assistant message loses trailing
whitespace (both are rejected by the API); ids match `^[a-zA-Z0-9_-]+$` and are unique.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Final

from context_graph.formats.anthropic.wire import WIRE
from context_graph.graph.content import (
    ContentPart,
    DocumentPart,
    ImagePart,
    RedactedThinkingPart,
    TextPart,
    ThinkingPart,
)
from context_graph.graph.node_tokens import DOCUMENT_TOKENS, IMAGE_TOKENS, NodeTokenCache
from context_graph.render.provider import (
    EMPTY_USER_TEXT,
    LEADING_USER_TEXT,
    AssemblyStats,
    Message,
)
from context_graph.render.tools import ToolSpec
from context_graph.render.tools import count_tools as count_tool_field
from context_graph.render.turns import Result, Turn, UnitTurns, arguments_object, call_id_for

__all__ = [
    "MAX_CACHE_BREAKPOINTS",
    "AnthropicCacheMarking",
    "AnthropicMessagesRenderer",
    "assemble",
    "count_messages",
    "count_payload",
    "count_tools",
    "system_blocks",
    "tools_field",
    "unit_messages",
]

Block = dict[str, Any]
_OVERHEAD = WIRE.overhead
_THINKING = ("thinking", "redacted_thinking")
_CACHE = {"type": "ephemeral"}


def system_blocks(parts: Sequence[ContentPart]) -> list[Block]:
    """The `system` field as text blocks (whitespace-only text dropped)."""
    return [
        {"type": "text", "text": p.text}
        for p in parts
        if isinstance(p, TextPart) and p.text.strip()
    ]


def unit_messages(unit: UnitTurns) -> list[Message]:
    """The messages of one unit, standing alone (not yet merged with neighbours)."""
    if unit.native is not None and unit.native.provider == "anthropic":
        # The API's own compaction block, in the assistant message it opened.
        return [{"role": "assistant", "content": [dict(unit.native.item)]}]
    out: list[Message] = []
    for turn in unit.turns:
        content = _assistant_blocks(turn) if turn.role == "assistant" else _user_blocks(turn)
        if content:
            out.append({"role": turn.role, "content": content})
    return out


def _assistant_blocks(turn: Turn) -> list[Block]:
    blocks = [b for b in (_part_block(p, assistant=True) for p in turn.parts) if b is not None]
    for call in turn.calls:
        arguments = arguments_object(call.node)
        blocks.append(
            {
                "type": "tool_use",
                "id": call_id_for(call, "anthropic"),
                "name": call.node.name,
                "input": arguments,
            }
        )
    return _thinking_first(blocks)


def _user_blocks(turn: Turn) -> list[Block]:
    blocks: list[Block] = [_result_block(r) for r in turn.results]
    blocks.extend(b for b in (_part_block(p, assistant=False) for p in turn.parts) if b is not None)
    if not blocks:
        # A user turn with nothing the API accepts (empty or whitespace text) still
        # happened: keep it, or a history ending with it would end with the assistant
        # and turn the request into a prefill.
        blocks.append({"type": "text", "text": EMPTY_USER_TEXT})
    return blocks


def _result_block(result: Result) -> Block:
    block: Block = {
        "type": "tool_result",
        "tool_use_id": call_id_for(result.call, "anthropic"),
    }
    content = [b for b in (_part_block(p, assistant=False) for p in result.parts) if b is not None]
    if content:
        block["content"] = content
    if result.is_error:
        block["is_error"] = True
    return block


def _part_block(part: ContentPart, *, assistant: bool) -> Block | None:
    if isinstance(part, TextPart):
        return {"type": "text", "text": part.text} if part.text.strip() else None
    if isinstance(part, ThinkingPart):
        # Only Anthropic-signed thinking can go back; a Gemini or unsigned one cannot.
        if not assistant or part.signature is None or part.provider not in (None, "anthropic"):
            return None
        return {"type": "thinking", "thinking": part.thinking, "signature": part.signature}
    if isinstance(part, RedactedThinkingPart):
        return {"type": "redacted_thinking", "data": part.data} if assistant else None
    if isinstance(part, ImagePart):
        return None if assistant else {"type": "image", "source": _source(part)}
    if isinstance(part, DocumentPart) and not assistant:
        block: Block = {"type": "document", "source": _document_source(part)}
        if part.title:
            block["title"] = part.title
        return block
    return None


def _source(part: ImagePart) -> dict[str, Any]:
    if part.data is not None:
        return {"type": "base64", "media_type": part.media_type or "image/png", "data": part.data}
    return {"type": "url", "url": part.url or ""}


def _document_source(part: DocumentPart) -> dict[str, Any]:
    if part.media_type == "text/plain" and part.data is not None:
        return {"type": "text", "media_type": "text/plain", "data": part.data}
    if part.data is not None:
        media = part.media_type or "application/pdf"
        return {"type": "base64", "media_type": media, "data": part.data}
    return {"type": "url", "url": part.url or ""}


def _thinking_first(blocks: list[Block]) -> list[Block]:
    """Thinking blocks lead their message, the rest keep their order.

    A compaction block that opens the message stays first, as the API returned it.
    """
    thinking = [b for b in blocks if b["type"] in _THINKING]
    if not thinking:
        return blocks
    lead = 0
    while lead < len(blocks) and blocks[lead]["type"] == "compaction":
        lead += 1
    rest = [b for b in blocks[lead:] if b["type"] not in _THINKING]
    return blocks[:lead] + thinking + rest


# --- assembling ---------------------------------------------------------------------------


def assemble(
    system: list[Block],
    units: Sequence[list[Message]],
    stats: AssemblyStats | None = None,
    *,
    breakpoints: Sequence[tuple[int, int]] = (),
    mark_system: bool = False,
) -> dict[str, Any]:
    """The request body: merged, alternating, opening with a user message.

    `breakpoints` are `(message, block)` positions in the merged list (negative counts
    from the end) whose block gets a `cache_control` mark (the nearest earlier
    non-thinking block when that one is thinking); `mark_system` marks the system field.
    At most four marks are placed in all, as the API allows. `stats`, when given,
    records what assembly changed, so a caller can count tokens without a recount.
    """
    stats = stats if stats is not None else AssemblyStats()
    messages: list[Message] = []
    for unit in units:
        for message in unit:
            stats.merges += _append_merged(messages, message)
    if messages and messages[-1]["role"] == "assistant":
        before = messages[-1]
        after = _trim_final_assistant(before)
        if after is not before:
            stats.stripped, stats.strip_result = before, after
            if after is None:
                messages.pop()
            else:
                messages[-1] = after
    if not messages or messages[0]["role"] != "user":
        lead = {"role": "user", "content": [{"type": "text", "text": LEADING_USER_TEXT}]}
        messages.insert(0, lead)
        stats.lead = True
    body: dict[str, Any] = {}
    if system:
        body["system"] = [dict(b) for b in system]
        if mark_system:
            body["system"][-1]["cache_control"] = dict(_CACHE)
    body["messages"] = messages
    room = MAX_CACHE_BREAKPOINTS - (1 if system and mark_system else 0)
    for position in breakpoints:
        if room > 0 and _mark_block(messages, position):
            room -= 1
    return body


#: Anthropic accepts at most this many `cache_control` marks in one request.
MAX_CACHE_BREAKPOINTS = 4


def _append_merged(messages: list[Message], message: Message) -> int:
    """Append, merging into a same-role neighbour; return 1 for a merge, else 0."""
    if messages and messages[-1]["role"] == message["role"]:
        last = messages[-1]
        merged = [*last["content"], *message["content"]]
        if message["role"] == "assistant":
            merged = _thinking_first(merged)
        messages[-1] = {"role": last["role"], "content": merged}
        return 1
    messages.append(message)
    return 0


def _trim_final_assistant(message: Message) -> Message | None:
    """The message as the API accepts it in last place, or `None` if nothing is left.

    A final assistant message may not end in whitespace or in thinking: trailing
    whitespace is cut and trailing thinking blocks (a turn cut off after its reasoning)
    are left out. An unchanged message is returned as the same object.
    """
    content = list(message["content"])
    while content:
        last = content[-1]
        if last["type"] in _THINKING:
            content.pop()
            continue
        if last["type"] == "text":
            text = last["text"].rstrip()
            if not text:
                content.pop()
                continue
            if text != last["text"]:
                content[-1] = {**last, "text": text}
        break
    if not content:
        return None
    if content == message["content"]:
        return message
    return {"role": "assistant", "content": content}


def _mark_block(messages: list[Message], position: tuple[int, int]) -> bool:
    """Mark one block with `cache_control`; False when there is nothing to mark."""
    if not messages:
        return False
    index = position[0] % len(messages)
    content = list(messages[index]["content"])
    if not content:
        return False
    start = position[1] % len(content)
    for i in range(start, -1, -1):
        if content[i]["type"] not in _THINKING and "cache_control" not in content[i]:
            content[i] = {**content[i], "cache_control": dict(_CACHE)}
            messages[index] = {**messages[index], "content": content}
            return True
    return False


def tools_field(specs: Sequence[ToolSpec]) -> list[dict[str, Any]]:
    """The `tools` field: one `{"name", "description", "input_schema"}` per spec."""
    out: list[dict[str, Any]] = []
    for spec in specs:
        tool: dict[str, Any] = {"name": spec.name}
        if spec.description:
            tool["description"] = spec.description
        tool["input_schema"] = {"type": "object", **spec.parameters}
        out.append(tool)
    return out


def count_tools(field_value: Any, cache: NodeTokenCache) -> int:
    """Tokens of a rendered `tools` field, with the format's tool overheads."""
    return count_tool_field(field_value, _OVERHEAD, cache)


# --- counting -----------------------------------------------------------------------------


def count_payload(payload: dict[str, Any], cache: NodeTokenCache) -> int:
    """Tokens of a request body: system, every message, and the reply priming."""
    system = payload.get("system") or ()
    if isinstance(system, str):
        system_tokens = cache.count_text(system)
    else:
        system_tokens = sum(cache.count_text(b.get("text", "")) for b in system)
    tools = count_tools(payload.get("tools"), cache)
    return tools + (
        _OVERHEAD.per_request + system_tokens + count_messages(payload.get("messages", ()), cache)
    )


def count_messages(messages: Sequence[Message], cache: NodeTokenCache) -> int:
    """Tokens of messages, each with its overhead."""
    total = 0
    for message in messages:
        total += _OVERHEAD.per_message
        content = message["content"]
        if isinstance(content, str):
            total += cache.count_text(content)
            continue
        for block in content:
            total += _block_tokens(block, cache)
    return total


def _block_tokens(block: Block, cache: NodeTokenCache) -> int:
    kind = block["type"]
    if kind == "text":
        return cache.count_text(block["text"])
    if kind == "thinking":
        return cache.count_text(block["thinking"])
    if kind == "redacted_thinking":
        return cache.count_text(block["data"])
    if kind == "compaction":
        # Sent back verbatim: its summary and opaque fields count by their size.
        texts = [block.get(key) for key in ("content", "encrypted_content")]
        changes = block.get("tool_changes")
        if changes:
            texts.append(json.dumps(changes, ensure_ascii=False))
        return sum(cache.count_text(t) for t in texts if isinstance(t, str))
    if kind == "tool_use":
        arguments = json.dumps(block["input"], ensure_ascii=False)
        return (
            _OVERHEAD.per_tool_call + cache.count_text(block["name"]) + cache.count_text(arguments)
        )
    if kind == "tool_result":
        inner = block.get("content") or ()
        if isinstance(inner, str):
            return _OVERHEAD.per_tool_result + cache.count_text(inner)
        return _OVERHEAD.per_tool_result + sum(_block_tokens(b, cache) for b in inner)
    if kind == "image":
        return IMAGE_TOKENS
    source = block.get("source") or {}
    if source.get("type") == "text":
        return cache.count_text(source.get("data", ""))
    return DOCUMENT_TOKENS


# --- as a provider renderer ---------------------------------------------------------------


class AnthropicCacheMarking:
    """`cache_control` marks on the system prompt and on chosen message blocks."""

    def assemble_marked(
        self,
        system: list[Message],
        units: Sequence[list[Message]],
        *,
        breakpoints: Sequence[tuple[int, int]],
        stats: AssemblyStats | None,
        mark_system: bool = True,
    ) -> dict[str, Any]:
        """The body of `assemble`, with `breakpoints` (and the system prompt) marked."""
        return assemble(
            system, units, breakpoints=breakpoints, mark_system=mark_system, stats=stats
        )

    def mark_tools(self, tools: list[Message]) -> list[Message]:
        """The tools with `cache_control` on the last one (the end of the tools prefix)."""
        if not tools:
            return tools
        return [*tools[:-1], {**tools[-1], "cache_control": dict(_CACHE)}]

    def last_block(
        self, system: list[Message], units: Sequence[list[Message]]
    ) -> tuple[int, int] | None:
        """The position of the last block of the merged messages of `units`."""
        messages = assemble(system, units)["messages"]
        if not messages:
            return None
        return len(messages) - 1, len(messages[-1]["content"]) - 1


class AnthropicMessagesRenderer:
    """Anthropic Messages as a `ProviderRenderer`: the functions of this module."""

    format: Final = "anthropic"
    overhead: Final = _OVERHEAD
    #: `cache_control` marks.
    cache_marking: Final = AnthropicCacheMarking()
    system = staticmethod(system_blocks)
    unit_messages = staticmethod(unit_messages)
    assemble = staticmethod(assemble)
    count_messages = staticmethod(count_messages)
    count_payload = staticmethod(count_payload)
    render_tools = staticmethod(tools_field)
    count_tools = staticmethod(count_tools)
