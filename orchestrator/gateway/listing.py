"""What a proxy's store holds: its sessions, their threads, and their figures.

`list_sessions` reads the store folder that `context-graph proxy` writes
(`<store>/<wire>/<session folder>/thread-<n>.db`, `threads`): each thread's session
file is opened read only (a proxy serving it is not disturbed) and replayed, so its
figures are the record's, not a guess. `read_thread` gives the replayed record itself,
for a handoff or an inspection.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from context_graph.errors import ConfigurationError
from context_graph.tokens.usage import UsageTotals
from orchestrator.gateway.activity import Activity, read_activity
from orchestrator.gateway.places import PREFIX, is_database
from orchestrator.persistence.factory import open_store
from orchestrator.persistence.postgres.connect import redacted
from orchestrator.persistence.postgres.names import session_names
from orchestrator.persistence.protocol import RestoredSession

__all__ = ["SessionListing", "ThreadListing", "list_sessions", "read_thread", "thread_files"]


@dataclass(frozen=True, slots=True)
class ThreadListing:
    """One conversation of a proxied session, as its record holds it.

    Attributes:
        number: Its place among the session's threads.
        location: Its session file.
        nodes: How many nodes its record holds (the transcript).
        recorded_tokens: The tokens of the whole record.
        held_tokens: The tokens of the working view (what the engine renders from).
        activity: The gateway's note of its last request (`None`: none kept).
        usage: The provider's usage of its calls, summed (`None`: none reported).
    """

    number: int
    location: str
    nodes: int
    recorded_tokens: int
    held_tokens: int
    activity: Activity | None
    usage: UsageTotals | None


@dataclass(frozen=True, slots=True)
class SessionListing:
    """A session the proxy holds, with its threads in number order.

    Attributes:
        session: The agent's session id.
        wire: The wire format it came in.
        place: Where the store keeps it: its folder, or its name's prefix in a database.
        threads: Its conversations.
    """

    session: str
    wire: str
    place: str
    threads: tuple[ThreadListing, ...]

    @property
    def last_activity(self) -> float | None:
        """When its last request went upstream (`None`: no note kept)."""
        times = [t.activity.at for t in self.threads if t.activity is not None]
        return max(times) if times else None

    @property
    def usage(self) -> UsageTotals | None:
        """The provider's usage of all its threads' calls (`None`: none reported)."""
        totals = [t.usage for t in self.threads if t.usage is not None]
        if not totals:
            return None
        return UsageTotals(
            calls=sum(u.calls for u in totals),
            prompt_tokens=sum(u.prompt_tokens for u in totals),
            completion_tokens=sum(u.completion_tokens for u in totals),
            cached_tokens=sum(u.cached_tokens for u in totals),
            cache_creation_tokens=sum(u.cache_creation_tokens for u in totals),
        )


def list_sessions(store: Path | str) -> list[SessionListing]:
    """Every session in a proxy's store (a folder, or a database), by wire then session id.

    Raises:
        ConfigurationError: a folder `store` is not a folder.
        StoreError: a thread does not open or replay (names it).
    """
    if is_database(store):
        found = _database_sessions(str(store))
    else:
        found = _folder_sessions(Path(store))
    return sorted(found, key=lambda s: (s.wire, s.session))


def _folder_sessions(store: Path) -> list[SessionListing]:
    if not store.is_dir():
        msg = f"proxy store {store}: not a folder (give the proxy's --store folder)"
        raise ConfigurationError(msg)
    found: list[SessionListing] = []
    for wire_folder in sorted(p for p in store.iterdir() if p.is_dir()):
        for folder in sorted(p for p in wire_folder.iterdir() if p.is_dir()):
            files = thread_files(folder)
            if files:
                threads = tuple(_thread_listing(n, str(path)) for n, path in files)
                session = _session_id(folder, threads)
                found.append(SessionListing(session, wire_folder.name, str(folder), threads))
    return found


def _database_sessions(url: str) -> list[SessionListing]:
    """The proxy's sessions in a database: its sessions named `proxy/<wire>/<id>/thread-<n>`."""
    base = url.partition("#")[0]
    grouped: dict[tuple[str, str], list[tuple[int, str]]] = {}
    for name in session_names(base, f"{PREFIX}/"):
        parts = name.split("/")
        number = parts[-1].removeprefix("thread-")
        if len(parts) == 4 and number.isdigit():
            grouped.setdefault((parts[1], parts[2]), []).append((int(number), name))
    found: list[SessionListing] = []
    for (wire, folder), names in grouped.items():
        threads = tuple(_thread_listing(n, f"{base}#{name}") for n, name in sorted(names))
        place = f"{redacted(base)}#{PREFIX}/{wire}/{folder}"
        found.append(SessionListing(_session_of(threads, folder), wire, place, threads))
    return found


def thread_files(folder: Path) -> list[tuple[int, Path]]:
    """A session folder's thread files, with their numbers, in number order."""
    numbered = [(_thread_number(p), p) for p in folder.glob("thread-*.db")]
    return sorted((n, p) for n, p in numbered if n is not None)


@contextmanager
def read_thread(location: str | Path) -> Iterator[RestoredSession]:
    """A thread's record replayed from its store, opened read only for the block.

    Raises:
        StoreError: the store does not open or replay.
    """
    store = open_store(str(location), read_only=True)
    try:
        yield store.restore(clock=time.time)
    finally:
        store.close()


def _thread_listing(number: int, location: str) -> ThreadListing:
    with read_thread(location) as restored:
        usage = restored.state.get("usage")
        return ThreadListing(
            number=number,
            location=location,
            nodes=len(restored.raw.transcript()),
            recorded_tokens=restored.raw.total_tokens,
            held_tokens=restored.working.total_tokens,
            activity=read_activity(restored.state),
            usage=None if usage is None else UsageTotals.model_validate(usage),
        )


def _session_id(folder: Path, threads: tuple[ThreadListing, ...]) -> str:
    """The agent's session id, as the gateway wrote it beside the threads (else noted)."""
    try:
        named = json.loads((folder / "session.json").read_text())
    except (OSError, ValueError):
        return _session_of(threads, folder.name)
    session = named.get("session") if isinstance(named, dict) else None
    return session if isinstance(session, str) else _session_of(threads, folder.name)


def _session_of(threads: tuple[ThreadListing, ...], fallback: str) -> str:
    """The agent's session id in the gateway's notes (else `fallback`, its store name)."""
    for thread in threads:
        if thread.activity is not None:
            return thread.activity.session
    return fallback


def _thread_number(path: Path) -> int | None:
    number = path.stem.removeprefix("thread-")
    return int(number) if number.isdigit() else None
