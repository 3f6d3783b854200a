"""The PostgreSQL side of a session store: its tables, their migrations, the checks on open.

One database holds any number of sessions, each named:

- `cg_sessions (id, name, counter, created_by, head, lease_holder, lease_token,
  lease_until)`: one row per session. `head` is the sequence number of its last log
  entry; an append moves it on only from where its writer last saw it (the optimistic
  lock). `lease_*` is the compaction lease and its fencing token.
- `cg_log (session_id, seq, kind, digest, checksum, written)`: the append-only log, one
  row per ingested or applied batch, ordered by `seq` (never by `written`, a timestamp
  kept for people).
- `cg_content (digest, body)`: entry bodies, stored once under their SHA-256 digest and
  shared by every session whose log holds the same body.
- `cg_state (session_id, key, value, version)`: the manager's state by key; `version`
  counts the writes of each key.
- `cg_schema (version, applied)`: the migrations applied, one row each.

Migrations are numbered; `migrate` applies the missing ones in one transaction under an
advisory lock (workers starting together migrate once), and refuses a database whose
schema is newer than this version knows.
"""

from __future__ import annotations

from typing import Any

from context_graph.errors import StoreFormatError
from orchestrator.persistence.postgres.connect import rollback

__all__ = ["MIGRATIONS", "SCHEMA_VERSION", "migrate"]

#: The migrations, in order: `MIGRATIONS[n - 1]` takes a database to schema `n`.
MIGRATIONS: tuple[tuple[str, ...], ...] = (
    (
        "CREATE TABLE cg_sessions (id bigserial PRIMARY KEY, name text NOT NULL UNIQUE,"
        " counter text NOT NULL, created_by text NOT NULL, head bigint NOT NULL DEFAULT 0,"
        " lease_holder text, lease_token bigint NOT NULL DEFAULT 0, lease_until timestamptz)",
        "CREATE TABLE cg_content (digest text PRIMARY KEY, body text NOT NULL)",
        "CREATE TABLE cg_log (session_id bigint NOT NULL REFERENCES cg_sessions (id),"
        " seq bigint NOT NULL CHECK (seq > 0), kind text NOT NULL,"
        " digest text NOT NULL REFERENCES cg_content (digest), checksum text NOT NULL,"
        " written double precision NOT NULL, PRIMARY KEY (session_id, seq))",
        "CREATE TABLE cg_state (session_id bigint NOT NULL REFERENCES cg_sessions (id),"
        " key text NOT NULL, value text NOT NULL, version bigint NOT NULL,"
        " PRIMARY KEY (session_id, key))",
    ),
)
#: The schema this version writes; a database of a newer one is refused.
SCHEMA_VERSION = len(MIGRATIONS)
# Any constant works: it only keeps two workers from migrating at the same time.
_MIGRATION_LOCK = 0x43475353


def migrate(connection: Any, location: str) -> int:
    """Bring the database's schema to `SCHEMA_VERSION`, creating it in an empty one.

    Args:
        connection: A psycopg connection in a transaction this commits.
        location: The store, for messages.

    Returns:
        The schema version the database had before.

    Raises:
        StoreFormatError: the database's schema is newer than this version knows.
        psycopg.Error: the server refused a statement (the caller translates it).
    """
    try:
        connection.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))
        connection.execute(
            "CREATE TABLE IF NOT EXISTS cg_schema (version integer PRIMARY KEY,"
            " applied timestamptz NOT NULL DEFAULT now())"
        )
        found = connection.execute("SELECT coalesce(max(version), 0) FROM cg_schema").fetchone()
        version = int(found[0])
        if version > SCHEMA_VERSION:
            msg = (
                f"the database was migrated by a newer context-graph (session schema "
                f"{version}; this version knows up to {SCHEMA_VERSION}); upgrade "
                "context-graph on this worker to use it"
            )
            raise StoreFormatError(location, msg)
        for number in range(version + 1, SCHEMA_VERSION + 1):
            for statement in MIGRATIONS[number - 1]:
                connection.execute(statement)
            connection.execute("INSERT INTO cg_schema (version) VALUES (%s)", (number,))
        connection.execute("COMMIT")
    except BaseException:
        rollback(connection)
        raise
    return version
