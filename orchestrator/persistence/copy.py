"""`copy_session`: a session moved from one store to another, entry for entry.

Any location `open_store` reads works on either side, so a session goes from a SQLite
file into PostgreSQL and back. The entries are copied as recorded (not replayed, so no
token is counted and no time changes), with the latest state, in one transaction of the
destination: a failed copy leaves it empty. The destination must not hold a session yet.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from context_graph.errors import StoreError
from orchestrator.persistence.factory import open_store
from orchestrator.persistence.postgres.store import PostgresStore
from orchestrator.persistence.protocol import SessionStore
from orchestrator.persistence.sqlite.store import SQLiteStore

__all__ = ["Copied", "CounterName", "copy_session"]


class CounterName:
    """A token counter known by its name only: a copy opens both stores, counts nothing.

    Args:
        name: The name the session was recorded with (`tiktoken:cl100k_base`, `words`).
    """

    def __init__(self, name: str) -> None:
        self._name = name

    @property
    def name(self) -> str:
        """The recorded counter's name."""
        return self._name

    def count(self, text: str) -> int:
        """Refused: a copy never counts.

        Raises:
            StoreError: always.
        """
        msg = f"a copy counts no tokens, but it was asked to count {len(text)} characters"
        raise StoreError(self._name, msg)


@dataclass(frozen=True, slots=True)
class Copied:
    """What `copy_session` copied.

    Attributes:
        entries: How many log entries.
        state: How many state keys.
    """

    entries: int
    state: int


def copy_session(
    source: str | os.PathLike[str], destination: str | os.PathLike[str], *, counter: str
) -> Copied:
    """Copy the session at `source` into the new session at `destination`.

    Args:
        source: A session file or a database URL naming a session (`...#name`).
        destination: The same forms; it must not hold a session yet.
        counter: The token counter's name the session was recorded with.

    Raises:
        StoreError: either store cannot be opened (a wrong counter is named), or the
            destination already holds entries; nothing is written then.
    """
    names = CounterName(counter)
    reader = _copyable(open_store(source, counter=names, read_only=True))
    try:
        entries = list(reader.journal())
        state = reader.state()
    finally:
        reader.close()
    writer = _copyable(open_store(destination, counter=names))
    try:
        held = len(list(writer.journal()))
        if held or writer.state():
            msg = (
                f"already holds a session ({held} entries); copy into a new file or a "
                "new session name"
            )
            raise StoreError(writer.location, msg)
        with writer.atomic():
            for entry in entries:
                writer.append_entry(entry)
            if state:
                writer.put_states(state)
    finally:
        writer.close()
    return Copied(len(entries), len(state))


def _copyable(store: SessionStore) -> SQLiteStore | PostgresStore:
    """The store, as one of the backends whose entries can be read and appended."""
    if isinstance(store, (SQLiteStore, PostgresStore)):
        return store
    store.close()
    raise StoreError(store.location, "is not a store whose entries can be copied")
