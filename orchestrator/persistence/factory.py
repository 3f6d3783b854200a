"""`open_store`: the session store for a location, the backend picked from its form.

A path (text or `os.PathLike`) is a SQLite session file (`SQLiteStore`). A URL names a
database server; `postgresql://` (and `postgres://`) is the one planned, and is refused
until its backend exists, as is any other scheme. So the manager and the CLI name a
location, never a backend.
"""

from __future__ import annotations

import os
import re

from context_graph.errors import ConfigurationError
from context_graph.tokens.counting import TokenCounter
from orchestrator.persistence.protocol import SessionStore
from orchestrator.persistence.sqlite_store import SQLiteStore

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
) -> SessionStore:
    """Open the session kept at `location`, creating it when it does not exist.

    Args:
        location: A session file's path, or a database URL.
        counter: The token counter the session is recorded with (the default counter
            when `None`); the store remembers it and must be reopened with it.
        read_only: Read only; every write is refused, and no writer is kept out.
        durable: Make every write survive a power cut; `False` survives a crash of the
            process but may lose the last writes on a power cut.

    Raises:
        ConfigurationError: `location` is a URL of a backend this version does not have.
        StoreError: the store cannot be opened (see `SQLiteStore.open` for a file).
    """
    if isinstance(location, str):
        url = _URL.match(location)
        if url is not None:
            scheme = url["scheme"].lower()
            if scheme in _POSTGRESQL:
                msg = (
                    f"session store {_redacted(location)!r}: the PostgreSQL backend is not "
                    "available yet; give the path of a SQLite session file"
                )
                raise ConfigurationError(msg)
            msg = (
                f"session store {_redacted(location)!r}: no backend reads `{scheme}://` "
                "URLs; give the path of a SQLite session file"
            )
            raise ConfigurationError(msg)
    return SQLiteStore.open(location, counter=counter, read_only=read_only, durable=durable)


def _redacted(url: str) -> str:
    """`url` without the password of its user part, which must not reach a message."""
    return re.sub(r"^([^:/]+://[^:/@]*):[^@/]*@", r"\1:***@", url)
