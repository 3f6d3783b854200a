"""What the data layer remembers across calls, process-wide, and the one way to forget it.

Today that is the entities `critical_entities` found per text and per line. Clearing
changes no answer: it frees the memory and makes the next call pay in full, as in a new
process. `processors.clear_caches` calls this before clearing its own memos.
"""

from __future__ import annotations

from context_graph.entities import clear_cache as _clear_entities

__all__ = ["clear_caches"]


def clear_caches() -> None:
    """Forget every process-wide memo of `context_graph`."""
    _clear_entities()
