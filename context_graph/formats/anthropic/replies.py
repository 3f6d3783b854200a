"""Anthropic's SDK replies: a `Message`, which is the whole response too.

Its content is read by the same code that reads a recorded Messages body; its usage is
`usage`, whose prompt is `input_tokens` plus the cache reads and writes, which
`input_tokens` leaves out. The `compaction` blocks a message opens with are events of
their own (`Reply.compactions`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from context_graph.errors import IngestError, SourceLocation
from context_graph.formats.anthropic import read
from context_graph.formats.wires import FormatName
from context_graph.graph.events import AssistantTurn, Compaction
from context_graph.graph.reply_reader import (
    Claim,
    Reply,
    assistant_role,
    message_ids,
    usage_at,
    with_fields,
)

__all__ = ["AnthropicReplies"]

#: Blocks only an Anthropic assistant message holds: they mark a message without `type`.
_OWN_BLOCKS = frozenset({"tool_use", "thinking", "redacted_thinking", "compaction"})


class AnthropicReplies:
    """Reads a `Message`."""

    format: FormatName = "anthropic"
    expected = 'an Anthropic `Message` (`"type": "message"`)'
    message_at = None

    def claims_message(self, data: Mapping[str, Any]) -> Claim | None:
        """A message typed `message`, or one with a role whose content has our blocks."""
        if data.get("type") == "message":
            return Claim.CERTAIN
        content = data.get("content")
        if (
            "role" in data
            and isinstance(content, list)
            and any(isinstance(b, Mapping) and b.get("type") in _OWN_BLOCKS for b in content)
        ):
            return Claim.LIKELY
        return None

    def claims_response(self, data: Mapping[str, Any]) -> Claim | None:
        """A message typed `message`; a mark less sure than a response-only field."""
        return Claim.LIKELY if data.get("type") == "message" else None

    def read_message(
        self, data: Mapping[str, Any], where: SourceLocation, fields: Mapping[str, Any]
    ) -> AssistantTurn:
        """The assistant turn of a message that opens with no `compaction` block."""
        if _compactions(data, where):
            msg = (
                "this message opens with a `compaction` block, which is an event of its own: "
                "ingest `read_response(message).events` instead (the compactions, then the turn)"
            )
            raise IngestError(msg, where.with_path("content[0]"))
        return _turn(data, where, fields)

    def read_response(
        self, data: Mapping[str, Any], where: SourceLocation, fields: Mapping[str, Any]
    ) -> Reply:
        """The message's turn, its usage and the compactions it opens with."""
        usage = usage_at(data, "usage", self.format, where)
        turn = _turn(data, where, fields)
        return Reply(self.format, turn, usage, _compactions(data, where))


def _turn(
    data: Mapping[str, Any], where: SourceLocation, fields: Mapping[str, Any]
) -> AssistantTurn:
    assistant_role(data, where)
    found = read.leading_compactions(data.get("content"), where)
    if found is None:
        parts, calls = read.assistant_content(data.get("content"), where)
    else:  # the compactions are events of their own (`Reply.compactions`)
        parts, calls = read.assistant_blocks(found[1])
    turn = AssistantTurn(content=tuple(parts), tool_calls=tuple(calls))
    ids = message_ids(data, where)
    return with_fields(turn, ids, fields)


def _compactions(data: Mapping[str, Any], where: SourceLocation) -> tuple[Compaction, ...]:
    """The message's leading `compaction` blocks, as events."""
    found = read.leading_compactions(data.get("content"), where)
    if found is None:
        return ()
    return tuple(e for e in found[0] if isinstance(e, Compaction))
