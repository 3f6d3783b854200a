"""Where a proxied session's threads are kept: files in a folder, or sessions in a database.

A folder store keeps each thread in a session file,
`<folder>/<session>/thread-<n>.db`, beside a `session.json` naming the agent's session;
one process serves it at a time (a session file has one writer). A PostgreSQL store
keeps each thread as a session of the database named `proxy/<wire>/<session>/thread-<n>`,
and any number of proxies serve it at once: a database session is written by many
workers (`orchestrator.persistence.postgres`), so the threads are `shared`.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Protocol

from orchestrator.persistence.postgres.names import session_names

__all__ = [
    "DatabasePlaces",
    "FolderPlaces",
    "ThreadPlaces",
    "folder_name",
    "is_database",
    "places_for",
]

_PLAIN_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
_DATABASE = re.compile(r"^postgres(ql)?://", re.IGNORECASE)
Location = Path | str
"""A thread's place: a session file's path, or a database URL naming its session."""
PREFIX = "proxy"
"""The first part of the name of every session the proxy keeps in a database."""


def folder_name(session: str) -> str:
    """The store folder of a session: its id when that is a safe file name, else a digest."""
    if _PLAIN_NAME.fullmatch(session):
        return session
    return "h-" + hashlib.sha256(session.encode()).hexdigest()[:32]


def is_database(store: Path | str) -> bool:
    """Whether a store location is a PostgreSQL URL (else a folder)."""
    return isinstance(store, str) and bool(_DATABASE.match(store))


class ThreadPlaces(Protocol):
    """Where the threads of one wire's sessions are kept."""

    @property
    def shared(self) -> bool:
        """Whether other processes may write the threads at the same time."""

    def existing(self, session: str) -> list[tuple[int, Location]]:
        """The session's threads kept already, with their numbers, in number order."""

    def new(self, session: str, number: int) -> Location:
        """The location of a new thread of the session (its folder made, if any)."""


class FolderPlaces:
    """Threads as session files under `folder` (one process at a time)."""

    shared = False

    def __init__(self, folder: Path) -> None:
        self._folder = folder

    def existing(self, session: str) -> list[tuple[int, Location]]:
        """The thread files of the session's folder, in number order."""
        found = self._folder / folder_name(session)
        numbered = [(_number(p.stem), p) for p in found.glob("thread-*.db")]
        return sorted((n, p) for n, p in numbered if n is not None)

    def new(self, session: str, number: int) -> Location:
        """`<folder>/<session>/thread-<number>.db`, the folder and its `session.json` made."""
        found = self._folder / folder_name(session)
        found.mkdir(parents=True, exist_ok=True)
        (found / "session.json").write_text(json.dumps({"session": session}) + "\n")
        return found / f"thread-{number}.db"


class DatabasePlaces:
    """Threads as sessions of the PostgreSQL database at `url`, shared by every proxy on it."""

    shared = True

    def __init__(self, url: str, wire: str) -> None:
        self._url = url.partition("#")[0]
        self._wire = wire

    def existing(self, session: str) -> list[tuple[int, Location]]:
        """The database's sessions named for the session's threads, in number order."""
        prefix = self._prefix(session)
        numbered = [
            (_number(name.removeprefix(prefix)), name) for name in session_names(self._url, prefix)
        ]
        return sorted((n, f"{self._url}#{name}") for n, name in numbered if n is not None)

    def new(self, session: str, number: int) -> Location:
        """`<url>#proxy/<wire>/<session>/thread-<number>` (created when first opened)."""
        return f"{self._url}#{self._prefix(session)}{number}"

    def _prefix(self, session: str) -> str:
        return f"{PREFIX}/{self._wire}/{folder_name(session)}/thread-"


def places_for(store: Path | str | None, wire: str) -> ThreadPlaces | None:
    """The places of one wire's threads in a store (`None`: sessions live in memory)."""
    if store is None:
        return None
    if is_database(store):
        return DatabasePlaces(str(store), wire)
    return FolderPlaces(Path(store) / wire)


def _number(text: str) -> int | None:
    number = text.removeprefix("thread-")
    return int(number) if number.isdigit() else None
