"""The Responses API's SDK replies: a `Response`, or the compact endpoint's reply.

A `Response` (`"object": "response"`) holds the turn in its `output` items (reasoning,
messages, calls), after any `compaction` item the server wrote; the compact endpoint's
`CompactedResponse` (`"object": "response.compaction"`) holds only a `compaction` item
that is new (the user's messages before it are already in the history). The items are
read by the same `read.ItemReader` that reads a recorded `input`; the usage is `usage`,
whose `input_tokens` include the cached ones.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from context_graph.errors import IngestError, SourceLocation
from context_graph.formats.openai_responses import read
from context_graph.formats.wires import FormatName
from context_graph.graph.events import AgentEvent, AssistantTurn, Compaction
from context_graph.graph.reply_reader import (
    Claim,
    Reply,
    message_ids,
    text_field,
    usage_at,
    with_fields,
)

__all__ = ["OpenAIResponsesReplies"]

_OBJECTS = ("response", "response.compaction")
_COMPACTION_ITEMS = frozenset({"compaction", "compaction_summary"})
_INPUT_ROLES = frozenset({"user", "system", "developer"})


class OpenAIResponsesReplies:
    """Reads a `Response` or a `CompactedResponse`; it has no message of its own."""

    format: FormatName = "responses"
    expected = 'an OpenAI Responses `Response` (`"object": "response"`)'
    message_at = None

    def claims_message(self, data: Mapping[str, Any]) -> Claim | None:
        """None: a response's turn is spread over its items, never one message."""
        return None

    def claims_response(self, data: Mapping[str, Any]) -> Claim | None:
        """A response or a compacted response, by its `object`."""
        return Claim.CERTAIN if data.get("object") in _OBJECTS else None

    def read_message(
        self, data: Mapping[str, Any], where: SourceLocation, fields: Mapping[str, Any]
    ) -> AssistantTurn:
        """Never asked (it claims no message); refuses, naming what to pass instead."""
        msg = "a Responses reply is read whole: give the `Response` to `read_response`"
        raise IngestError(msg, where)

    def read_response(
        self, data: Mapping[str, Any], where: SourceLocation, fields: Mapping[str, Any]
    ) -> Reply:
        """Its compactions, then its turn, with the response's ids and usage."""
        status = data.get("status")
        if status in ("failed", "cancelled"):
            msg = f"the response {status} and holds no reply"
            error = data.get("error")
            if isinstance(error, Mapping) and error.get("message"):
                msg += f": {error.get('code') or 'error'}: {error['message']}"
            raise IngestError(msg, where.with_path("status"))
        events = _output_events(data, where)
        compactions = tuple(e for e in events if isinstance(e, Compaction))
        turns = [e for e in events if isinstance(e, AssistantTurn)]
        at = where.with_path("output")
        if events[: len(compactions)] != list(compactions):
            # The server compacts before the model writes, so its item leads the output; one
            # after the model's items would stand for them too, which `Reply` cannot say.
            msg = "a `compaction` item must come before the model's output items"
            raise IngestError(msg, at)
        if data.get("object") == "response.compaction" and not compactions:
            msg = "a compacted response must hold a `compaction` item"
            raise IngestError(msg, at)
        if not turns and not compactions:
            msg = f"the response holds no output to add (status: {status})"
            raise IngestError(msg, at)
        turn = turns[0] if turns else AssistantTurn()
        ids = message_ids(data, where)
        usage = usage_at(data, "usage", self.format, where)
        return Reply(self.format, with_fields(turn, ids, fields), usage, compactions)


def _output_events(data: Mapping[str, Any], where: SourceLocation) -> list[AgentEvent]:
    """The events of the `output` items the model wrote (a compacted reply: its compaction)."""
    output = data.get("output")
    if not isinstance(output, list | tuple):
        msg = f"`output` must be a list of items, got {type(output).__name__}"
        raise IngestError(msg, where.with_path("output"))
    compacted = data.get("object") == "response.compaction"
    reader = read.ItemReader(model=text_field(data, "model", where))
    for index, item in enumerate(output):
        at = where.with_path(f"output[{index}]")
        role = item.get("role") if isinstance(item, Mapping) else None
        if compacted and not (isinstance(item, Mapping) and item.get("type") in _COMPACTION_ITEMS):
            # The user's messages the endpoint kept: the history holds them already.
            if role not in _INPUT_ROLES:
                msg = "a compacted response's output holds the input messages and the compaction"
                raise IngestError(msg, at)
            continue
        if not compacted and role in _INPUT_ROLES:
            msg = f"a response's output holds only the model's items, not a {role} message"
            raise IngestError(msg, at.with_path("role"))
        reader.read(item, at)
    return reader.finish()
