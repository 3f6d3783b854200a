"""A request taken in and rendered on a thread that other gateways write too.

Behind one PostgreSQL store, any number of gateways serve the same sessions: an agent's
requests may come to either, one after the other or at once. Each gateway holds its own
manager on the thread's database session; the store appends with a compare-and-set, so
a gateway whose view is behind gets `StoreConflictError` with nothing written. Before
each request a shared thread brings in what the others appended (`manager.refresh()`);
when it brought anything, the thread's `Conversation` is started afresh, so that the
request is matched against the record by content and only what no gateway took in yet
is ingested. A write that still loses the race is retried the same way, a few times:
the store's optimistic concurrency, never a wait on another gateway's compaction.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar

from context_graph.errors import StoreConflictError
from orchestrator.gateway.threads import Thread
from orchestrator.integrations.conversation import Conversation

__all__ = ["ATTEMPTS", "take_and_render"]

ATTEMPTS = 8
"""How many times a shared thread's request is tried before the conflict is the answer."""

_R = TypeVar("_R")


async def take_and_render(
    thread: Thread,
    request: Mapping[str, Any],
    read: tuple[list[Any], list[str]] | None,
    render: Callable[[], Awaitable[_R]],
) -> _R:
    """Take in what is new of `request` on `thread`, then `render()`; call it under its lock.

    `read` is `SessionTable.read(request)` when the caller has it (read once: a long
    history's copy and keys are costly).

    Raises:
        StoreConflictError: on a shared thread, the others won the race `ATTEMPTS` times.
        IngestError, ConfigurationError: as `Conversation.take`; nothing was ingested.
    """
    if not thread.shared:
        thread.conversation.take(request, read=read)
        return await render()
    for attempt in range(1, ATTEMPTS + 1):
        _catch_up(thread)
        try:
            thread.conversation.take(request, read=read)
            return await render()
        except StoreConflictError:
            if attempt == ATTEMPTS:
                raise
            thread.conversation = Conversation(thread.manager, thread.conversation.api)
    msg = "unreachable: the last attempt returns or raises"
    raise AssertionError(msg)


def _catch_up(thread: Thread) -> None:
    """Bring in what other gateways appended; read the next request against the record."""
    if thread.manager.refresh():
        thread.conversation = Conversation(thread.manager, thread.conversation.api)
