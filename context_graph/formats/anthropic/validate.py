"""Rules of the Anthropic Messages request body (`{"system": ..., "messages": [...]}`)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import Any, Final

from context_graph.formats.anthropic.validate_blocks import check_block, check_text
from context_graph.formats.anthropic.validate_turns import (
    THINKING,
    Msg,
    check_pairing,
    check_sequence,
    check_thinking,
    count_breakpoints,
    tool_breakpoints,
)
from context_graph.validate.common import (
    Collector,
    as_list,
    check_keys,
    is_obj,
    never,
    objects_in,
    show,
)
from context_graph.validate.tool_fields import FunctionSite, check_tools

__all__ = [
    "ANTHROPIC_RULES",
    "AnthropicMessagesValidator",
    "anthropic_clues",
    "anthropic_leans",
    "validate_anthropic",
]

ANTHROPIC_RULES: Mapping[str, str] = MappingProxyType(
    {
        "too_many_messages": "Anthropic takes at most 100,000 messages in one request.",
        "text_empty": "An Anthropic text block (or string content) is empty or only whitespace.",
        "tool_use_id_invalid": "A tool_use `id` or a tool_result `tool_use_id` does not match "
        "`^[a-zA-Z0-9_-]+$`.",
        "tool_result_not_first": "A tool_result block follows another kind of block in its "
        "message.",
        "thinking_signature_missing": "A thinking block has no string `signature`.",
        "redacted_thinking_data_missing": "A redacted_thinking block has no string `data`.",
        "thinking_not_first": "A thinking block follows text or tool_use in its message.",
        "compaction_block_invalid": "A compaction block's `content` is neither a non-empty string "
        "nor null, or an opaque field (`encrypted_content`, `signature`) is not a string.",
        "compaction_not_first": "A compaction block follows another kind of block in its "
        "assistant message (the API returns it first, standing for what came before).",
        "thinking_block_last": "The final assistant message ends with a thinking block.",
        "thinking_block_missing": "With thinking enabled, the assistant message of the open tool "
        "loop does not start with a thinking block.",
        "thinking_while_disabled": "With thinking disabled, the final assistant message holds a "
        "thinking block.",
        "too_many_cache_breakpoints": "More than 4 `cache_control` breakpoints in one request.",
        "system_message_misplaced": "A mid-conversation system message (a model that takes "
        "them) is first, does not follow a user message (or an assistant message ending in a "
        "server tool use), is followed by something other than an assistant message, or is "
        "next to another system message.",
        "system_message_content_invalid": "A mid-conversation system message's `content` is "
        "neither a non-empty string nor a list of text blocks.",
        "trailing_whitespace": "The final assistant message ends with whitespace.",
    }
)

_MAX_MESSAGES = 100_000
_MESSAGE_KEYS = frozenset({"role", "content"})
_SYSTEM_MESSAGE_KEYS = frozenset({"role", "content", "cache_control"})
#: The models that take `role: "system"` messages inside `messages` (mid-conversation
#: system messages: Claude Opus 4.8, on Anthropic's own API; an id of a cloud platform,
#: which does not serve them, does not match). Any other model answers them with a 400.
_MID_CONVERSATION_SYSTEM = re.compile(r"claude-opus-4-8(?:-\d{8})?")


def validate_anthropic(payload: Any, out: Collector) -> None:
    """Check an Anthropic Messages request body, adding every violation to `out`."""
    if not is_obj(payload):
        out.add(
            "payload_not_object",
            "$",
            None,
            f"the request body is {show(payload)}; send a JSON object with a `messages` array",
        )
        return
    check_tools(payload, _functions, out)
    breakpoints = tool_breakpoints(payload)
    _check_system(payload, out, breakpoints)
    messages = as_list(payload.get("messages"))
    if messages is None:
        out.add(
            "messages_missing",
            "messages",
            None,
            "`messages` is absent or not an array; send the conversation as an array of message "
            "objects",
        )
    elif not messages:
        out.add("messages_empty", "messages", None, "`messages` is empty; add a user message")
    else:
        if len(messages) > _MAX_MESSAGES:
            out.add(
                "too_many_messages",
                "messages",
                None,
                f"{len(messages)} messages exceed the limit of {_MAX_MESSAGES}; compact the "
                "history",
            )
        last = len(messages) - 1
        mid = _takes_system_messages(payload.get("model"))
        msgs = [
            _check_message(i, m, i == last, out, breakpoints, mid) for i, m in enumerate(messages)
        ]
        # The turns' rules read the conversation without the system messages in it: a
        # tool result's message followed by one and then the assistant still alternates.
        turns = [msg for msg in msgs if msg.role != "system"]
        if mid:
            _check_placement(msgs, out)
        if turns:
            check_sequence(turns, out)
            check_pairing(turns, out)
            check_thinking(payload.get("thinking"), turns, out)
    count_breakpoints(payload, out, breakpoints)


def _check_system(
    payload: dict[Any, Any], out: Collector, bps: list[tuple[str, int | None]]
) -> None:
    """Check the top-level `system` prompt."""
    system = payload.get("system")
    if system is None or isinstance(system, str):
        return
    blocks = as_list(system)
    if blocks is None:
        out.add(
            "system_invalid",
            "system",
            None,
            f"`system` is {show(system)}; make it a string or an array of text blocks",
        )
        return
    for j, block in enumerate(blocks):
        path = f"system[{j}]"
        if not (is_obj(block) and block.get("type") == "text"):
            out.add(
                "system_invalid",
                path,
                None,
                "every system block must be an object with `type` text; move other content into "
                "a user message",
            )
            continue
        check_text(None, path, block, out)
        if block.get("cache_control") is not None:
            bps.append((f"{path}.cache_control", None))


def _takes_system_messages(model: Any) -> bool:
    """Whether `model` takes `role: "system"` messages inside `messages`."""
    return isinstance(model, str) and _MID_CONVERSATION_SYSTEM.fullmatch(model.strip()) is not None


def _check_message(
    i: int,
    message: Any,
    final: bool,
    out: Collector,
    bps: list[tuple[str, int | None]],
    mid_system: bool = False,
) -> Msg:
    """Check one message on its own; return what the cross-message rules need.

    `mid_system`: the model takes system messages inside `messages`.
    """
    path = f"messages[{i}]"
    if not is_obj(message):
        out.add(
            "message_not_object",
            path,
            i,
            f"the message is {show(message)}; make it an object with `role` and `content`",
        )
        return Msg(i, None)
    role = message.get("role")
    if role == "system" and mid_system:
        check_keys(message, _SYSTEM_MESSAGE_KEYS, path, i, out)
        if message.get("cache_control") is not None:
            bps.append((f"{path}.cache_control", i))
        _check_system_content(i, message.get("content"), out, bps)
        return Msg(i, "system")
    if role == "system":
        out.add(
            "system_role_in_messages",
            f"{path}.role",
            i,
            "a system message cannot appear in `messages`; move its text to the top-level "
            "`system` parameter",
        )
    elif role not in ("user", "assistant"):
        out.add(
            "unknown_role",
            f"{path}.role",
            i,
            f"the role is {show(role)}; use user or assistant",
        )
    check_keys(message, _MESSAGE_KEYS, path, i, out)
    msg = Msg(i, role if role in ("user", "assistant") else None)
    _check_content(msg, message.get("content"), final, out, bps)
    return msg


def _check_system_content(
    i: int, content: Any, out: Collector, bps: list[tuple[str, int | None]]
) -> None:
    """A mid-conversation system message holds text only: a string or text blocks."""
    path = f"messages[{i}].content"
    if isinstance(content, str) and content.strip():
        return
    blocks = as_list(content)
    if not blocks or not all(is_obj(b) and b.get("type") == "text" for b in blocks):
        out.add(
            "system_message_content_invalid",
            path,
            i,
            f"a system message's `content` is {show(content)}; make it a non-empty string or a "
            "list of text blocks (no images, documents or tool blocks)",
        )
        return
    for j, block in enumerate(blocks):
        check_text(i, f"{path}[{j}]", block, out)
        if block.get("cache_control") is not None:
            bps.append((f"{path}[{j}].cache_control", i))


def _check_placement(msgs: list[Msg], out: Collector) -> None:
    """Where a mid-conversation system message may stand (the API answers others with a 400)."""
    for pos, msg in enumerate(msgs):
        if msg.role != "system":
            continue
        prev = msgs[pos - 1] if pos > 0 else None
        nxt = msgs[pos + 1] if pos + 1 < len(msgs) else None
        problem = None
        if prev is None:
            problem = "it is the first message; put its text in the top-level `system`"
        elif prev.role == "system" or (nxt is not None and nxt.role == "system"):
            problem = "it is next to another system message; merge the two"
        elif prev.role == "assistant" and not _ends_in_server_tool_use(prev):
            problem = (
                f"it follows assistant messages[{prev.index}]; it must follow a user message "
                "(or an assistant message ending in a server tool use)"
            )
        elif nxt is not None and nxt.role != "assistant":
            problem = (
                f"messages[{nxt.index}] after it is not an assistant message; a system message "
                "is the last message or is followed by the assistant's"
            )
        if problem is not None:
            out.add(
                "system_message_misplaced",
                f"messages[{msg.index}].role",
                msg.index,
                f"a system message cannot stand here: {problem}",
            )


def _ends_in_server_tool_use(msg: Msg) -> bool:
    return bool(msg.blocks) and msg.blocks[-1][1].get("type") == "server_tool_use"


def _check_content(
    msg: Msg, content: Any, final: bool, out: Collector, bps: list[tuple[str, int | None]]
) -> None:
    """Check a message's `content`, collecting its well-formed blocks into `msg`."""
    i, path = msg.index, f"messages[{msg.index}].content"
    may_be_empty = final and msg.role == "assistant"
    if isinstance(content, str):
        if content == "" and not may_be_empty:
            out.add(
                "content_empty",
                path,
                i,
                "`content` is empty; only a final assistant message may be empty, so add text or "
                "drop the message",
            )
        elif content.strip() == "" and content and not may_be_empty:
            out.add(
                "text_empty", path, i, "`content` is only whitespace; add text or drop the message"
            )
        msg.blocks.append((path, {"type": "text", "text": content}))
        return
    blocks = as_list(content)
    if content is None:
        out.add("content_missing", path, i, "the message has no `content`; add text or blocks")
        return
    if blocks is None:
        out.add(
            "content_invalid",
            path,
            i,
            f"`content` is {show(content)}; make it a string or an array of content blocks",
        )
        return
    if not blocks and not may_be_empty:
        out.add(
            "content_empty",
            path,
            i,
            "`content` is an empty array; only a final assistant message may be empty, so add a "
            "block or drop the message",
        )
    for j, block in enumerate(blocks):
        if check_block(msg, f"{path}[{j}]", block, out):
            msg.blocks.append((f"{path}[{j}]", block))
            if block.get("cache_control") is not None:
                bps.append((f"{path}[{j}].cache_control", i))
            _result_breakpoints(f"{path}[{j}]", block, i, bps)
    _check_order(msg, out)


def _result_breakpoints(path: str, block: dict[Any, Any], i: int, bps: list[Any]) -> None:
    """Breakpoints set on blocks nested in a tool_result count too."""
    if block.get("type") != "tool_result":
        return
    for k, item in enumerate(as_list(block.get("content")) or []):
        if is_obj(item) and item.get("cache_control") is not None:
            bps.append((f"{path}.content[{k}].cache_control", i))


def _check_order(msg: Msg, out: Collector) -> None:
    """tool_result blocks lead a user message; thinking blocks lead an assistant message."""
    lead = {"user": frozenset({"tool_result"}), "assistant": THINKING}.get(msg.role or "")
    if lead is None:
        return
    rule = "tool_result_not_first" if msg.role == "user" else "thinking_not_first"
    seen_other = False
    opening = True  # compaction blocks open an assistant message, before its thinking
    for path, block in msg.blocks:
        if block["type"] == "compaction" and msg.role == "assistant":
            if not opening:
                out.add(
                    "compaction_not_first",
                    f"{path}.type",
                    msg.index,
                    "a compaction block follows another kind of block; send it first in "
                    "its message, as the API returned it",
                )
            continue
        opening = False
        if block["type"] not in lead:
            seen_other = True
        elif seen_other:
            out.add(
                rule,
                f"{path}.type",
                msg.index,
                f"a {block['type']} block follows another kind of block; move every "
                f"{' / '.join(sorted(lead))} block to the start of the message",
            )


# Signs of an Anthropic body that the other formats do not use.
_CLUE_BLOCKS = frozenset(
    {"tool_use", "tool_result", "thinking", "redacted_thinking", "document", "server_tool_use"}
)


def anthropic_clues(body: dict[Any, Any]) -> list[str]:
    """Signs of an Anthropic Messages body: top-level `system`, its block types, its tools."""
    found: list[str] = []
    if isinstance(body.get("system"), str | list):
        found.append("top-level `system`")
    for message in objects_in(body.get("messages")):
        for block in objects_in(message.get("content")):
            kind = block.get("type")
            if not isinstance(kind, str):
                continue
            if kind in _CLUE_BLOCKS:
                found.append(f"a block of type `{kind}`")
            elif kind == "image" and "source" in block:
                found.append("an `image` block with a `source`")
            if "cache_control" in block:
                found.append("a block with `cache_control`")
    for tool in objects_in(body.get("tools")):
        if "input_schema" in tool:
            found.append("a tool with `input_schema`")
    return found


def anthropic_leans(body: dict[Any, Any]) -> bool:
    """A top-level `max_tokens` beside `messages`: Messages requires it, chat only allows it."""
    return "max_tokens" in body and "messages" in body


class AnthropicMessagesValidator:
    """The Anthropic Messages rules as a `ProviderValidator`."""

    format: Final = "anthropic"
    rules: Final = ANTHROPIC_RULES
    check = staticmethod(validate_anthropic)
    clues = staticmethod(anthropic_clues)
    mixes = staticmethod(never)
    leans = staticmethod(anthropic_leans)


def _functions(tool: dict[Any, Any], path: str, out: Collector) -> Iterable[FunctionSite]:
    """A custom tool: no type, or type "custom", with an `input_schema` (else a built-in)."""
    if tool.get("type") not in (None, "custom"):
        return ()
    return (FunctionSite(tool, path, "input_schema"),)
