"""Waiting for another worker's entries: LISTEN/NOTIFY, with a bounded poll behind it.

Every append notifies `CHANNEL` with `session_id:head` when it commits. A waiting worker
listens on its own connection (a listening connection cannot go back to a pool) and
wakes on a notification for its session. A notification can be missed (the connection
dropped and was made again), so the head is also read every `poll` seconds: a waiter
learns of new entries within that bound, without spinning.
"""

from __future__ import annotations

import time

from orchestrator.persistence.postgres.connect import load_driver
from orchestrator.persistence.postgres.writer import CHANNEL

__all__ = ["wait_for_entries"]

_HEAD = "SELECT head FROM cg_sessions WHERE id = %s"


def wait_for_entries(
    conninfo: str, session_id: int, seen: int, *, timeout: float, poll: float
) -> int:
    """Block until the session's log is past `seen`, or `timeout` seconds passed.

    Args:
        conninfo: The database.
        session_id: The session's row.
        seen: The sequence number the waiter has.
        timeout: The longest wait, in seconds.
        poll: The longest time between two reads of the head.

    Returns:
        The log's head when the wait ended (`seen` when nothing came).

    Raises:
        psycopg.Error: the server cannot be reached (the caller translates it).
    """
    psycopg, _ = load_driver()
    deadline = time.monotonic() + timeout
    with psycopg.connect(conninfo, autocommit=True, application_name="context-graph") as conn:
        conn.execute(f"LISTEN {CHANNEL}")
        # Read after LISTEN: an append committed between the two is seen either way.
        head = int(conn.execute(_HEAD, (session_id,)).fetchone()[0])
        while head <= seen:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            for notify in conn.notifies(timeout=min(left, poll), stop_after=1):
                number, _, value = notify.payload.partition(":")
                if number == str(session_id):
                    head = max(head, int(value))
            if head <= seen:
                head = int(conn.execute(_HEAD, (session_id,)).fetchone()[0])
    return head
