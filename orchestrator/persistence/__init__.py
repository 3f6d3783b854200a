"""Persistence: the session store (SQLite) with its schema, lock, codec and journal.

A session is restored by replaying its journal.
"""

from __future__ import annotations

from orchestrator.persistence.protocol import RestoredSession, SessionStore
from orchestrator.persistence.sqlite_store import SQLiteStore

__all__ = ["RestoredSession", "SQLiteStore", "SessionStore"]
