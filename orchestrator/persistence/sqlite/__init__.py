"""The SQLite session store: one session file, one writer (a lock on the file itself)."""

from orchestrator.persistence.sqlite.store import SQLiteStore

__all__ = ["SQLiteStore"]
