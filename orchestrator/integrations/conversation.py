"""`Conversation`: what one managed SDK method has taken in of its caller's conversation.

A managed call (`orchestrator.integrations.clients`) has its conversation taken in here
(`take`), then its reply (`give`). The caller passes its whole conversation on every
call, as it would to the bare client. While the list extends the one the last call
passed, the items after those are ingested; the reply is recognised where the loop
appended it (the model's items right after the previous call's conversation) and
skipped, since it was ingested when it arrived. A system prompt is ingested when it
differs from the previous call's.

A list that does not extend the last call's (the first call of a wrapper over a
reopened session, a caller that passes only its new items) is matched against the
manager's record by content (`held_prefix`): the items after the part the record holds
are ingested, read after the record's open calls so that their answers pair. A list
that the record holds whole adds nothing; one that leaves the record's conversation
partway (an item changed or left out) is refused (`ConfigurationError`): the record is
append-only.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol, TypeVar

from context_graph.errors import ConfigurationError, IngestError
from context_graph.graph.context_graph import ContextGraph
from context_graph.graph.events import AgentEvent
from context_graph.tokens.usage import Usage
from orchestrator.integrations.clients_apis import Api
from orchestrator.integrations.held import event_key, held_prefix, node_key, open_calls
from orchestrator.integrations.streams import Renderer

__all__ = ["Conversation", "Manager", "item_keys"]


_T = TypeVar("_T")


class Manager(Renderer, Protocol):
    """What a managed client needs of its `ContextManager`."""

    @property
    def raw(self) -> ContextGraph:
        """The pristine record."""

    def ingest(self, events: Iterable[AgentEvent | dict[str, Any]]) -> tuple[str, ...]:
        """Add a batch of events, whole or not at all."""

    def restore_urls(self, value: _T) -> _T:
        """`value` with every URL the session shortened restored."""

    def report_usage(self, usage: int | Usage) -> float:
        """Report the provider's usage of the last render's call."""


class Conversation:
    """What one managed method has taken in of its caller's conversation.

    Args:
        manager: The manager the conversation is kept in.
        api: The method.
    """

    def __init__(self, manager: Manager, api: Api) -> None:
        self._manager = manager
        self._api = api
        self._keys: list[str] = []
        """The caller's items taken in (those of the last call), as JSON."""
        self._reply: list[Any] = []
        """The last reply, as the items a loop appends."""
        self._reply_due = False
        """The reply is not yet in a conversation the caller passed."""
        self._system: Any = None
        self._taken = 0

    @property
    def taken(self) -> int:
        """How many calls' conversations were taken in (a stream's reply must be of the last)."""
        return self._taken

    @property
    def keys(self) -> tuple[str, ...]:
        """The items of the last call's conversation, as `item_keys` (empty: none taken)."""
        return tuple(self._keys)

    @property
    def api(self) -> Api:
        """The method this conversation belongs to."""
        return self._api

    def take(
        self, kwargs: Mapping[str, Any], *, read: tuple[list[Any], list[str]] | None = None
    ) -> None:
        """Ingest what is new in a call's conversation and system prompt.

        `read` is the call's history and its `item_keys`, when the caller has read them
        already (the gateway has: a long history is copied and encoded once, not twice).

        Raises:
            ConfigurationError: the conversation is not a list, or leaves the record's
                conversation partway (an item changed or left out).
            IngestError: a new item is malformed; nothing was ingested.
        """
        api = self._api
        if read is None:
            history = api.read_history(kwargs)
            keys = item_keys(history)
        else:
            history, keys = read
        system = api.read_system(kwargs)
        if self._keys and keys[: len(self._keys)] == self._keys:
            self._extend(history, system)
        else:
            self._resume(history, system)
        self._keys, self._system, self._reply_due = keys, system, False
        self._taken += 1

    def _extend(self, history: list[Any], system: Any) -> None:
        """Ingest the items after those of the last call (and the reply the loop appended)."""
        start = len(self._keys) + self._appended_reply(history)
        events = self._api.events(
            system if system != self._system else None, [*self._reply, *history[start:]]
        )
        # The last reply leads the items only so that answers to its calls pair with them.
        skip = len(self._reply)
        fresh = [e for e in events if _after(e, skip)]
        if fresh:
            self._manager.ingest(fresh)

    def _resume(self, history: list[Any], system: Any) -> None:
        """Ingest what the record does not hold of a conversation this client did not pass.

        The record's content decides (`held_prefix`): a resumed loop may pass its whole
        saved conversation or only what came after it, and a manager reopened from its
        session file holds the rest.
        """
        api, record = self._api, self._manager.raw
        lead = api.lead(open_calls(record))
        events, skip = self._read(history, lead)
        held = held_prefix(events, record, items=len(history), lead=skip)
        if held.matched and held.rest and held.items < len(history):
            msg = (
                f"{api.name}: `{api.history_key}[{held.items}]` is not the item the record "
                f"holds after `{api.history_key}[{held.items - 1}]`; pass the conversation "
                "as it was, extended, or only the items after it (the record is "
                "append-only: start a new manager for a rewritten history)"
            )
            raise ConfigurationError(msg)
        fresh = [
            *held.systems,
            *(e for e in api.events(None, [*lead, *history[held.items :]]) if _after(e, len(lead))),
        ]
        if system is not None:
            prompt = api.events(system, [])
            if prompt and event_key(prompt[0]) != _latest_system(record):
                fresh = [*prompt, *fresh]
        if fresh:
            self._manager.ingest(fresh)

    def _read(self, history: list[Any], lead: list[Any]) -> tuple[list[AgentEvent], int]:
        """The events of a whole list, and how many lead items were read before it.

        A list that opens with answers to the record's open calls (a resumed loop
        passing only its new items) is read after `lead`, the items making those calls.
        """
        api = self._api
        try:
            return api.events(None, history), 0
        except IngestError as error:
            if not lead:
                raise
            try:
                events = api.events(None, [*lead, *history])
            except IngestError:
                raise error from None  # its place is in the caller's own list
        return [e for e in events if _after(e, len(lead))], len(lead)

    def _appended_reply(self, history: list[Any]) -> int:
        """How many items of the last reply the caller appended where they belong."""
        if not self._reply_due:
            return 0
        count = 0
        while (
            count < len(self._reply)
            and len(self._keys) + count < len(history)
            and self._api.is_model(history[len(self._keys) + count])
        ):
            count += 1
        return count

    def give(self, response: Any) -> None:
        """Ingest a response's reply and report its usage (`report_usage`).

        Raises:
            IngestError: the response, or its usage, is malformed; nothing was ingested.
        """
        reply = self._api.read_reply(response)
        self._manager.ingest(reply.events)
        if reply.usage is not None:
            self._manager.report_usage(reply.usage)
        self._reply, self._reply_due = reply.items, True


def item_keys(items: Sequence[Any]) -> list[str]:
    """Conversation items as comparable JSON (a list extends another when its keys do)."""
    return [json.dumps(item, sort_keys=True) for item in items]


def _latest_system(record: ContextGraph) -> Any:
    """The key of the record's latest system prompt (`None`: none)."""
    ids = record.by_kind("system")
    return node_key(record[ids[-1]]) if ids else None


def _after(event: AgentEvent, skip: int) -> bool:
    """Whether an event was read from the system prompt or an item at `skip` or later."""
    index = None if event.source is None else event.source.index
    return index is None or index >= skip
