"""Reading a shared session: its row found or made on open, its log read as one snapshot.

A read runs in one REPEATABLE READ transaction, so the log, the head and the state are
one committed moment while other workers go on appending. Entries are decoded lazily
(`Snapshot.entries`): a damaged one is named when it is reached.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from importlib import metadata
from typing import Any

from pydantic import JsonValue

from context_graph.errors import StoreError
from orchestrator.persistence.codec import JournalEntry, decode_entry
from orchestrator.persistence.postgres.schema import migrate
from orchestrator.persistence.schema import decode_state

__all__ = ["LogSnapshot", "open_session", "read_log"]

_SELECT_LOG = (
    "SELECT l.seq, l.kind, c.body, l.checksum FROM cg_log l"
    " JOIN cg_content c ON c.digest = l.digest"
    " WHERE l.session_id = %s AND l.seq > %s ORDER BY l.seq"
)


@dataclass(frozen=True, slots=True)
class LogSnapshot:
    """A session's log after some entry, its head and its state, as of one moment.

    Attributes:
        location: The store, for messages.
        head: The last entry's sequence number.
        rows: The log's rows after the one asked for, in order, not decoded yet.
        state: The latest value of every state key.
        versions: How many times each state key was written.
    """

    location: str
    head: int
    rows: list[Any]
    state: dict[str, JsonValue]
    versions: dict[str, int]

    def entries(self) -> Iterator[JournalEntry]:
        """The entries in order, each decoded when reached.

        Raises:
            StoreCorruptError: an entry was changed or does not decode (names it).
        """
        for seq, kind, body, digest in self.rows:
            yield decode_entry(self.location, seq, kind, body.encode("utf-8"), digest)


def open_session(
    connection: Any, location: str, name: str, counter: str, *, read_only: bool
) -> int:
    """Migrate the database, then the session's row id (made for a new writable one).

    Runs in the transaction `connection` has begun (`run_on`); the migration commits it.

    Raises:
        StoreFormatError: the database's schema is newer than this version knows.
        StoreError: a read-only open of a session the database lacks, or a session
            recorded with another token counter.
    """
    migrate(connection, location)
    if not read_only:
        connection.execute(
            "INSERT INTO cg_sessions (name, counter, created_by) VALUES (%s, %s, %s)"
            " ON CONFLICT (name) DO NOTHING",
            (name, counter, _library_version()),
        )
    row = connection.execute(
        "SELECT id, counter FROM cg_sessions WHERE name = %s", (name,)
    ).fetchone()
    if row is None:
        msg = "the database has no such session; open it without read_only=True to start it"
        raise StoreError(location, msg)
    if row[1] != counter:
        msg = (
            f"the session was recorded with the token counter `{row[1]}`, not `{counter}`; "
            "open it with that counter (the recorded proposals' token counts were "
            "checked with it)"
        )
        raise StoreError(location, msg)
    return int(row[0])


def read_log(
    connection: Any, location: str, session_id: int, *, after: int, with_state: bool
) -> LogSnapshot:
    """The session's entries after `after` (and its state, if asked), in one snapshot.

    Runs first in the transaction `connection` has begun (`run_on`).

    Raises:
        StoreCorruptError: a state value is not JSON.
        psycopg.Error: the server failed (the caller translates it).
    """
    # One snapshot for the head, the log and the state, while writers go on.
    connection.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
    found = connection.execute(
        "SELECT head FROM cg_sessions WHERE id = %s", (session_id,)
    ).fetchone()
    rows = connection.execute(_SELECT_LOG, (session_id, after)).fetchall()
    states = (
        connection.execute(
            "SELECT key, value, version FROM cg_state WHERE session_id = %s", (session_id,)
        ).fetchall()
        if with_state
        else []
    )
    if found is None:
        raise StoreError(location, "the session was deleted from the database")
    state = {key: decode_state(location, key, value.encode("utf-8")) for key, value, _ in states}
    versions = {key: int(version) for key, _, version in states}
    return LogSnapshot(location, int(found[0]), rows, state, versions)


def _library_version() -> str:
    try:
        return metadata.version("context-graph")
    except metadata.PackageNotFoundError:
        return "unknown"
