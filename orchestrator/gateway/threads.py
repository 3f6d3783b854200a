"""The conversations of proxied sessions: one managed record per conversation.

One agent session sends more than one conversation through the same session id:
Claude Code asks for a title with a system prompt and a message of its own, then runs
the task; a sub-agent runs a conversation of its own beside its parent's. Each
conversation is a `Thread`: a `ContextManager` and the `Conversation` that takes in
what is new of each request (`orchestrator.integrations.conversation`).

A request goes to the thread it continues:

1. the thread whose last request's history is a leading part of this one's (the
   agent appended the reply and what came after it): the common case, decided by the
   items' JSON, no record read;
2. else the thread whose record holds the longest leading part of it by content
   (`held_prefix`): a thread reopened from the store after a restart, whose last
   request this process never saw, or one whose last request this history repeats in
   other words, holding all of its record (Claude Code sends a resumed session's prompt
   as a list of one text block, then as a string);
3. else a new thread. A history that leaves a thread's partway (a rewind, an edited
   message or tool result) forks the thread whose record holds the longest leading
   part of it (`ContextManager.fork` at the last node of that part): the new thread
   shares the record up to there and takes in only the rest. A history that shares
   no message with any thread (the agent compacted itself, `/clear`, an edited first
   message) starts a new thread holding the whole of it. Either way the old thread's
   record is never rewritten.

With a store folder, each thread is a session file `<folder>/<session>/thread-<n>.db`;
with a database, a session of it (`places`); the threads of a session are reopened when
the session is next seen.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from orchestrator.gateway.places import FolderPlaces, Location, ThreadPlaces, folder_name
from orchestrator.gateway.spelling import Verdicts
from orchestrator.integrations.clients_apis import Api
from orchestrator.integrations.conversation import Conversation, item_keys
from orchestrator.integrations.held import held_prefix
from orchestrator.manager import ContextManager

__all__ = ["ManagerFactory", "SessionTable", "Thread", "folder_name"]


@dataclass
class Thread:
    """One conversation of a session: its manager, what it took in, and its lock.

    Attributes:
        manager: The conversation's manager (its record, compaction and renders).
        conversation: What the manager has taken in of the agent's requests.
        number: The thread's place among its session's threads.
        lock: Held while a request is taken in and rendered, so that two requests of one
            conversation are never taken in at once.
        shared: Other processes write its record too (a PostgreSQL store): what they
            appended is brought in before each request (`replicas`).
        verdicts: Which items of its last request went upstream in the agent's spelling
            (`spelling`): the next request compares only what is new.
    """

    manager: ContextManager
    conversation: Conversation
    number: int
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    shared: bool = False
    verdicts: Verdicts = field(default_factory=Verdicts)

    @property
    def keys(self) -> tuple[str, ...]:
        """The last request's history items as JSON (empty: none seen by this process)."""
        return self.conversation.keys

    def continues(self, keys: Sequence[str]) -> bool:
        """Whether a history with these item keys extends this thread's last one."""
        held = self.keys
        return bool(held) and tuple(keys[: len(held)]) == held


@dataclass(frozen=True)
class _Read:
    """A request's history as sent, and as `SessionTable.read` read it."""

    sent: list[Any]
    history: list[Any]
    keys: list[str]

    def shared_with(self, sent: list[Any]) -> int:
        """How many leading items of `sent` equal this request's (compared as sent)."""
        held = self.sent
        count = min(len(held), len(sent))
        if held[:count] == sent[:count]:  # the common case, compared in one pass
            return count
        return next(i for i in range(count) if held[i] != sent[i])


ManagerFactory = Callable[[Location | None], ContextManager]
"""Makes a thread's manager: on the store location given (a session file's path, a
database URL naming the session), or in memory (`None`)."""


class SessionTable:
    """Every session's threads, opened from the store folder on first sight.

    Args:
        api: The wire format's managed method (how a request holds its conversation).
        make_manager: Makes a thread's manager.
        store: Where the threads are kept (`places`): a folder of session files, a
            database (`DatabasePlaces`), or `None`: sessions live in memory only.
    """

    def __init__(
        self, api: Api, make_manager: ManagerFactory, store: Path | ThreadPlaces | None
    ) -> None:
        self._api = api
        self._make = make_manager
        self._places = FolderPlaces(store) if isinstance(store, Path) else store
        self._sessions: dict[str, list[Thread]] = {}
        self._last_read: dict[str, _Read] = {}
        """Each session's last request as read: its next one re-reads only what is new."""

    @property
    def sessions(self) -> dict[str, list[Thread]]:
        """The sessions seen by this process, each with its threads."""
        return self._sessions

    def read(
        self, request: Mapping[str, Any], session: str | None = None
    ) -> tuple[list[Any], list[str]]:
        """A request's history as plain items, and their `item_keys`.

        Read once per request and given to `route`, `find` and the thread's
        `Conversation.take`: on a long history the copy and the encoding are most of a
        request's cost. With `session`, the items that equal the leading items of the
        session's last request reuse that request's reading (an agent resends its whole
        history each time: only the new turn is copied and encoded).

        Raises:
            ConfigurationError: the request's history is not a list.
        """
        sent = request.get(self._api.history_key)
        if session is None or not isinstance(sent, list):
            history = self._api.read_history(request)
            return history, item_keys(history)
        last = self._last_read.get(session)
        kept = 0 if last is None else last.shared_with(sent)
        tail = self._api.read_history({self._api.history_key: sent[kept:]}) if sent[kept:] else []
        if last is None:
            history, keys = tail, item_keys(tail)
        else:
            history = [*last.history[:kept], *tail]
            keys = [*last.keys[:kept], *item_keys(tail)]
        self._last_read[session] = _Read(sent, history, keys)
        return history, keys

    def route(
        self,
        session: str,
        request: Mapping[str, Any],
        read: tuple[list[Any], list[str]] | None = None,
    ) -> Thread:
        """The thread a request continues, or a new one (see the module docstring).

        `read`: the request as `read` gives it (read here when not given).

        Raises:
            IngestError: the request's history is malformed (nothing was changed).
        """
        read = self.read(request) if read is None else read
        found = self.find(session, request, read)
        if found is not None:
            return found
        threads = self._threads(session)
        branched = self._branch_point(threads, read[0])
        return self._new(session, threads, branched)

    def find(
        self,
        session: str,
        request: Mapping[str, Any],
        read: tuple[list[Any], list[str]] | None = None,
    ) -> Thread | None:
        """The thread a request continues (`None`: none; rules 1 and 2 of the docstring).

        `read`: the request as `read` gives it (read here when not given).

        Raises:
            IngestError: the request's history is malformed (nothing was changed).
        """
        threads = self._threads(session)
        history, keys = self.read(request) if read is None else read
        extended = [t for t in threads if t.continues(keys)]
        if extended:
            return max(extended, key=lambda t: len(t.keys))
        events = self._api.events(None, history)
        best: Thread | None = None
        best_matched = 0
        for thread in threads:
            held = held_prefix(events, thread.manager.raw, items=len(history))
            if thread.keys and held.rest:
                continue  # this process saw its last request, which this one leaves
            if held.rest and held.items < len(history):
                continue  # it leaves this thread partway: a branch
            if held.matched > best_matched:
                best, best_matched = thread, held.matched
        return best

    def close(self) -> None:
        """Close every thread's manager (their session files are saved and released)."""
        failures: list[BaseException] = []
        for threads in self._sessions.values():
            for thread in threads:
                try:
                    thread.manager.close()
                except Exception as error:  # every file is released, then the first error
                    failures.append(error)
        self._sessions.clear()
        self._last_read.clear()
        if failures:
            raise failures[0]

    def _threads(self, session: str) -> list[Thread]:
        threads = self._sessions.get(session)
        if threads is None:
            threads = [self._thread(path, n) for n, path in self._files(session)]
            self._sessions[session] = threads
        return threads

    def _files(self, session: str) -> list[tuple[int, Location]]:
        """The session's threads in the store, with their numbers, in number order."""
        return [] if self._places is None else self._places.existing(session)

    def _branch_point(
        self, threads: Sequence[Thread], history: list[Any]
    ) -> tuple[Thread, str] | None:
        """The thread holding the longest leading part of a history, and where it ends.

        `None` when no thread holds one of its messages (system prompts aside).
        """
        events = self._api.events(None, history)
        best: tuple[Thread, str] | None = None
        best_matched = 0
        for thread in threads:
            held = held_prefix(events, thread.manager.raw, items=len(history))
            if held.last is not None and held.matched > best_matched:
                best, best_matched = (thread, held.last), held.matched
        return best

    def _new(
        self, session: str, threads: list[Thread], branched: tuple[Thread, str] | None = None
    ) -> Thread:
        """A new thread: a fork of `branched`'s at its node, else an empty one."""
        # Past the highest number on file: a gap (a file removed by hand) is never reused.
        number = 1 + max((thread.number for thread in threads), default=-1)
        path = None if self._places is None else self._places.new(session, number)
        if branched is None:
            manager = self._make(path)
        else:
            source, at = branched
            manager = source.manager.fork(at=at, to=path)
        thread = Thread(manager, Conversation(manager, self._api), number, shared=self._shared)
        threads.append(thread)
        return thread

    def _thread(self, path: Location | None, number: int) -> Thread:
        manager = self._make(path)
        return Thread(manager, Conversation(manager, self._api), number, shared=self._shared)

    @property
    def _shared(self) -> bool:
        return self._places is not None and self._places.shared
