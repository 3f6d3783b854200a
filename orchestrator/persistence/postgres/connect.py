"""Reaching a PostgreSQL server: the location's parts, the driver, the pools, the errors.

A location is a libpq URL naming the database, and the session inside it either as
the URL's fragment (`postgresql://db/agents#ticket-4711`) or given apart (`session=`).
The driver (psycopg 3 and psycopg_pool, the `[postgres]` extra) is imported only when a
PostgreSQL location is opened. Stores of one process share a pool per database, so a
worker serving many sessions holds a few connections, not one per session; a
connection is taken for one transaction at a time. One the server dropped fails the
call it is used for (`StoreUnavailableError`, before anything is written) and is
replaced when it goes back to the pool; checking each one before use would cost a
round trip per transaction. A failure to reach the server is
`StoreUnavailableError`; any other refusal of the server is `StoreError`, both naming
the location with its password masked.
"""

from __future__ import annotations

import contextlib
import os
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from context_graph.errors import ConfigurationError, StoreError, StoreUnavailableError

__all__ = [
    "PoolShare",
    "PostgresLocation",
    "begin",
    "load_driver",
    "parse_location",
    "redacted",
    "rollback",
    "run_on",
    "translate",
]

_INSTALL = "pip install '.[postgres]'  (or: pip install 'context-graph[postgres]')"
# Connections a process keeps per database, shared by all its stores.
_POOL_SIZE = 4
# A session name is text a person can read in a URL and a message.
_SESSION = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:@/-]{0,199}$")


@dataclass(frozen=True, slots=True)
class PostgresLocation:
    """A session in a PostgreSQL database.

    Attributes:
        conninfo: The URL without the fragment, as libpq takes it (with the password).
        session: The session's name.
        display: The URL with the password masked and the session as fragment.
    """

    conninfo: str
    session: str
    display: str


def redacted(url: str) -> str:
    """`url` without the password of its user part, which must not reach a message."""
    return re.sub(r"^([^:/]+://[^:/@]*):[^@/]*@", r"\1:***@", url)


def parse_location(url: str, session: str | None) -> PostgresLocation:
    """Split a PostgreSQL location into what the driver takes and the session's name.

    Raises:
        ConfigurationError: no session is named, it is named twice differently, or the
            name is not 1-200 letters, digits and `._:@/-` (starting with a letter or digit).
    """
    conninfo, _, fragment = url.partition("#")
    named = session if session is not None else fragment
    shown = redacted(conninfo)
    if fragment and session is not None and fragment != session:
        msg = (
            f"session store {shown!r}: the URL names session {fragment!r} and "
            f"session={session!r} another; name it once"
        )
        raise ConfigurationError(msg)
    if not named:
        msg = (
            f"session store {shown!r}: a database holds many sessions; name one, as the "
            "URL's fragment (`...#my-session`) or with session='my-session'"
        )
        raise ConfigurationError(msg)
    if not _SESSION.match(named):
        msg = (
            f"session store {shown!r}: session name {named!r} is not 1-200 letters, "
            "digits and `._:@/-` starting with a letter or a digit"
        )
        raise ConfigurationError(msg)
    return PostgresLocation(conninfo, named, f"{shown}#{named}")


def load_driver() -> tuple[ModuleType, ModuleType]:
    """The driver's two modules, `psycopg` and `psycopg_pool`, imported now.

    Raises:
        ConfigurationError: the `[postgres]` extra is not installed (names the command).
    """
    # Imported here, on first use: the extra is optional, and SQLite users lack it.
    try:
        import psycopg
        import psycopg_pool
    except ImportError as exc:
        msg = (
            f"a PostgreSQL session store needs psycopg 3 and psycopg_pool ({exc.name} is "
            f"missing); install the extra: {_INSTALL}"
        )
        raise ConfigurationError(msg) from exc
    return psycopg, psycopg_pool


class PoolShare:
    """The pools of one process, one per database, shared by its stores and refcounted.

    A forked child starts with none: the parent's connections are the parent's (two
    processes on one socket would interleave their statements), so the child's stores
    open pools of their own.
    """

    _lock = threading.Lock()
    _pools: dict[tuple[str, float], tuple[Any, int]] = {}  # noqa: RUF012  (process-wide)

    # The parent's pools in a forked child, set aside and never closed there: closing
    # one would end the parent's connections on the server.
    _parents: list[Any] = []  # noqa: RUF012  (process-wide)

    @classmethod
    def forget(cls) -> None:
        """Set every pool aside unclosed (in a forked child: they are the parent's)."""
        cls._parents.extend(pool for pool, _ in cls._pools.values())
        cls._lock = threading.Lock()
        cls._pools = {}

    @classmethod
    def take(cls, conninfo: str, timeout: float) -> Any:
        """The pool for `conninfo` (opened on first use); give it back with `give_back`."""
        _, pool_module = load_driver()
        key = (conninfo, timeout)
        with cls._lock:
            pool, users = cls._pools.get(key, (None, 0))
            if pool is None:
                pool = pool_module.ConnectionPool(
                    conninfo,
                    kwargs={"autocommit": True, "application_name": "context-graph"},
                    min_size=1,
                    max_size=_POOL_SIZE,
                    timeout=timeout,
                    reconnect_timeout=max(timeout, 5.0),
                    open=False,
                )
                pool.open(wait=False)
            cls._pools[key] = (pool, users + 1)
            return pool

    @classmethod
    def give_back(cls, conninfo: str, timeout: float) -> None:
        """One store is done with the pool; the last one closes it."""
        key = (conninfo, timeout)
        with cls._lock:
            pool, users = cls._pools.pop(key, (None, 0))
            if pool is None:
                return
            if users > 1:
                cls._pools[key] = (pool, users - 1)
                return
        pool.close()


os.register_at_fork(after_in_child=PoolShare.forget)


def translate(exc: BaseException, location: str, doing: str) -> BaseException:
    """The store error for a driver error met while `doing` (other errors unchanged)."""
    psycopg, pool_module = load_driver()
    if isinstance(exc, (psycopg.OperationalError, pool_module.PoolTimeout)):
        msg = (
            f"the database server cannot be reached while {doing} ({_first_line(exc)}); "
            "nothing of it was half-written: retry once the server is back"
        )
        return StoreUnavailableError(location, msg)
    if isinstance(exc, psycopg.Error):
        return StoreError(location, f"the database refused {doing}: {_first_line(exc)}")
    return exc


def begin(pool: Any, statement: str = "BEGIN") -> Any:
    """A connection of `pool` with a transaction begun on it by `statement`.

    A connection the server dropped while it sat in the pool (a restart, a terminated
    backend) fails its first statement. Nothing of a transaction was sent yet, so it
    goes back to the pool, which discards it, and the transaction begins on another
    (after a restart every pooled connection is such a one).

    Raises:
        psycopg.Error, psycopg_pool.PoolTimeout: the caller translates them.
    """
    psycopg, _ = load_driver()
    # Every connection in the pool may be a dropped one: one more try than it holds.
    for _ in range(_POOL_SIZE):
        connection = pool.getconn()
        try:
            connection.execute(statement)
        except psycopg.OperationalError:
            pool.putconn(connection)
            continue
        return connection
    connection = pool.getconn()
    try:
        connection.execute(statement)
    except BaseException:
        pool.putconn(connection)
        raise
    return connection


def run_on(pool: Any, location: str, doing: str, action: Callable[[Any], Any]) -> Any:
    """`action(connection)` in one transaction on `pool`, the driver's errors translated.

    The transaction is begun (`begin`) before `action` runs and committed after it,
    unless `action` ended it itself.

    Raises:
        StoreUnavailableError: no connection came, or the server went away.
        StoreError: the server refused a statement.
    """
    try:
        connection = begin(pool)
    except Exception as exc:
        raise translate(exc, location, doing) from exc
    try:
        result = action(connection)
        if connection.info.transaction_status != 0:  # not idle: still in the transaction
            connection.execute("COMMIT")
        return result
    except Exception as exc:
        rollback(connection)
        translated = translate(exc, location, doing)
        if translated is exc:
            raise
        raise translated from exc
    finally:
        pool.putconn(connection)


def rollback(connection: Any) -> None:
    """End the connection's transaction, if it still has one (a broken one has none)."""
    with contextlib.suppress(Exception):
        if not connection.closed and connection.info.transaction_status != 0:
            connection.execute("ROLLBACK")


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__
