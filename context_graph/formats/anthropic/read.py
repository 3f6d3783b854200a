"""Anthropic Messages: a request body (`system` + `messages`) or a bare message list.

Blocks map to parts and events: `text`, `image`, `document`, `thinking` (its signature
kept byte for byte) and `redacted_thinking` become parts of a turn; `tool_use` becomes a
`ToolCall` whose arguments are the JSON text of its `input`; `tool_result` becomes a
`ToolResult` (string or block content, `is_error`). A user message that mixes results
with other blocks gives its `ToolResult` events first, then one `UserTurn` with the rest;
text blocks an agent's harness wrote (`context_graph.formats.harness`: Claude Code's
`<system-reminder>` and the like) are a `UserTurn` of their own, a notice.
The `compaction` blocks an assistant message opens with (the `compact_20260112`
context-management edit fired) each become a `Compaction` event carrying the block
verbatim, before the turn made of the rest (`context_graph.graph.native`).

Claude Code records hold Anthropic messages too; its importer converts them with
`assistant_content`, `user_content` and `tool_result_event`.
"""

from __future__ import annotations

from collections.abc import Container, Mapping, Sequence
from typing import Any, TypeAlias, TypeVar

from pydantic import JsonValue, ValidationError

from context_graph.errors import IngestError, SourceLocation
from context_graph.formats.harness import harness_runs
from context_graph.graph.content import ContentPart, TextPart
from context_graph.graph.events import (
    AgentEvent,
    AssistantTurn,
    Compaction,
    SystemPrompt,
    ToolCall,
    ToolResult,
    UserTurn,
)
from context_graph.importers._base import (
    ImportedSession,
    Names,
    RawInput,
    block_to_part,
    expect_list,
    expect_mapping,
    expect_str,
)
from context_graph.importers._native import native_compaction

__all__ = [
    "ROLES",
    "assistant_blocks",
    "assistant_content",
    "leading_compactions",
    "message_to_events",
    "messages_to_events",
    "sniff",
    "to_sessions",
    "tool_result_event",
    "user_content",
]

#: The roles of Anthropic messages; the system prompt is the top-level `system`.
ROLES: frozenset[str] = Names({"user", "assistant"})

LocatedBlock: TypeAlias = tuple[Mapping[str, Any], SourceLocation]
"""A content block with the place it was read from."""

_ASSISTANT_BLOCKS = Names({"text", "thinking", "redacted_thinking", "tool_use"})
_USER_BLOCKS = Names({"text", "image", "document", "tool_result"})
_RESULT_BLOCKS = Names({"text", "image", "document"})
# Block types that only Anthropic payloads have (OpenAI says `image_url`, not `image`).
_OWN_BLOCKS = Names(
    {"tool_use", "tool_result", "thinking", "redacted_thinking", "image", "document", "compaction"}
)
# Keys that mark a payload or a message as another format's.
_FOREIGN_KEYS = frozenset({"contents", "response", "history", "simulations", "trajectory_format"})
_FOREIGN_MESSAGE_KEYS = frozenset(
    {"tool_calls", "tool_call_id", "function_call", "parts", "tool_call_ids", "sessionId", "uuid"}
)


# --- detection ------------------------------------------------------------------------------


def sniff(raw: RawInput) -> bool:
    """Whether `raw` is an Anthropic request body, or a message list with Anthropic blocks.

    A list of plain-text user and assistant messages is left to the OpenAI importer: it
    reads the same, and only Anthropic blocks or a top-level `system` tell them apart.
    """
    data = raw.data
    if isinstance(data, Mapping):
        if not _FOREIGN_KEYS.isdisjoint(data.keys()):
            return False
        messages = data.get("messages")
        if isinstance(data.get("system"), str | list):
            return isinstance(messages, list) and all(_looks_like_message(m) for m in messages)
        return (
            isinstance(messages, list)
            and _looks_like_messages(messages)
            and _has_own_block(messages)
        )
    return isinstance(data, list) and _looks_like_messages(data) and _has_own_block(data)


def _looks_like_messages(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(_looks_like_message(m) for m in value)


def _looks_like_message(message: Any) -> bool:
    if not isinstance(message, Mapping) or message.get("role") not in ROLES:
        return False
    return _FOREIGN_MESSAGE_KEYS.isdisjoint(message.keys())


def _has_own_block(messages: list[Any]) -> bool:
    for message in messages:
        content = message.get("content")
        if isinstance(content, list) and any(
            isinstance(b, Mapping) and b.get("type") in _OWN_BLOCKS for b in content
        ):
            return True
    return False


# --- sessions -------------------------------------------------------------------------------


def to_sessions(raw: RawInput) -> list[ImportedSession]:
    """Convert a request body or a message list to one session.

    Raises:
        IngestError: the payload or a message is malformed (names the message and field).
    """
    data = raw.data
    meta: dict[str, JsonValue] = {"format": "anthropic"}
    events: list[AgentEvent] = []
    if isinstance(data, Mapping):
        messages = expect_list(data.get("messages"), raw.at(None, "messages"), "`messages`")
        if data.get("system") is not None:
            events.extend(_system(data["system"], raw))
        if isinstance(data.get("model"), str):
            meta["model"] = data["model"]
        base_path = "messages"
    else:
        messages = expect_list(data, raw.at(), "an Anthropic payload")
        base_path = ""
    events.extend(messages_to_events(messages, raw, base_path=base_path))
    return [ImportedSession(name="anthropic", events=events, meta=meta)]


def _system(value: Any, raw: RawInput) -> list[AgentEvent]:
    where = raw.at(None, "system")
    if isinstance(value, str):
        return [SystemPrompt(content=value, source=where)] if value else []
    parts: list[ContentPart] = []
    for i, item in enumerate(expect_list(value, where, "`system`")):
        at = raw.at(None, f"system[{i}]")
        block = expect_mapping(item, at, "system block")
        if block.get("type") != "text":
            msg = f"system block has type {block.get('type')!r}; only `text` blocks are allowed"
            raise IngestError(msg, at.with_path("type"))
        parts.append(TextPart(text=expect_str(block.get("text"), at, "system block `text`")))
    return [SystemPrompt(content=tuple(parts), source=where)] if parts else []


def messages_to_events(
    messages: Sequence[Any],
    raw: RawInput,
    *,
    base_path: str = "messages",
    known_calls: set[str] | None = None,
) -> list[AgentEvent]:
    """Convert a list of Anthropic messages to events.

    Args:
        messages: The messages, in order.
        raw: The input they were read from (for error places).
        base_path: The JSON path of the list inside the input; empty for a bare list.
        known_calls: Ids of tool calls made before these messages; calls made by the
            messages are added to it.

    Raises:
        IngestError: a message is malformed, or a `tool_result` names a call that no
            earlier `tool_use` made; names the message index and JSON path.
    """
    known = known_calls if known_calls is not None else set()
    events: list[AgentEvent] = []
    for index, message in enumerate(messages):
        where = raw.at(index, f"{base_path}[{index}]")
        events.extend(message_to_events(message, where, known))
    return events


def message_to_events(message: Any, where: SourceLocation, known: set[str]) -> list[AgentEvent]:
    """Convert one message at `where` to its events, adding its tool-call ids to `known`.

    Raises:
        IngestError: the message is malformed, or answers a call not in `known`.
    """
    body = expect_mapping(message, where, "message")
    role = body.get("role")
    if role not in ROLES:
        msg = (
            f"unknown role {role!r}; Anthropic messages are `user` or `assistant` "
            "(the system prompt goes in the top-level `system`)"
        )
        raise IngestError(msg, where.with_path("role"))
    if role == "assistant":
        compacted = leading_compactions(body.get("content"), where)
        if compacted is None:
            parts, calls = assistant_content(body.get("content"), where)
            compactions: list[AgentEvent] = []
        else:
            compactions, blocks = compacted
            if not blocks:  # the reply paused after compacting
                return compactions
            parts, calls = assistant_blocks(blocks)
        known.update(call.id for call in calls)
        turn = AssistantTurn(content=tuple(parts), tool_calls=tuple(calls), source=where)
        return [*compactions, turn]
    results, parts = user_content(body.get("content"), where)
    events: list[AgentEvent] = [tool_result_event(block, at, known) for block, at in results]
    # Text blocks the agent's harness wrote (Claude Code's reminders, in front of the
    # prompt or after a tool result) are notices, not the user's latest request.
    runs = harness_runs(parts) or ([] if results else [(False, ())])
    events.extend(UserTurn(content=run, notice=notice, source=where) for notice, run in runs)
    return events


# --- content --------------------------------------------------------------------------------


def assistant_content(
    content: Any, where: SourceLocation
) -> tuple[list[ContentPart], list[ToolCall]]:
    """Split an assistant message's `content` (at `where`) into parts and tool calls.

    Raises:
        IngestError: a block is malformed, not allowed in an assistant message, or a
            second `tool_use` with the same id.
    """
    if isinstance(content, str):
        return [TextPart(text=content)], []
    return assistant_blocks(_blocks(content, where))


def assistant_blocks(blocks: list[LocatedBlock]) -> tuple[list[ContentPart], list[ToolCall]]:
    """`assistant_content` of blocks already read, each with its place.

    Raises:
        IngestError: as `assistant_content`.
    """
    parts: list[ContentPart] = []
    calls: list[ToolCall] = []
    for block, at in blocks:
        kind = block.get("type")
        if kind == "tool_use":
            call = _tool_call(block, at)
            if any(c.id == call.id for c in calls):
                msg = f"tool_use id `{call.id}` appears twice in one message; ids must be unique"
                raise IngestError(msg, at.with_path("id"))
            calls.append(call)
        elif kind in _ASSISTANT_BLOCKS:
            parts.append(_part(block, at))
        else:
            raise _misplaced(kind, "an assistant message", _ASSISTANT_BLOCKS, at)
    return parts, calls


def leading_compactions(
    content: Any, where: SourceLocation
) -> tuple[list[AgentEvent], list[LocatedBlock]] | None:
    """The `compaction` blocks an assistant message opens with, as events, and the rest.

    None when the message has no `compaction` block (see `_compaction_events`).
    """
    if not isinstance(content, list) or not any(
        isinstance(b, Mapping) and b.get("type") == "compaction" for b in content
    ):
        return None
    events, rest = _compaction_events(_blocks(content, where))
    return list(events), rest


def user_content(
    content: Any, where: SourceLocation
) -> tuple[list[LocatedBlock], list[ContentPart]]:
    """Split a user message's `content` (at `where`) into `tool_result` blocks and parts.

    Returns:
        The `tool_result` blocks with their places, and the other blocks as parts.

    Raises:
        IngestError: a block is malformed, or not allowed in a user message.
    """
    if isinstance(content, str):
        return [], [TextPart(text=content)]
    results: list[LocatedBlock] = []
    parts: list[ContentPart] = []
    for block, at in _blocks(content, where):
        kind = block.get("type")
        if kind == "tool_result":
            results.append((block, at))
        elif kind in _USER_BLOCKS:
            parts.append(_part(block, at))
        else:
            raise _misplaced(kind, "a user message", _USER_BLOCKS, at)
    return results, parts


def tool_result_event(
    block: Mapping[str, Any],
    where: SourceLocation,
    known: Container[str],
    *,
    timestamp: str | None = None,
    meta: Mapping[str, JsonValue] | None = None,
) -> ToolResult:
    """Convert a `tool_result` block at `where` to a `ToolResult` (its `source` is `where`).

    Args:
        block: The `tool_result` block.
        where: Its place in the input.
        known: The ids of the tool calls made so far.
        timestamp: When the result arrived, if the source says.
        meta: Metadata for the event.

    Raises:
        IngestError: the block is malformed, or its `tool_use_id` is not in `known`.
    """
    call_id = expect_str(
        block.get("tool_use_id"), where.with_path("tool_use_id"), "tool_result `tool_use_id`"
    )
    if call_id not in known:
        msg = f"tool result `{call_id}` has no matching tool_use earlier in the history"
        raise IngestError(msg, where.with_path("tool_use_id"))
    is_error = block.get("is_error")
    if is_error is not None and not isinstance(is_error, bool):
        msg = f"tool_result `is_error` must be a boolean, got {is_error!r}"
        raise IngestError(msg, where.with_path("is_error"))
    return ToolResult(
        call_id=call_id,
        content=tuple(_result_parts(block.get("content"), where)),
        is_error=bool(is_error),
        timestamp=timestamp,
        meta=dict(meta or {}),
        source=where,
    )


def _result_parts(content: Any, where: SourceLocation) -> list[ContentPart]:
    if content is None:
        return []
    if isinstance(content, str):
        return [TextPart(text=content)]
    parts: list[ContentPart] = []
    items = expect_list(content, where.with_path("content"), "tool_result `content`")
    for i, item in enumerate(items):
        at = where.with_path(f"content[{i}]")
        block = expect_mapping(item, at, "tool_result content block")
        kind = block.get("type")
        if kind not in _RESULT_BLOCKS:
            raise _misplaced(kind, "a tool_result", _RESULT_BLOCKS, at)
        parts.append(_part(block, at))
    return parts


def _blocks(content: Any, where: SourceLocation) -> list[LocatedBlock]:
    if content is None:
        raise IngestError("message has no `content`", where.with_path("content"))
    at = where.with_path("content")
    located: list[LocatedBlock] = []
    for i, item in enumerate(expect_list(content, at, "`content`")):
        block_at = where.with_path(f"content[{i}]")
        located.append((expect_mapping(item, block_at, "content block"), block_at))
    return located


def _tool_call(block: Mapping[str, Any], where: SourceLocation) -> ToolCall:
    call_id = expect_str(block.get("id"), where.with_path("id"), "tool_use `id`")
    name = expect_str(block.get("name"), where.with_path("name"), "tool_use `name`")
    for value, field in ((call_id, "id"), (name, "name")):
        if not value:
            raise IngestError(f"tool_use `{field}` is empty", where.with_path(field))
    arguments = expect_mapping(block.get("input"), where.with_path("input"), "tool_use `input`")
    return ToolCall(id=call_id, name=name, arguments=dict(arguments))


def _part(block: Mapping[str, Any], where: SourceLocation) -> ContentPart:
    try:
        part = block_to_part(block, where)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(p) for p in first["loc"])
        msg = f"{block.get('type')} block is malformed: {first['msg']} at `{field}`"
        raise IngestError(msg, where) from None
    if part is None:  # pragma: no cover - callers pass only content block types
        msg = f"{block.get('type')} block is not content"
        raise IngestError(msg, where)
    return part


def _misplaced(
    kind: Any, place: str, allowed: frozenset[str], where: SourceLocation
) -> IngestError:
    expected = ", ".join(sorted(allowed))
    if isinstance(kind, str) and kind in _USER_BLOCKS | _ASSISTANT_BLOCKS:
        msg = f"a `{kind}` block cannot appear in {place}; expected one of {expected}"
    else:
        msg = f"unknown content block type {kind!r} in {place}; expected one of {expected}"
    return IngestError(msg, where.with_path("type"))


_Block = TypeVar("_Block", bound=tuple[Mapping[str, Any], SourceLocation])


def _compaction_events(blocks: Sequence[_Block]) -> tuple[list[Compaction], list[_Block]]:
    """The `compaction` blocks a message's located blocks open with, as events; the rest.

    The API puts the block first in the reply that compacted; one anywhere else is
    refused (what it stands for would be ambiguous). A block with null `content` is a
    compaction that failed, which the API treats as a no-op: it stands for nothing and
    is left out.

    Raises:
        IngestError: a block is malformed, or comes after another kind of block.
    """
    events: list[Compaction] = []
    lead = 0
    while lead < len(blocks) and blocks[lead][0].get("type") == "compaction":
        block, at = blocks[lead]
        event = native_compaction("anthropic", block, at)
        if event.content:
            events.append(event)
        lead += 1
    for block, at in blocks[lead:]:
        if block.get("type") == "compaction":
            msg = (
                "a `compaction` block must come first in its assistant message, before any "
                "other block, as the API returns it"
            )
            raise IngestError(msg, at.with_path("type"))
    return events, list(blocks[lead:])
