"""Reading a session file: its journal and its state, as one consistent snapshot.

A read runs in one SQLite read transaction, so it sees the journal and the state as one
committed moment, while a writer (in this process or another) goes on appending. Rows
are decoded lazily: a damaged entry is named when it is reached.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from pydantic import JsonValue

from context_graph.errors import StoreCorruptError
from orchestrator.persistence.codec import JournalEntry, decode_entry
from orchestrator.persistence.schema import SELECT_ENTRIES, SELECT_STATE, decode_state

__all__ = ["Snapshot", "read_snapshot"]


@dataclass(frozen=True, slots=True)
class Snapshot:
    """A session file as one committed moment holds it.

    Attributes:
        path: The session file, for messages.
        rows: The journal's rows, in order, not decoded yet.
        state: The latest value of every state key (empty unless asked for).
    """

    path: str
    rows: list[Any]
    state: dict[str, JsonValue]

    def entries(self) -> Iterator[JournalEntry]:
        """The journal's entries in order, each decoded when reached.

        Raises:
            StoreCorruptError: an entry was changed or does not decode (names it).
        """
        return (decode_entry(self.path, *row) for row in self.rows)


def read_snapshot(connection: sqlite3.Connection, path: str, *, with_state: bool) -> Snapshot:
    """Read the journal (and the state, if `with_state`) in one read transaction.

    Raises:
        StoreCorruptError: SQLite cannot read the file, or a state value is not JSON.
    """
    try:
        connection.execute("BEGIN")  # one snapshot for the journal and the state
        try:
            rows = connection.execute(SELECT_ENTRIES).fetchall()
            states = connection.execute(SELECT_STATE).fetchall() if with_state else []
        except BaseException:
            # Never leave the read open: it would pin the snapshot and refuse the
            # writer's next BEGIN on this connection.
            with contextlib.suppress(sqlite3.Error):
                connection.execute("ROLLBACK")
            raise
        connection.execute("COMMIT")
    except sqlite3.Error as exc:
        raise StoreCorruptError(path, f"SQLite cannot read it: {exc}") from exc
    return Snapshot(path, rows, {key: decode_state(path, key, value) for key, value in states})
