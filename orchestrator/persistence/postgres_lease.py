"""The compaction lease of a shared session, and its fencing token.

One worker compacts a session at a time: it takes the lease (the session row's
`lease_holder` until `lease_until`), which bumps the row's `lease_token`. While it holds
the lease, every transaction it writes checks that the token is still its own, so a
compactor that stalled past its lease (and lost it to another) has its result refused
by the database itself, not by a clock on the worker. The lease ends when released, or
by expiring; the token only ever grows.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from context_graph.errors import StoreConflictError

__all__ = ["Lease", "acquire_lease", "release_lease"]

_ACQUIRE = (
    "UPDATE cg_sessions SET lease_holder = %(holder)s, lease_token = lease_token + 1,"
    " lease_until = now() + make_interval(secs => %(ttl)s)"
    " WHERE id = %(id)s AND (lease_until IS NULL OR lease_until < now())"
    " RETURNING lease_token"
)
_HOLDER = "SELECT lease_holder, lease_token, lease_until FROM cg_sessions WHERE id = %s"
_RELEASE = (
    "UPDATE cg_sessions SET lease_holder = NULL, lease_until = NULL"
    " WHERE id = %s AND lease_token = %s"
)


@dataclass(frozen=True, slots=True)
class Lease:
    """A compaction lease held on a session.

    Attributes:
        holder: Who holds it (a worker's name, for people reading the row).
        token: The fencing token: larger than every token handed out before it.
    """

    holder: str
    token: int


def acquire_lease(
    connection: Any, location: str, session_id: int, holder: str, ttl: float
) -> Lease:
    """Take the lease, if nobody holds it now.

    Raises:
        StoreConflictError: another worker holds it (names the holder and until when).
        psycopg.Error: the server failed (the caller translates it).
    """
    row = connection.execute(_ACQUIRE, {"holder": holder, "ttl": ttl, "id": session_id}).fetchone()
    if row is not None:
        return Lease(holder, int(row[0]))
    current = connection.execute(_HOLDER, (session_id,)).fetchone()
    other, token, until = current if current is not None else (None, 0, None)
    msg = (
        f"the session is being compacted by {other!r} (lease token {token}, until "
        f"{until}); let it finish, or take the lease once it has expired"
    )
    raise StoreConflictError(location, msg, expected=0, found=int(token))


def release_lease(connection: Any, session_id: int, lease: Lease) -> None:
    """Give the lease back, if it is still this one (an expired one may be another's)."""
    connection.execute(_RELEASE, (session_id, lease.token))
