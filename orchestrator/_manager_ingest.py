"""The ingest side of `ContextManager`: one path for every event into the pristine record.

Every `add_*` method builds its typed event and goes through `ingest`, so that the bus,
the triggers and (with a store, whose graph journals each batch) the session file see
each event exactly once, whichever way the caller fed it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

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
    coerce_events,
)
from context_graph.graph import Content, ContextGraph
from orchestrator.bus import EventBus

__all__ = ["IngestMethods"]


class IngestMethods:
    """Feeding events; mixed into `ContextManager`, which provides the hooks below."""

    _raw: ContextGraph
    _bus: EventBus
    _unsent: set[str]

    def _check_batch(self, batch: Sequence[AgentEvent]) -> None:
        """Called with a checked batch before it is added; raise to refuse it whole."""

    def _on_ingest(self) -> None:
        """Called after every batch that added nodes (the manager evaluates triggers)."""

    def ingest(self, events: Iterable[AgentEvent | dict[str, Any]]) -> tuple[str, ...]:
        """Add a batch of events, whole or not at all; return the new node ids.

        Raises:
            IngestError: an event is malformed or inconsistent; nothing was added.
        """
        batch = coerce_events(events)
        self._check_batch(batch)
        ids = self._raw.ingest(batch)
        self._unsent.update(ids)  # until a request carries them (see `_relief_limit`)
        for node_id in ids:
            self._bus.emit("node_added", node_id=node_id, node=self._raw[node_id])
        self._on_ingest()
        return ids

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
