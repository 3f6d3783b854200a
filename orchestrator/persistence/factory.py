"""`open_store`: the session store for a location, the backend picked from its form.

A path (text or `os.PathLike`) is a SQLite session file (`SQLiteStore`). A URL names a
database server: `postgresql://` (and `postgres://`) is a session in PostgreSQL
(`PostgresStore`, named by the URL's fragment or `session=`); any other scheme is
refused. So the manager and the CLI name a location, never a backend.
"""

from __future__ import annotations

import os
import re

from context_graph.errors import ConfigurationError
from context_graph.tokens.counting import TokenCounter
from orchestrator.persistence.postgres.connect import redacted
from orchestrator.persistence.postgres.store import PostgresStore
from orchestrator.persistence.protocol import SessionStore
from orchestrator.persistence.sqlite.store import SQLiteStore

__all__ = ["open_store"]

# `scheme://`, as RFC 3986 spells a scheme: what tells a URL from a path.
_URL = re.compile(r"^(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*)://")
_POSTGRESQL = frozenset({"postgresql", "postgres"})


def open_store(
    location: str | os.PathLike[str],
    *,
    counter: TokenCounter | None = None,
    read_only: bool = False,
    durable: bool = True,
    session: str | None = None,
) -> SessionStore:
    """Open the session kept at `location`, creating it when it does not exist.

    Args:
        location: A session file's path, or a database URL.
        counter: The token counter the session is recorded with (the default counter
            when `None`); the store remembers it and must be reopened with it.
        read_only: Read only; every write is refused, and no writer is kept out.
        durable: Make every write survive a power cut; `False` survives a crash of the
            process but may lose the last writes on a power cut.
        session: The session's name inside a database (a URL's fragment may name it
            instead); a file holds one session and takes none.

    Raises:
        ConfigurationError: `location` is a URL of a backend this version does not have,
            a database URL names no session, a file is given a session name, or the
            `[postgres]` extra is missing.
        StoreError: the store cannot be opened (see `SQLiteStore.open` for a file,
            `PostgresStore.open` for a database).
    """
    if isinstance(location, str):
        url = _URL.match(location)
        if url is not None:
            scheme = url["scheme"].lower()
            if scheme in _POSTGRESQL:
                return PostgresStore.open(
                    location,
                    session=session,
                    counter=counter,
                    read_only=read_only,
                    durable=durable,
                )
            msg = (
                f"session store {redacted(location)!r}: no backend reads `{scheme}://` "
                "URLs; give a PostgreSQL URL or the path of a SQLite session file"
            )
            raise ConfigurationError(msg)
    if session is not None:
        msg = (
            f"session store {os.fspath(location)!r}: a session file holds one session, so "
            f"session={session!r} does not apply; give a PostgreSQL URL to name sessions"
        )
        raise ConfigurationError(msg)
    return SQLiteStore.open(location, counter=counter, read_only=read_only, durable=durable)
