"""A session kept by `ContextManager.open` (a proxy's thread file), read as a trace.

`inspect`, `render` and `replay --html` read traces; a session file holds the same
events in its journal, batch by batch. `stored_session` reads them back, read only
(a process writing the file is not disturbed), so the commands work on a proxied
session's file as on the agent's own transcript.
"""

from __future__ import annotations

import re
from pathlib import Path

from context_graph.graph.events import AgentEvent
from context_graph.importers import ImportedSession
from orchestrator.persistence.factory import open_store
from orchestrator.persistence.sqlite.store import SQLiteStore

__all__ = ["is_session_file", "is_store_url", "stored_session"]

_STORE_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")
"""`scheme://`: a session in a database (`postgresql://...#NAME`), not a file."""


def is_store_url(text: str) -> bool:
    """Whether a command's input names a session store by URL rather than a file."""
    return bool(_STORE_URL.match(text))


_SQLITE_HEADER = b"SQLite format 3\x00"
"""The first bytes of every SQLite database file."""


def is_session_file(path: Path) -> bool:
    """Whether `path` is a SQLite file (a session store), not a JSON trace."""
    try:
        with path.open("rb") as file:
            return file.read(len(_SQLITE_HEADER)) == _SQLITE_HEADER
    except OSError:
        return False  # reading it as a trace says what is wrong


def stored_session(path: Path | str) -> ImportedSession:
    """The events the session at `path` recorded, in order, as one session.

    `path` is a session file, or a database URL naming the session in its fragment
    (`postgresql://...#proxy/anthropic/<session>/thread-0`, as `proxy sessions` lists it).

    Raises:
        StoreError: the file is not a session this version reads.
    """
    store = open_store(path, read_only=True)
    try:
        events: list[AgentEvent] = []
        if isinstance(store, SQLiteStore) or isinstance(path, str):
            for entry in store.journal():  # type: ignore[attr-defined]  # both stores have one
                events.extend(entry.events)
    finally:
        store.close()
    name = path.partition("#")[2] if isinstance(path, str) else path.stem
    return ImportedSession(name, events, meta={"source": "session store"})
