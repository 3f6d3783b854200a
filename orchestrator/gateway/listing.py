"""What a proxy's store holds: its sessions, their threads, and their figures.

`list_sessions` reads the store folder that `context-graph proxy` writes
(`<store>/<wire>/<session folder>/thread-<n>.db`, `threads`): each thread's session
file is opened read only (a proxy serving it is not disturbed) and replayed, so its
figures are the record's, not a guess. `read_thread` gives the replayed record itself,
for a handoff or an inspection.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from context_graph.errors import ConfigurationError
from context_graph.tokens.usage import UsageTotals
from orchestrator.gateway.activity import Activity, read_activity
from orchestrator.persistence.factory import open_store
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
        folder: Its folder in the store.
        threads: Its conversations.
    """

    session: str
    wire: str
    folder: Path
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


def list_sessions(store: Path) -> list[SessionListing]:
    """Every session in a proxy's store folder, by wire then session id.

    Raises:
        ConfigurationError: `store` is not a folder.
        StoreError: a session file does not open or replay (names it).
    """
    if not store.is_dir():
        msg = f"proxy store {store}: not a folder (give the proxy's --store folder)"
        raise ConfigurationError(msg)
    found: list[SessionListing] = []
    for wire_folder in sorted(p for p in store.iterdir() if p.is_dir()):
        for folder in sorted(p for p in wire_folder.iterdir() if p.is_dir()):
            files = thread_files(folder)
            if files:
                threads = tuple(_thread_listing(n, path) for n, path in files)
                found.append(SessionListing(_session_id(folder), wire_folder.name, folder, threads))
    return sorted(found, key=lambda s: (s.wire, s.session))


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
    store = open_store(str(location) if isinstance(location, Path) else location, read_only=True)
    try:
        yield store.restore()
    finally:
        store.close()


def _thread_listing(number: int, path: Path) -> ThreadListing:
    with read_thread(path) as restored:
        usage = restored.state.get("usage")
        return ThreadListing(
            number=number,
            location=str(path),
            nodes=len(restored.raw.transcript()),
            recorded_tokens=restored.raw.total_tokens,
            held_tokens=restored.working.total_tokens,
            activity=read_activity(restored.state),
            usage=None if usage is None else UsageTotals.model_validate(usage),
        )


def _session_id(folder: Path) -> str:
    """The agent's session id, as the gateway wrote it beside the threads (else the folder)."""
    try:
        named = json.loads((folder / "session.json").read_text())
    except (OSError, ValueError):
        return folder.name
    session = named.get("session") if isinstance(named, dict) else None
    return session if isinstance(session, str) else folder.name


def _thread_number(path: Path) -> int | None:
    number = path.stem.removeprefix("thread-")
    return int(number) if number.isdigit() else None
