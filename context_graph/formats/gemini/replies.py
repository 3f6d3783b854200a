"""Gemini's SDK replies: a `Content` (role `model`), or a `GenerateContentResponse`.

The response's turn is its `candidates[0].content`, read by the same code that reads a
recorded `contents` body (`read.model_turn`); its usage is `usage_metadata`. Both are
taken in the API's camelCase or the SDK's snake_case.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from context_graph.errors import IngestError, SourceLocation
from context_graph.formats.gemini import read
from context_graph.formats.wires import FormatName
from context_graph.graph.events import AssistantTurn
from context_graph.graph.reply_reader import (
    Claim,
    Reply,
    first_item,
    text_field,
    usage_at,
    with_fields,
)

__all__ = ["GeminiReplies"]


class GeminiReplies:
    """Reads a `generateContent` response, or its content."""

    format: FormatName = "gemini"
    expected = "a Gemini `GenerateContentResponse` (with `candidates`)"
    message_at = "`candidates[0].content`"

    def claims_message(self, data: Mapping[str, Any]) -> Claim | None:
        """A content: it has `parts`."""
        return Claim.CERTAIN if "parts" in data else None

    def claims_response(self, data: Mapping[str, Any]) -> Claim | None:
        """A response: it has `candidates`."""
        return Claim.CERTAIN if "candidates" in data else None

    def read_message(
        self, data: Mapping[str, Any], where: SourceLocation, fields: Mapping[str, Any]
    ) -> AssistantTurn:
        """The assistant turn of a `model` content."""
        return with_fields(read.model_turn(data, where), {}, fields)

    def read_response(
        self, data: Mapping[str, Any], where: SourceLocation, fields: Mapping[str, Any]
    ) -> Reply:
        """The first candidate's turn, the response's ids and its usage metadata."""
        feedback = data.get("promptFeedback") or data.get("prompt_feedback")
        hint = f" (prompt feedback: {feedback})" if feedback else ""
        candidate = first_item(data, "candidates", where, hint=hint)
        at = where.with_path("candidates[0].content")
        if candidate.get("content") is None:
            reason = candidate.get("finishReason") or candidate.get("finish_reason")
            msg = f"the first candidate has no content (finish reason: {reason})"
            raise IngestError(msg, at)
        usage_key = "usageMetadata" if "usageMetadata" in data else "usage_metadata"
        usage = usage_at(data, usage_key, self.format, where)
        ids = {
            "message_id": text_field(data, "responseId", where)
            or text_field(data, "response_id", where),
            "model": text_field(data, "modelVersion", where)
            or text_field(data, "model_version", where),
        }
        turn = with_fields(read.model_turn(candidate["content"], at), ids, fields)
        return Reply(self.format, turn, usage)
