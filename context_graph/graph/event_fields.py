"""The keyword fields each `add_*` shorthand passes on to its event, as `TypedDict`s.

`EventAdders.add_user(content, **fields: Unpack[UserFields])` lets mypy check the
keywords a caller passes; each class lists the fields of its event model that the
shorthand does not take as a parameter of its own. tests/context_graph/graph/
test_event_fields.py compares them with the models, so the two cannot drift apart.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TypedDict

from pydantic import JsonValue

from context_graph.errors import SourceLocation
from context_graph.graph.nodes import TriggerSpec

__all__ = [
    "AnswerFields",
    "AssistantFields",
    "EventFields",
    "FileReadFields",
    "SubagentFields",
    "ToolResultFields",
    "UserFields",
    "WithdrawalFields",
]


class WithdrawalFields(TypedDict, total=False):
    """The fields of a `Withdrawal` besides its node ids."""

    timestamp: str | None
    meta: Mapping[str, JsonValue]
    source: SourceLocation | None


class EventFields(WithdrawalFields, total=False):
    """The fields every event may carry (`SystemPrompt`, `Note` have no others)."""

    priority: int
    pinned: bool
    triggers: Sequence[TriggerSpec]


class UserFields(EventFields, total=False):
    """A `UserTurn`'s fields besides its content."""

    notice: bool


class AssistantFields(EventFields, total=False):
    """An `AssistantTurn`'s fields besides its content and tool calls."""

    message_id: str | None
    model: str | None


class ToolResultFields(EventFields, total=False):
    """A `ToolResult`'s fields besides its call id, content, error flag and exit code."""

    name: str | None


class AnswerFields(ToolResultFields, total=False):
    """What `FileRead` and `SubagentResult` share besides their content."""

    is_error: bool
    call_id: str | None


class FileReadFields(AnswerFields, total=False):
    """A `FileRead`'s fields besides its path and content."""

    line_range: tuple[int, int | None] | None


class SubagentFields(AnswerFields, total=False):
    """A `SubagentResult`'s fields besides its content."""

    agent_id: str | None
    transcript: str | None
