"""How much of a caller's conversation a record already holds, recognised by content.

A caller that resumes passes a conversation of which some leading part is already in
the manager's record: a wrapped client in a new process (`ContextManager.open(path)`,
then `wrap(client)`) given the whole saved list, or an HTTP gateway that receives the
agent's whole history with every request. `held_prefix` finds the longest leading
part of the caller's events that the record holds, in order, so that only what comes
after it is ingested; `Held.items` says where that is in the caller's items.

Events are compared with the record's nodes by what they say, not by ids (a Gemini
call's made-up id depends on where it was read): a system prompt, a user message or a
note by its content, an assistant turn by its text and the calls it makes (name and
arguments; reasoning is sent back opaque and may be re-encoded), an answer by its
content. The record may hold what the caller's list leaves out, which the match steps
over: the model's replies (a loop need not append them), notes, summaries and system
prompts added by the program. A user message or an answer the caller leaves out is
not stepped over: a list that skips one is not the conversation the record holds.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from context_graph.graph.content import ContentPart, ReasoningPart, RedactedThinkingPart
from context_graph.graph.content import ThinkingPart as _Thinking
from context_graph.graph.context_graph import ContextGraph
from context_graph.graph.events import (
    AgentEvent,
    AssistantTurn,
    FileRead,
    Note,
    SubagentResult,
    SystemPrompt,
    ToolResult,
    UserTurn,
)
from context_graph.graph.nodes import Node, ToolCallNode

__all__ = ["Held", "event_key", "held_prefix", "node_key", "open_calls"]

Key = tuple[Any, ...]
_OPAQUE = (ReasoningPart, _Thinking, RedactedThinkingPart)
_STEPPED_OVER = frozenset({"system", "assistant", "note", "summary"})
"""Kinds the record may hold that a caller's list leaves out."""
_ANSWERS: dict[type[AgentEvent], str] = {
    ToolResult: "tool_result",
    FileRead: "file",
    SubagentResult: "subagent_result",
}


@dataclass(frozen=True)
class Held:
    """The part of a caller's conversation the record holds.

    Attributes:
        items: How many leading items of the caller's list the record holds.
        matched: How many of the held items' events it found in the record (system
            prompts the record holds anywhere are not counted: a resumed caller repeats
            them). An item read into several events (a tool result and a text in one
            message) is held only when all of them are.
        rest: Whether the record holds user messages or answers after the held part,
            which the caller's list does not repeat (a list that diverges from the
            record, or a shorter one).
        systems: The system prompts in the held part that the record does not hold (a
            changed prompt, new): to ingest with what follows the held part.
        last: The id of the record's node the held part ends at, the last one matched
            (an assistant turn's: its calls are in its key); `None` when none was.
    """

    items: int
    matched: int
    rest: bool
    systems: tuple[AgentEvent, ...] = ()
    last: str | None = None


def held_prefix(
    events: Sequence[AgentEvent], record: ContextGraph, *, items: int, lead: int = 0
) -> Held:
    """The longest leading part of `events` that `record` holds, in order.

    Args:
        events: The caller's conversation, read by its format's importer; each event's
            `source.index` is the item it was read from.
        record: The manager's pristine record (`ContextManager.raw`).
        items: How many items the caller's list has.
        lead: How many items were read before the caller's list (and are left out of
            `events`): the event's `source.index` counts them.
    """
    held_ids, held_keys = _record_keys(record)
    systems = [key for key in held_keys if key[0] == "system"]
    position = count = matched = 0
    # (the item an event was read from, where the match stood after it, events matched):
    # an item read into several events (a tool result and a text in one message) is held
    # only when all of them are.
    marks: list[tuple[int | None, int, int]] = []
    changed: list[AgentEvent] = []
    for event in events:
        key = event_key(event)
        if key is None:
            break
        if key[0] == "system":  # the prompt, not the conversation: it may have changed
            count += 1
            if key not in systems:
                changed.append(event)
            continue
        found = _next(held_keys, position, key)
        if found is None:
            break
        position, count, matched = found + 1, count + 1, matched + 1
        marks.append((_item_of(event), position, matched))
    if count < len(events):
        stop = _item_of(events[count])
        index = lead if stop is None else stop
        items = index - lead
        if stop is not None:
            # What was matched of the item the held part stops in is not held.
            whole = [mark for mark in marks if mark[0] is None or mark[0] < stop]
            position, matched = whole[-1][1:] if whole else (0, 0)
    rest = any(k[0] not in _STEPPED_OVER for k in held_keys[position:])
    last = held_ids[position - 1] if matched else None
    return Held(items, matched, rest, tuple(changed), last)


def _item_of(event: AgentEvent) -> int | None:
    """The index of the caller's item `event` was read from, if the importer said."""
    source = event.source
    return source.index if source is not None else None


def open_calls(record: ContextGraph) -> list[ToolCallNode]:
    """The calls of the record's last assistant turn that have no answer yet."""
    ids = record.unanswered_calls()
    if not ids:
        return []
    calls = [c for c in (record[i] for i in ids) if isinstance(c, ToolCallNode)]
    last = calls[-1].assistant_id
    return [c for c in calls if c.assistant_id == last]


def event_key(event: AgentEvent) -> Key | None:
    """What an event says, comparable with a record node's `node_key`."""
    if isinstance(event, SystemPrompt):
        return ("system", _parts(event.content))
    if isinstance(event, UserTurn):
        return ("user", _parts(event.content))
    if isinstance(event, Note):
        return ("note", _parts(event.content))
    if isinstance(event, AssistantTurn):
        calls = tuple((c.name, c.arguments) for c in event.tool_calls)
        return ("assistant", _parts(event.content), calls)
    if isinstance(event, ToolResult | FileRead | SubagentResult):
        return (_ANSWERS[type(event)], _parts(event.content))
    return None


def _record_keys(record: ContextGraph) -> tuple[list[str], list[Key]]:
    """The record's nodes, as ids and as keys, an assistant turn's calls in its own key."""
    calls: dict[str, list[ToolCallNode]] = {}
    nodes: list[Node] = []
    for node in record:
        if isinstance(node, ToolCallNode):
            calls.setdefault(node.assistant_id, []).append(node)
        else:
            nodes.append(node)
    return [node.id for node in nodes], [node_key(node, calls.get(node.id, ())) for node in nodes]


def node_key(node: Node, calls: Sequence[ToolCallNode] = ()) -> Key:
    """What a record node says (an assistant node with the calls it issued), as `event_key`."""
    if node.kind == "assistant":
        issued = sorted(calls, key=lambda c: c.index)
        return ("assistant", _parts(node.content), tuple((c.name, c.arguments) for c in issued))
    return (node.kind, _parts(node.content))


def _next(keys: list[Key], start: int, key: Key) -> int | None:
    """Where `key` is next in `keys` from `start`, stepping over only what may be left out."""
    for index in range(start, len(keys)):
        if keys[index] == key:
            return index
        if keys[index][0] not in _STEPPED_OVER:
            return None
    return None


def _parts(content: Sequence[ContentPart]) -> tuple[ContentPart, ...]:
    return tuple(part for part in content if not isinstance(part, _OPAQUE))
