"""SWE-agent trajectories (`.traj`): the OpenAI-style messages in `history`.

Two kinds of run exist. Function-calling runs give assistant messages `tool_calls` and
answer them with `role: "tool"` observations that name their call in `tool_call_ids` (a
list; SWE-agent itself answers only its first id, and so does this importer, keeping the
whole list in `meta`). Older runs write the action in the assistant's text and the
observation in the next user message. SWE-agent, not a person, writes every user message
but the task: a demonstration (`is_demo`) and each user message after the first
assistant turn become notices (`UserTurn.notice`), so the task is the only request.

`thought` and `action` repeat what the content and the tool calls already say and are
not read; `agent`, `message_type` and `is_demo` (a demonstration shown to the model)
go to `meta`. Anthropic `thinking_blocks` on an assistant message become thinking parts.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import JsonValue

from context_graph.errors import IngestError, SourceLocation
from context_graph.formats.openai_chat.read import ConversionState, message_to_events
from context_graph.graph.content import ContentPart
from context_graph.graph.events import AgentEvent, AssistantTurn, UserTurn
from context_graph.importers._base import (
    ImportedSession,
    RawInput,
    block_to_part,
    expect_list,
    expect_mapping,
    expect_str,
    with_fields,
)

__all__ = ["sniff", "to_sessions"]

_META_KEYS = ("agent", "message_type", "is_demo")


def sniff(raw: RawInput) -> bool:
    """Whether `raw` is a SWE-agent trajectory: an object whose `history` holds messages."""
    data = raw.data
    if not isinstance(data, Mapping):
        return False
    history = data.get("history")
    if not isinstance(history, list) or not history:
        return False
    return all(isinstance(m, Mapping) and "role" in m for m in history)


def to_sessions(raw: RawInput) -> list[ImportedSession]:
    """Convert the trajectory to one session.

    Raises:
        IngestError: the trajectory or a message is malformed (names the message).
    """
    root = expect_mapping(raw.data, raw.at(), "a SWE-agent trajectory")
    history = expect_list(root.get("history"), raw.at(None, "history"), "`history`")
    state = ConversionState()
    events: list[AgentEvent] = []
    acted = False  # an assistant turn came: user messages from here on are observations
    for index, item in enumerate(history):
        where = raw.at(index, f"history[{index}]")
        message = expect_mapping(item, where, "message")
        extra = _meta(message)
        thinking = _thinking(message.get("thinking_blocks"), where)
        for event in message_to_events(_as_openai(message, where, extra), where, state):
            if isinstance(event, AssistantTurn):
                acted = True
                if thinking:
                    event = with_fields(event, content=(*thinking, *event.content))
            elif isinstance(event, UserTurn) and (acted or message.get("is_demo") is True):
                event = with_fields(event, notice=True)
            events.append(with_fields(event, meta=extra))
    meta: dict[str, JsonValue] = {"format": "swe_agent"}
    info = root.get("info")
    if isinstance(info, Mapping) and isinstance(info.get("exit_status"), str):
        meta["exit_status"] = info["exit_status"]
    name = raw.path.name.removesuffix(".traj") if raw.path is not None else "swe-agent"
    return [ImportedSession(name=name, events=events, meta=meta)]


def _as_openai(
    message: Mapping[str, Any], where: SourceLocation, meta: dict[str, JsonValue]
) -> Mapping[str, Any]:
    """The message with `tool_call_ids` turned into the `tool_call_id` it answers."""
    if message.get("role") != "tool" or "tool_call_id" in message:
        return message
    path = where.with_path("tool_call_ids")
    ids = expect_list(message.get("tool_call_ids"), path, "observation `tool_call_ids`")
    if not ids:
        raise IngestError("`tool_call_ids` is empty: the observation answers no call", path)
    first = expect_str(ids[0], where.with_path("tool_call_ids[0]"), "`tool_call_ids[0]`")
    if len(ids) > 1:
        meta["tool_call_ids"] = [str(i) for i in ids]
    return {**message, "tool_call_id": first}


def _meta(message: Mapping[str, Any]) -> dict[str, JsonValue]:
    return {key: message[key] for key in _META_KEYS if isinstance(message.get(key), str | bool)}


def _thinking(value: Any, where: SourceLocation) -> tuple[ContentPart, ...]:
    if value is None:
        return ()
    path = where.with_path("thinking_blocks")
    parts = []
    for i, item in enumerate(expect_list(value, path, "`thinking_blocks`")):
        here = where.with_path(f"thinking_blocks[{i}]")
        part = block_to_part(expect_mapping(item, here, "thinking block"), here)
        if part is not None:
            parts.append(part)
    return tuple(parts)
