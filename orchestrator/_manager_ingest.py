"""The ingest side of `ContextManager`: one path for every event into the pristine record.

Every `add_*` method (`context_graph.graph.adders.EventAdders`, shared with `ContextGraph`)
builds its typed event and goes through `ingest`, so that the bus, the triggers and
(with a store, whose graph journals each batch) the session file see each event exactly
once, whichever way the caller fed it. `add_response` takes a provider SDK's whole
response (read by `context_graph.graph.sdk_replies`) and reports its prompt usage too.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from context_graph.graph.adders import EventAdders
from context_graph.graph.context_graph import ContextGraph
from context_graph.graph.events import AgentEvent, coerce_events
from context_graph.graph.sdk_replies import read_response
from context_graph.render import RenderResult
from orchestrator.bus import EventBus

__all__ = ["IngestMethods"]


class IngestMethods(EventAdders):
    """Feeding events; mixed into `ContextManager`, which provides the hooks below."""

    _raw: ContextGraph
    _bus: EventBus
    _unsent: set[str]
    _last: RenderResult | None

    if TYPE_CHECKING:

        def report_usage(self, prompt_tokens: int) -> float: ...

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

    def add_response(self, response: object, **fields: Any) -> tuple[str, ...]:
        """Add the assistant turn of a provider's whole response; return the new node ids.

        Takes an OpenAI `ChatCompletion` (`choices[0].message`), an Anthropic `Message` or
        a Gemini `GenerateContentResponse` (`candidates[0].content`), as the SDK's object
        or its dict. When a render came before, the response's prompt tokens are reported
        for calibration (`report_usage`): the response answers that request.

        Args:
            response: The response.
            **fields: More `AssistantTurn` fields (`meta=`, `timestamp=`, ...).

        Raises:
            IngestError: the response is malformed or of no kind recognized (says what
                is expected); nothing was added or reported.
        """
        reply = read_response(response, **fields)
        ids = self.ingest((reply.turn,))
        if reply.prompt_tokens and self._last is not None:
            self.report_usage(reply.prompt_tokens)
        return ids
