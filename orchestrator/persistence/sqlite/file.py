"""Opening a session file: the path checked, the file claimed, the schema prepared.

The steps run in the order that leaves nothing behind on a refusal: the path is checked
first (nothing is created in a missing directory), then the file is claimed (`lock`:
its one descriptor in this process) and its first bytes checked (a file that is not
SQLite is never locked or opened by SQLite), then the writer lock is taken and the
connection opened and prepared; a failure at any step gives back all it took.
"""

from __future__ import annotations

import sqlite3
from functools import partial
from pathlib import Path

from context_graph.errors import StoreError
from orchestrator.persistence.schema import check_head, connect, prepare
from orchestrator.persistence.sqlite.lock import FileClaim, claim_file

__all__ = ["open_file"]


def open_file(
    session: Path, counter: str, *, read_only: bool, durable: bool
) -> tuple[sqlite3.Connection, FileClaim]:
    """The prepared connection to `session` and the store's claim on the file.

    A writable open's claim holds the writer lock; a read-only one only keeps the file's
    descriptor (see `lock`). Release the claim after closing the connection.

    Args:
        session: The session file; its directory must exist.
        counter: The name of the token counter the session is recorded with.
        read_only: Open without the writer lock (the file must exist).
        durable: Sync every write to disk (`synchronous=FULL`).

    Raises:
        StoreLockedError: another writable store has the file open.
        StoreFormatError: not a session file this version can read.
        StoreCorruptError: SQLite cannot read it.
        StoreError: the directory or (read-only) the file is missing, or the counter is
            not the one the session was recorded with.
    """
    name = str(session)
    if not session.parent.is_dir():
        raise StoreError(name, f"directory {session.parent} does not exist; create it first")
    if session.is_dir():
        raise StoreError(name, "is a directory; give the path of a session file")
    if read_only and not session.exists():
        raise StoreError(name, "does not exist; open it without read_only=True to start one")
    claim = claim_file(session, writer=not read_only, check=partial(check_head, name))
    try:
        connection = connect(session, read_only=read_only)
        try:
            prepare(connection, name, counter, read_only=read_only, durable=durable)
        except BaseException:
            connection.close()
            raise
    except BaseException:
        claim.release()
        raise
    return connection, claim
