"""Persistence: the `SessionStore` protocol, `open_store`, the SQLite and PostgreSQL stores.

A session is restored by replaying its journal into graphs that hold the store's
journal, so every later change is written as one step with it.
"""

from __future__ import annotations

from orchestrator.persistence.factory import open_store
from orchestrator.persistence.postgres.store import PostgresStore
from orchestrator.persistence.protocol import Refreshed, RestoredSession, SessionStore
from orchestrator.persistence.sqlite.store import SQLiteStore

__all__ = [
    "PostgresStore",
    "Refreshed",
    "RestoredSession",
    "SQLiteStore",
    "SessionStore",
    "open_store",
]
