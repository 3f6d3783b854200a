"""`session_names`: the sessions a database holds under a name prefix.

A service that keeps many sessions in one database (the proxy keeps a session per
conversation, `proxy/<wire>/<session>/thread-<n>`) finds its own by their names.
"""

from __future__ import annotations

from typing import Any

from orchestrator.persistence.postgres.connect import PoolShare, parse_location, run_on

__all__ = ["session_names"]

_TIMEOUT = 10.0


def session_names(url: str, prefix: str) -> list[str]:
    """The names of the sessions in the database at `url` that start with `prefix`, sorted.

    A database without the store's tables holds none.

    Raises:
        ConfigurationError: the `[postgres]` extra is missing.
        StoreUnavailableError: the server cannot be reached.
        StoreError: the server refused the query.
    """
    where = parse_location(url.partition("#")[0], "listing")
    pool = PoolShare.take(where.conninfo, _TIMEOUT)
    try:
        rows: list[Any] = run_on(
            pool, where.display, "listing the sessions", lambda conn: _names(conn, prefix)
        )
    finally:
        PoolShare.give_back(where.conninfo, _TIMEOUT)
    return [str(row[0]) for row in rows]


def _names(connection: Any, prefix: str) -> list[Any]:
    found = connection.execute("SELECT to_regclass('cg_sessions')").fetchone()
    if found is None or found[0] is None:
        return []
    escaped = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    cursor = connection.execute(
        "SELECT name FROM cg_sessions WHERE name LIKE %s ORDER BY name", (escaped + "%",)
    )
    return list(cursor.fetchall())
