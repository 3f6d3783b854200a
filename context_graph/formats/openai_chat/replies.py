"""OpenAI chat's SDK replies: a `ChatCompletionMessage`, or a `ChatCompletion`.

The completion's turn is its `choices[0].message`, read by the same code that reads a
recorded chat body (`read.message_to_events`); its usage is `usage`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from context_graph.errors import SourceLocation
from context_graph.formats.openai_chat import read
from context_graph.formats.wires import FormatName
from context_graph.graph.events import AssistantTurn
from context_graph.graph.reply_reader import (
    Claim,
    Reply,
    assistant_role,
    first_item,
    mapping,
    message_ids,
    usage_at,
    with_fields,
)

__all__ = ["OpenAIChatReplies"]


class OpenAIChatReplies:
    """Reads a chat completion, or its message."""

    format: FormatName = "openai"
    expected = "an OpenAI `ChatCompletion` (with `choices`)"
    message_at = "`choices[0].message`"

    def claims_message(self, data: Mapping[str, Any]) -> Claim | None:
        """Any message with a role: chat's messages carry no mark of their own."""
        return Claim.FALLBACK if "role" in data else None

    def claims_response(self, data: Mapping[str, Any]) -> Claim | None:
        """A completion: it has `choices`."""
        return Claim.CERTAIN if "choices" in data else None

    def read_message(
        self, data: Mapping[str, Any], where: SourceLocation, fields: Mapping[str, Any]
    ) -> AssistantTurn:
        """The assistant turn of a `ChatCompletionMessage`."""
        return _turn(data, where, {}, fields)

    def read_response(
        self, data: Mapping[str, Any], where: SourceLocation, fields: Mapping[str, Any]
    ) -> Reply:
        """The first choice's turn, the completion's ids and its usage."""
        choice = first_item(data, "choices", where)
        at = where.with_path("choices[0].message")
        message = mapping(choice.get("message"), at, "`choices[0].message`")
        usage = usage_at(data, "usage", self.format, where)
        ids = message_ids(data, where)
        return Reply(self.format, _turn(message, at, ids, fields), usage)


def _turn(
    data: Mapping[str, Any],
    where: SourceLocation,
    ids: Mapping[str, str | None],
    fields: Mapping[str, Any],
) -> AssistantTurn:
    assistant_role(data, where)
    events = read.message_to_events(data, where, read.ConversionState())
    turn = next(e for e in events if isinstance(e, AssistantTurn))  # the only one
    return with_fields(turn, ids, fields)
