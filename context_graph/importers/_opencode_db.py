"""opencode's session database (`~/.local/share/opencode/opencode.db`), read as exports.

opencode 1.x keeps its sessions in SQLite: a `session` row per session, a `message` row
per message (its `data` the message's info as JSON, without its id) and a `part` row
per part (likewise). `read_exports` reads every session as the object `opencode export`
writes for it, `{info, messages: [{info, parts}]}`, so the one importer
(`importers.opencode`) reads both. The database is opened read-only, write-ahead log
included (what opencode wrote last is often only there).
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from context_graph.errors import IngestError, SourceLocation

__all__ = ["SQLITE_MAGIC", "is_opencode_database", "read_exports"]

#: How every SQLite database file begins.
SQLITE_MAGIC = b"SQLite format 3\x00"
_TABLES = frozenset({"session", "message", "part"})


def is_opencode_database(file: Path) -> bool:
    """Whether `file` is a SQLite database with opencode's tables (never raises)."""
    try:
        with file.open("rb") as head:
            if head.read(len(SQLITE_MAGIC)) != SQLITE_MAGIC:
                return False
        with sqlite3.connect(f"{file.resolve().as_uri()}?mode=ro", uri=True) as db:
            names = {row[0] for row in db.execute("select name from sqlite_master")}
    except (OSError, sqlite3.Error):
        return False
    return _TABLES <= names


def read_exports(file: Path) -> list[Any]:
    """Every session in opencode's database, oldest first, as `opencode export` objects.

    Raises:
        IngestError: the file is a SQLite database without opencode's tables, cannot be
            read, or a row's `data` is not a JSON object (naming the table and row).
    """
    where = SourceLocation(str(file))
    try:
        with sqlite3.connect(f"{file.resolve().as_uri()}?mode=ro", uri=True) as db:
            names = {row[0] for row in db.execute("select name from sqlite_master")}
            missing = _TABLES - names
            if missing:
                msg = (
                    "a SQLite database, but not opencode's: no "
                    + ", ".join(f"`{name}`" for name in sorted(missing))
                    + " table"
                )
                raise IngestError(msg, where)
            columns = {row[1] for row in db.execute("pragma table_info(session)")}
            # `revert` (a reverted session's point, JSON) came with a later schema.
            revert = "revert" if "revert" in columns else "null"
            sessions = db.execute(
                f"select id, title, directory, version, slug, parent_id, {revert} from session"
                " order by time_created, id"
            ).fetchall()
            exports = [_export(db, row, where) for row in sessions]
    except sqlite3.Error as exc:
        raise IngestError(f"cannot read the SQLite database: {exc}", where) from None
    return exports


def _export(db: sqlite3.Connection, session: tuple[Any, ...], where: SourceLocation) -> Any:
    session_id, title, directory, version, slug, parent, revert = session
    info = {"id": session_id, "title": title, "directory": directory, "version": version}
    info |= {"slug": slug} | ({"parentID": parent} if parent else {})
    if revert is not None:
        info["revert"] = _json(revert, where.with_path(f"session[{session_id}].revert"))
    messages = []
    rows = db.execute(
        "select id, data from message where session_id = ? order by time_created, id",
        (session_id,),
    ).fetchall()
    for message_id, data in rows:
        message = _json(data, where.with_path(f"message[{message_id}].data"))
        message |= {"id": message_id, "sessionID": session_id}
        parts = []
        for part_id, part_data in db.execute(
            "select id, data from part where message_id = ? order by id", (message_id,)
        ):
            part = _json(part_data, where.with_path(f"part[{part_id}].data"))
            parts.append(part | {"id": part_id, "messageID": message_id})
        messages.append({"info": message, "parts": parts})
    return {"info": info, "messages": messages}


def _json(text: Any, where: SourceLocation) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except (TypeError, ValueError):
        raise IngestError("a row's `data` must be JSON", where) from None
    if not isinstance(value, dict):
        raise IngestError(
            f"a row's `data` must be a JSON object, got {type(value).__name__}", where
        )
    return value
