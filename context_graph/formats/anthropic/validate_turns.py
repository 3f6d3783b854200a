"""Request-wide rules of the Anthropic Messages body.

The order of turns, the pairing of tool_use and tool_result blocks, the thinking rules
that depend on the final messages, and the cache breakpoint limit. The per-message
checks in `_validate_anthropic` hand over a `Msg` for each message.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field
from typing import Any

from context_graph.validate.common import Collector, as_list, is_obj, show

__all__ = [
    "THINKING",
    "TOOL_ID",
    "Msg",
    "check_pairing",
    "check_sequence",
    "check_thinking",
    "count_breakpoints",
    "tool_breakpoints",
]

THINKING = frozenset({"thinking", "redacted_thinking"})
#: The pattern the API enforces on tool_use ids (and so on tool_use_ids).
TOOL_ID = re.compile(r"[a-zA-Z0-9_-]+")
_MAX_BREAKPOINTS = 4


@dataclass
class Msg:
    """What the cross-message rules need to know about one message."""

    index: int
    role: str | None
    blocks: list[tuple[str, dict[Any, Any]]] = field(default_factory=list)
    """(path, block) for every block that is an object with a known type."""


def check_sequence(msgs: list[Msg], out: Collector) -> None:
    """The first message is from the user and roles alternate."""
    if msgs[0].role == "assistant":
        out.add(
            "first_message_not_user",
            "messages[0].role",
            0,
            "the first message must be from the user; add a user message before it",
        )
    for prev, cur in itertools.pairwise(msgs):
        if cur.role is not None and cur.role == prev.role:
            out.add(
                "roles_not_alternating",
                f"messages[{cur.index}].role",
                cur.index,
                f"two {cur.role} messages in a row; merge messages[{prev.index}] and "
                f"messages[{cur.index}] into one",
            )


def _tool_uses(msg: Msg) -> list[tuple[str, str]]:
    """(path, id) of the tool_use blocks of an assistant message with usable ids."""
    if msg.role != "assistant":
        return []
    return [(p, b["id"]) for p, b in msg.blocks if b["type"] == "tool_use" and _usable(b, "id")]


def _results(msg: Msg) -> list[tuple[str, str]]:
    """(path, tool_use_id) of the tool_result blocks of a user message with usable ids."""
    if msg.role != "user":
        return []
    return [
        (p, b["tool_use_id"])
        for p, b in msg.blocks
        if b["type"] == "tool_result" and _usable(b, "tool_use_id")
    ]


def _usable(block: dict[Any, Any], key: str) -> bool:
    value = block.get(key)
    return isinstance(value, str) and TOOL_ID.fullmatch(value) is not None


def check_pairing(msgs: list[Msg], out: Collector) -> None:
    """Each tool_use gets exactly one tool_result in the very next message, and vice versa."""
    seen: dict[str, str] = {}
    for pos, msg in enumerate(msgs):
        uses = _tool_uses(msg)
        for path, use_id in uses:
            if use_id in seen:
                out.add(
                    "duplicate_tool_call_id",
                    f"{path}.id",
                    msg.index,
                    f"tool_use id {show(use_id)} is already used at {seen[use_id]}; ids must be "
                    "unique across the request",
                )
            seen.setdefault(use_id, path)
        nxt = _results(msgs[pos + 1]) if pos + 1 < len(msgs) else []
        answered: dict[str, int] = {}
        for _, use_id in nxt:
            answered[use_id] = answered.get(use_id, 0) + 1
        for path, use_id in uses:
            if answered.get(use_id, 0) == 0:
                out.add(
                    "tool_call_unanswered",
                    path,
                    msg.index,
                    f"tool_use {show(use_id)} has no tool_result in the next message; add one at "
                    "the start of the following user message",
                )
        _check_results(msgs, pos, out)


def _check_results(msgs: list[Msg], pos: int, out: Collector) -> None:
    """Results in message `pos` answer tool_use blocks of the message right before it."""
    results = _results(msgs[pos])
    if not results:
        return
    prev = {use_id for _, use_id in _tool_uses(msgs[pos - 1])} if pos > 0 else set()
    counted: set[str] = set()
    for path, use_id in results:
        if use_id not in prev:
            out.add(
                "tool_result_orphan",
                f"{path}.tool_use_id",
                msgs[pos].index,
                f"tool_result {show(use_id)} does not answer a tool_use of the preceding "
                "assistant message; drop it or restore the tool_use",
            )
        elif use_id in counted:
            out.add(
                "duplicate_tool_result",
                f"{path}.tool_use_id",
                msgs[pos].index,
                f"tool_use {show(use_id)} is already answered in this message; keep one "
                "tool_result",
            )
        counted.add(use_id)


def check_thinking(config: Any, msgs: list[Msg], out: Collector) -> None:
    """Rules on thinking blocks that depend on the final messages and the request config."""
    mode = config.get("type") if is_obj(config) else None
    last = msgs[-1]
    if last.role == "assistant" and last.blocks:
        path, block = last.blocks[-1]
        if block["type"] in THINKING:
            out.add(
                "thinking_block_last",
                path,
                last.index,
                "the final assistant message cannot end with a thinking block; drop it or add "
                "the text that followed",
            )
        text = block.get("text")
        if block["type"] == "text" and isinstance(text, str) and text != text.rstrip():
            where = path if path.endswith("content") else f"{path}.text"
            out.add(
                "trailing_whitespace",
                where,
                last.index,
                "final assistant content cannot end with whitespace; strip it",
            )
        thinking = [p for p, b in last.blocks if b["type"] in THINKING]
        if mode == "disabled" and thinking:
            out.add(
                "thinking_while_disabled",
                thinking[0],
                last.index,
                "with thinking disabled the final assistant message cannot hold thinking blocks; "
                "drop them or enable thinking",
            )
    if mode == "enabled" and len(msgs) >= 2 and _results(last) and _tool_uses(msgs[-2]):
        loop = msgs[-2]
        # A compaction block opens the message it came in, before the thinking.
        blocks = [b for b in loop.blocks if b[1]["type"] != "compaction"]
        if not blocks or blocks[0][1]["type"] not in THINKING:
            first = blocks[0][0] if blocks else f"messages[{loop.index}].content"
            out.add(
                "thinking_block_missing",
                first,
                loop.index,
                "with thinking enabled, the assistant message of the open tool loop must start "
                "with its thinking block; send the block back or disable thinking",
            )


def tool_breakpoints(payload: dict[Any, Any]) -> list[tuple[str, int | None]]:
    """Breakpoints on tool definitions: the first part of the cached prefix."""
    return [
        (f"tools[{k}].cache_control", None)
        for k, tool in enumerate(as_list(payload.get("tools")) or [])
        if is_obj(tool) and tool.get("cache_control") is not None
    ]


def count_breakpoints(payload: dict[Any, Any], out: Collector, bps: list[Any]) -> None:
    """At most four `cache_control` breakpoints across tools, system and messages."""
    if payload.get("cache_control") is not None:
        bps.append(("cache_control", None))
    if len(bps) > _MAX_BREAKPOINTS:
        path, index = bps[_MAX_BREAKPOINTS]
        out.add(
            "too_many_cache_breakpoints",
            path,
            index,
            f"the request sets {len(bps)} cache_control breakpoints, more than "
            f"{_MAX_BREAKPOINTS}; remove this one and any after it",
        )
