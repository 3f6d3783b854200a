"""The `add_*` shorthands: one typed event each, handed to the class's own `ingest`.

`ContextGraph` and the orchestrator's `ContextManager` take batches through their own
`ingest` (the manager's also tells its bus and triggers); both get the shorthands from
here, so the two cannot drift apart.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, TypeAlias

from context_graph.events import (
    AgentEvent,
    AssistantTurn,
    FileRead,
    Note,
    SubagentResult,
    SystemPrompt,
    ToolCall,
    ToolResult,
    UserTurn,
)
from context_graph.nodes import ContentPart

__all__ = ["Content", "EventAdders"]

Content: TypeAlias = str | Sequence[ContentPart]


class EventAdders:
    """`add_system`, `add_user`, `add_assistant`, ...; mixed into whatever has `ingest`."""

    if TYPE_CHECKING:

        def ingest(self, events: Iterable[AgentEvent | dict[str, Any]]) -> tuple[str, ...]: ...

    def add_system(self, content: Content, **fields: Any) -> str:
        """Add the system prompt (pinned by default); return its node id."""
        return self.ingest((SystemPrompt(content=content, **fields),))[0]

    def add_user(self, content: Content, **fields: Any) -> str:
        """Add a user turn; return its node id."""
        return self.ingest((UserTurn(content=content, **fields),))[0]

    def add_assistant(
        self,
        content: Content = (),
        tool_calls: Sequence[ToolCall | dict[str, Any]] = (),
        **fields: Any,
    ) -> tuple[str, ...]:
        """Add an assistant turn and its tool calls; return the assistant and call ids."""
        calls = tuple(c if isinstance(c, ToolCall) else ToolCall(**c) for c in tool_calls)
        return self.ingest((AssistantTurn(content=content, tool_calls=calls, **fields),))

    def add_tool_result(
        self, call_id: str, content: Content, *, is_error: bool = False, **fields: Any
    ) -> str:
        """Add the result of the open call `call_id`; return its node id."""
        event = ToolResult(call_id=call_id, content=content, is_error=is_error, **fields)
        return self.ingest((event,))[0]

    def add_file_read(self, path: str, content: Content, **fields: Any) -> str:
        """Add a file as read (answering `call_id=` when given); return its node id."""
        return self.ingest((FileRead(path=path, content=content, **fields),))[0]

    def add_subagent_result(self, content: Content, **fields: Any) -> str:
        """Add a sub-agent's final answer (answering `call_id=` when given)."""
        return self.ingest((SubagentResult(content=content, **fields),))[0]

    def add_note(self, content: Content, **fields: Any) -> str:
        """Add a pinned note; return its node id."""
        return self.ingest((Note(content=content, **fields),))[0]
