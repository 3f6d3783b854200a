"""A session kept by `ContextManager.open` (a proxy's thread file), read as a trace.

`inspect`, `render` and `replay --html` read traces; a session file holds the same
events in its journal, batch by batch. `stored_session` reads them back, read only
(a process writing the file is not disturbed), so the commands work on a proxied
session's file as on the agent's own transcript.
"""

from __future__ import annotations

from pathlib import Path

from context_graph.graph.events import AgentEvent
from context_graph.importers import ImportedSession
from orchestrator.persistence.factory import open_store
from orchestrator.persistence.sqlite.store import SQLiteStore

__all__ = ["is_session_file", "stored_session"]

_SQLITE_HEADER = b"SQLite format 3\x00"
"""The first bytes of every SQLite database file."""


def is_session_file(path: Path) -> bool:
    """Whether `path` is a SQLite file (a session store), not a JSON trace."""
    try:
        with path.open("rb") as file:
            return file.read(len(_SQLITE_HEADER)) == _SQLITE_HEADER
    except OSError:
        return False  # reading it as a trace says what is wrong


def stored_session(path: Path) -> ImportedSession:
    """The events the session file at `path` recorded, in order, as one session.

    Raises:
        StoreError: the file is not a session this version reads.
    """
    store = open_store(path, read_only=True)
    try:
        events: list[AgentEvent] = []
        if isinstance(store, SQLiteStore):
            for entry in store.journal():
                events.extend(entry.events)
    finally:
        store.close()
    return ImportedSession(path.stem, events, meta={"source": "session store"})
