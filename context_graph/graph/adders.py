"""The `add_*` shorthands: one typed event each, handed to the class's own `ingest`.

`ContextGraph` and the orchestrator's `ContextManager` take batches through their own
`ingest` (the manager's also tells its bus and triggers); both get the shorthands from
here, so the two cannot drift apart. Each builds its event with `make_event`, so a wrong
value is an `IngestError` naming the field, as it is for a batch. The keywords are typed
(`event_fields`), and a keyword the event does not have is a `TypeError` naming the
accepted ones, as Python raises for a function's own parameters.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeAlias, Unpack

from pydantic import BaseModel

from context_graph._keywords import check_keywords
from context_graph.errors import IngestError
from context_graph.graph.content import ContentPart
from context_graph.graph.event_fields import (
    AssistantFields,
    EventFields,
    FileReadFields,
    SubagentFields,
    ToolResultFields,
    UserFields,
    WithdrawalFields,
)
from context_graph.graph.events import (
    AgentEvent,
    AssistantTurn,
    FileRead,
    Note,
    SubagentResult,
    SystemPrompt,
    ToolCall,
    ToolResult,
    UserTurn,
    Withdrawal,
    make_event,
)
from context_graph.graph.sdk_replies import is_reply, read_message

__all__ = ["Content", "EventAdders", "ToolCallInput"]

Content: TypeAlias = str | Sequence[ContentPart]

ToolCallInput: TypeAlias = ToolCall | Mapping[str, Any] | BaseModel
"""A tool call in any shape `ToolCall` reads: ours, or an SDK's (its object or its dict)."""


class EventAdders:
    """`add_system`, `add_user`, `add_assistant`, ...; mixed into whatever has `ingest`.

    An interface helper, not a part of its host: it holds no state, reads no attribute
    and calls nothing of the host but `ingest`.
    """

    if TYPE_CHECKING:

        def ingest(self, events: Iterable[AgentEvent | dict[str, Any]]) -> tuple[str, ...]:
            """Add a batch of events, whole or not at all (the host's own method)."""

    def add_system(self, content: Content, **fields: Unpack[EventFields]) -> str:
        """Add the system prompt (pinned by default); return its node id."""
        check_keywords("add_system()", fields, EventFields, explicit=("content",))
        return self.ingest((make_event(SystemPrompt, content=content, **fields),))[0]

    def add_user(self, content: Content, **fields: Unpack[UserFields]) -> str:
        """Add a user turn; return its node id."""
        check_keywords("add_user()", fields, UserFields, explicit=("content",))
        return self.ingest((make_event(UserTurn, content=content, **fields),))[0]

    def add_assistant(
        self,
        content: Content | Mapping[str, Any] | BaseModel | None = (),
        tool_calls: Sequence[ToolCallInput] = (),
        **fields: Unpack[AssistantFields],
    ) -> tuple[str, ...]:
        """Add an assistant turn and its tool calls; return the assistant and call ids.

        Args:
            content: Text or parts (`None` for none, as OpenAI sends with tool calls); or
                a whole reply message, as an SDK object or its dict: an OpenAI
                `ChatCompletionMessage`, an Anthropic `Message`, a Gemini `Content`
                (see `context_graph.graph.sdk_replies`).
            tool_calls: The turn's calls, each in any shape `ToolCall` reads; with a
                whole message, its own calls are taken and this must be empty.
            **fields: More `AssistantTurn` fields (`model=`, `meta=`, ...).

        Raises:
            IngestError: a value is malformed (names the field); nothing was added.
            TypeError: a keyword is none of these (names it); nothing was added.
        """
        check_keywords(
            "add_assistant()", fields, AssistantFields, explicit=("content", "tool_calls")
        )
        if is_reply(content):
            if tool_calls:
                msg = "a whole reply message carries its own tool calls; do not pass `tool_calls`"
                raise IngestError(msg)
            return self.ingest((read_message(content, **fields),))
        event = make_event(AssistantTurn, content=content, tool_calls=tool_calls, **fields)
        return self.ingest((event,))

    def add_tool_result(
        self,
        call_id: str,
        content: Content,
        *,
        is_error: bool = False,
        exit_code: int | None = None,
        **fields: Unpack[ToolResultFields],
    ) -> str:
        """Add the result of the open call `call_id`; return its node id.

        Args:
            call_id: The call it answers.
            content: The output.
            is_error: Whether the tool reported an error.
            exit_code: The command's exit status, when it reported one (an int).
            **fields: More `ToolResult` fields (`meta=`, `timestamp=`, ...).

        Raises:
            IngestError: a value is malformed (names the field); nothing was added.
            TypeError: a keyword is none of these (names it); nothing was added.
        """
        check_keywords(
            "add_tool_result()",
            fields,
            ToolResultFields,
            explicit=("call_id", "content", "is_error", "exit_code"),
        )
        event = make_event(
            ToolResult,
            call_id=call_id,
            content=content,
            is_error=is_error,
            exit_code=exit_code,
            **fields,
        )
        return self.ingest((event,))[0]

    def add_file_read(self, path: str, content: Content, **fields: Unpack[FileReadFields]) -> str:
        """Add a file as read (answering `call_id=` when given); return its node id."""
        check_keywords("add_file_read()", fields, FileReadFields, explicit=("path", "content"))
        return self.ingest((make_event(FileRead, path=path, content=content, **fields),))[0]

    def add_subagent_result(self, content: Content, **fields: Unpack[SubagentFields]) -> str:
        """Add a sub-agent's final answer (answering `call_id=` when given)."""
        check_keywords("add_subagent_result()", fields, SubagentFields, explicit=("content",))
        return self.ingest((make_event(SubagentResult, content=content, **fields),))[0]

    def add_note(self, content: Content, **fields: Unpack[EventFields]) -> str:
        """Add a pinned note; return its node id."""
        check_keywords("add_note()", fields, EventFields, explicit=("content",))
        return self.ingest((make_event(Note, content=content, **fields),))[0]

    def withdraw(self, node_ids: Iterable[str], **fields: Unpack[WithdrawalFields]) -> None:
        """Withdraw recorded nodes: the record keeps them, no view shows them again.

        See `Withdrawal` for what may be withdrawn (a call goes with its answer, an
        assistant turn with its calls; an answer alone opens its call again).

        Args:
            node_ids: The pristine nodes, each once.
            **fields: More `Withdrawal` fields (`meta=`, `timestamp=`).

        Raises:
            IngestError: an id is unknown, derived or withdrawn already, or the nodes
                cannot go as named (the reason names the node); nothing was withdrawn.
            TypeError: a keyword is not a `Withdrawal` field (names it).
        """
        check_keywords("withdraw()", fields, WithdrawalFields, explicit=("node_ids",))
        if isinstance(node_ids, str | bytes):
            msg = f"withdraw: pass a list of node ids, not one string ({node_ids!r})"
            raise IngestError(msg)
        self.ingest((make_event(Withdrawal, node_ids=tuple(node_ids), **fields),))
