"""The compaction lease of a shared session, and its fencing token.

One worker compacts a session at a time: it takes the lease (the session row's
`lease_holder` until `lease_until`), which bumps the row's `lease_token`. While it holds
the lease, every transaction it writes checks that the token is still its own, so a
compactor that stalled past its lease (and lost it to another) has its result refused
by the database itself, not by a clock on the worker. The lease ends when released, or
by expiring; the token only ever grows. A store holds one lease at a time
(`LeaseKeeper`): taking it again while it holds it joins the lease it holds, so a
caller's own `lease()` block and the manager's compaction inside it share one token.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from typing import Any

from context_graph.errors import StoreConflictError, StoreError
from orchestrator.persistence.postgres.connect import run_on
from orchestrator.persistence.postgres.writer import LogWriter
from orchestrator.persistence.protocol import Lease

__all__ = ["Lease", "LeaseKeeper", "acquire_lease", "release_lease"]

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


class LeaseKeeper:
    """The lease one store holds, if any, and the fence it sets on the store's writer.

    Args:
        location: The store, for messages.
        session_id: The session's row.
        pool: Where connections come from.
        writer: The store's writer, whose writes check the lease's token.
    """

    def __init__(self, location: str, session_id: int, pool: Any, writer: LogWriter) -> None:
        self._location = location
        self._id = session_id
        self._pool = pool
        self._writer = writer
        self._held: Lease | None = None

    @contextlib.contextmanager
    def hold(
        self,
        holder: str,
        ttl: float,
        order: AbstractContextManager[Any],
        writable: Callable[[], None],
        closed: Callable[[], bool],
    ) -> Iterator[Lease]:
        """The lease for the block: taken under `order` once `writable()` passes, or joined.

        Raises:
            StoreConflictError: another worker holds it.
            StoreError: `writable()` refused, or the server cannot be reached.
        """
        with order:
            writable()
            taken, fresh = self.take(holder, ttl)
        try:
            yield taken
        finally:
            if fresh:
                with order:
                    self.give_back(taken, closed=closed())

    def take(self, holder: str, ttl: float) -> tuple[Lease, bool]:
        """The lease: the one held already (and `False`), or a fresh one (and `True`).

        Raises:
            StoreConflictError: another worker holds it.
            StoreUnavailableError: the server cannot be reached.
        """
        if self._held is not None:
            return self._held, False
        taken: Lease = run_on(
            self._pool,
            self._location,
            "taking the lease",
            lambda conn: acquire_lease(conn, self._location, self._id, holder, ttl),
        )
        self._held = taken
        self._writer.fence = taken.token
        return taken, True

    def give_back(self, lease: Lease, *, closed: bool) -> None:
        """Give a fresh lease back (it expires anyway if the server cannot be reached)."""
        self._held = None
        self._writer.fence = None
        if closed:
            return
        with contextlib.suppress(StoreError):
            run_on(
                self._pool,
                self._location,
                "giving the lease back",
                lambda conn: release_lease(conn, self._id, lease),
            )
