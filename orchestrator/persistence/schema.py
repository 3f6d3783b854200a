"""The SQLite side of a session store: the file's layout, and the checks made on open.

A session file is a SQLite database in WAL mode, marked as ours by `application_id`
and versioned by `user_version`, with three tables:

- `journal (seq, kind, body, checksum, written)`: the ordered entries (see
  `orchestrator.persistence.codec`), one row per ingested batch or applied batch;
- `state (key, value)`: the latest JSON value per key;
- `meta (key, value)`: the token counter the session was recorded with, and the
  version of context-graph that created it.

Opening refuses, with the file named: a file that is not SQLite, a SQLite database of
another application, a session written by a newer schema (or an older one it does not
migrate), missing tables, and a token counter other than the recorded one.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Mapping
from importlib import metadata
from pathlib import Path

from pydantic import JsonValue

from context_graph.errors import (
    ConfigurationError,
    StoreCorruptError,
    StoreError,
    StoreFormatError,
)

__all__ = [
    "INSERT_ENTRY",
    "SCHEMA_VERSION",
    "SELECT_ENTRIES",
    "SELECT_STATE",
    "UPSERT_STATE",
    "check_head",
    "connect",
    "decode_state",
    "encode_state",
    "prepare",
]

#: The layout version written to `PRAGMA user_version`; files of a newer one are refused.
#: 2: a compaction run is journaled in one transaction, and the manager's state keeps
#: what the model has not been sent yet (`sent`) and the renderers' kept drops
#: (`renderers`), so a reopened session renders exactly as one never stopped. The
#: tables are those of 1: a file of version 1 opens, and a writable open marks it 2
#: (its state lacks the two keys, which then resume as "everything sent, no drops").
SCHEMA_VERSION = 2
# Older versions this one opens (and a writable open upgrades in place).
_MIGRATES = frozenset({1})
# `PRAGMA application_id` ("CGSS"): tells our files from other SQLite databases.
_APPLICATION_ID = 0x43475353
_SQLITE_MAGIC = b"SQLite format 3\x00"
_SCHEMA = (
    "CREATE TABLE journal (seq INTEGER PRIMARY KEY, kind TEXT NOT NULL,"
    " body TEXT NOT NULL, checksum TEXT NOT NULL, written REAL NOT NULL)",
    "CREATE TABLE state (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID",
    "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID",
)
_TABLES = frozenset({"journal", "state", "meta"})

INSERT_ENTRY = "INSERT INTO journal (kind, body, checksum, written) VALUES (?, ?, ?, ?)"
UPSERT_STATE = (
    "INSERT INTO state (key, value) VALUES (?1, ?2) ON CONFLICT (key) DO UPDATE SET value = ?2"
)
# Bodies are read as bytes: text that is not UTF-8 is then a decode error of its entry.
SELECT_ENTRIES = "SELECT seq, kind, CAST(body AS BLOB), checksum FROM journal ORDER BY seq"
SELECT_STATE = "SELECT key, CAST(value AS BLOB) FROM state"


def check_head(path: str, head: bytes) -> None:
    """Refuse a file whose first bytes are not SQLite's header (empty: a new file).

    The bytes are read through the descriptor the process keeps on the file
    (`lock.claim_file`): opening and closing another one would drop SQLite's locks.

    Raises:
        StoreFormatError: the bytes are not empty and not a SQLite header.
    """
    head = head[: len(_SQLITE_MAGIC)]
    if head and head != _SQLITE_MAGIC:
        msg = (
            f"is not a SQLite database (it starts with {head[:8]!r}), so not a "
            "context-graph session; give the path of a session file or of a new one"
        )
        raise StoreFormatError(path, msg)


def connect(session: Path, *, read_only: bool) -> sqlite3.Connection:
    """A connection in autocommit mode: every transaction is begun and ended explicitly.

    Raises:
        StoreError: SQLite cannot open the file.
    """
    target = f"{session.resolve().as_uri()}?mode=ro" if read_only else str(session)
    try:
        return sqlite3.connect(
            target, uri=read_only, isolation_level=None, check_same_thread=False, timeout=10
        )
    except sqlite3.Error as exc:
        raise StoreError(str(session), f"SQLite cannot open it: {exc}") from exc


def prepare(
    connection: sqlite3.Connection, path: str, counter: str, *, read_only: bool, durable: bool
) -> None:
    """Check an opened file (creating the schema in an empty one) and set it up.

    Raises:
        StoreFormatError: not a session file this version can read.
        StoreCorruptError: SQLite cannot read it, or tables are missing.
        StoreError: the recorded token counter is not `counter`.
    """
    try:
        application_id = connection.execute("PRAGMA application_id").fetchone()[0]
        version = connection.execute("PRAGMA user_version").fetchone()[0]
        found = connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        tables = {row[0] for row in found.fetchall()}
        if application_id == 0 and version == 0 and not tables:
            if read_only:
                raise StoreFormatError(path, "is an empty database, not a context-graph session")
            _create(connection, path, counter)
        else:
            _check_schema(path, application_id, version, tables)
            if version in _MIGRATES and not read_only:
                connection.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        if not read_only:
            connection.execute(f"PRAGMA synchronous = {'FULL' if durable else 'NORMAL'}")
        meta = dict(connection.execute("SELECT key, value FROM meta").fetchall())
    except sqlite3.Error as exc:
        raise StoreCorruptError(path, f"SQLite cannot read it: {exc}") from exc
    if meta.get("counter") != counter:
        msg = (
            f"the session was recorded with the token counter `{meta.get('counter')}`, "
            f"not `{counter}`; open it with that counter (the recorded proposals' token "
            "counts were checked with it)"
        )
        raise StoreError(path, msg)


def _create(connection: sqlite3.Connection, path: str, counter: str) -> None:
    mode = connection.execute("PRAGMA journal_mode = WAL").fetchone()[0]
    if str(mode).lower() != "wal":
        msg = f"SQLite cannot use WAL mode here (got {mode!r}); put the session on a local disk"
        raise StoreError(path, msg)
    # The header pragmas are written in the same transaction as the tables, so a file
    # is marked as a session only once it is one.
    connection.execute("BEGIN IMMEDIATE")
    try:
        for statement in _SCHEMA:
            connection.execute(statement)
        meta = {"counter": counter, "created_by": _library_version()}
        connection.executemany("INSERT INTO meta (key, value) VALUES (?, ?)", meta.items())
        connection.execute(f"PRAGMA application_id = {_APPLICATION_ID}")
        connection.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        connection.execute("COMMIT")
    except BaseException:
        connection.execute("ROLLBACK")
        raise


def _check_schema(path: str, application_id: int, version: int, tables: set[str]) -> None:
    if application_id != _APPLICATION_ID:
        listed = ", ".join(sorted(tables)) or "none"
        msg = (
            f"is a SQLite database of another application (application id {application_id}, "
            f"tables: {listed}), not a context-graph session; give another path"
        )
        raise StoreFormatError(path, msg)
    if version > SCHEMA_VERSION:
        msg = (
            f"was written by a newer context-graph (session schema {version}; this version "
            f"reads up to {SCHEMA_VERSION}); upgrade context-graph to open it"
        )
        raise StoreFormatError(path, msg)
    if version < SCHEMA_VERSION and version not in _MIGRATES:
        msg = (
            f"has session schema {version}, which this version cannot read "
            f"(it reads {SCHEMA_VERSION})"
        )
        raise StoreFormatError(path, msg)
    missing = _TABLES - tables
    if missing:
        msg = f"the session's tables {', '.join(sorted(missing))} are missing"
        raise StoreCorruptError(path, msg)


def _library_version() -> str:
    try:
        return metadata.version("context-graph")
    except metadata.PackageNotFoundError:
        return "unknown"


def encode_state(state: Mapping[str, JsonValue] | None) -> list[tuple[str, str]]:
    """`(key, JSON text)` rows for the state table.

    Raises:
        ConfigurationError: a key is not a non-empty string, or a value is not JSON.
    """
    encoded: list[tuple[str, str]] = []
    for key, value in (state or {}).items():
        if not isinstance(key, str) or not key:
            msg = f"state key {key!r}: use a non-empty string"
            raise ConfigurationError(msg)
        try:
            text = json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
        except (TypeError, ValueError) as exc:
            msg = (
                f"state {key!r} is not JSON ({exc}); pass dicts, lists, strings, numbers, "
                "booleans or None (a pydantic model: `model.model_dump(mode='json')`)"
            )
            raise ConfigurationError(msg) from exc
        encoded.append((key, text))
    return encoded


def decode_state(path: str, key: str, value: bytes | None) -> JsonValue:
    """One stored state value.

    Raises:
        StoreCorruptError: the stored text is not JSON (names the key).
    """
    try:
        decoded: JsonValue = json.loads(value or b"")
    except ValueError as exc:
        msg = f"state {key!r} is not JSON ({exc}); it was changed outside context-graph"
        raise StoreCorruptError(path, msg) from exc
    return decoded
