"""Forking a session: its journal up to one node, copied into a new session.

A fork holds the session as it was when the node `at` (a node of the pristine record's
transcript) had just been ingested: every entry before the batch holding it, that batch
up to and including the event that made `at` (an assistant turn's tool calls come with
it), and, when that event ended its batch, the edits applied before the next batch came
in. So its record and its working view are ones the session had; an edit applied later
(a summary of nodes both sides of `at`, or of nodes before it made once the session had
moved on) is not copied, and the fork compacts on its own. The entries are copied as
recorded (times and audit entries included), into memory, a new SQLite file or a new
session of the same database; nothing of the source changes, and the two never see each
other's later writes.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterable, Mapping
from pathlib import Path

from pydantic import JsonValue

from context_graph.errors import ConfigurationError, StoreError, UnknownNodeError
from context_graph.graph.events import AgentEvent, AssistantTurn, Withdrawal
from context_graph.tokens.counting import TokenCounter
from orchestrator.persistence.codec import JournalEntry
from orchestrator.persistence.factory import open_store
from orchestrator.persistence.memory import MemoryRecord
from orchestrator.persistence.postgres.store import PostgresStore
from orchestrator.persistence.protocol import SessionStore
from orchestrator.persistence.sqlite.store import SQLiteStore
from orchestrator.working.buffer import WorkingGraph

__all__ = ["check_fork_point", "cut_journal", "fork_store", "journal_of", "write_fork"]

# Enough for any session's forks; a name past it says something else is wrong.
_MAX_FORKS = 10_000


def check_fork_point(working: WorkingGraph, at: str | None) -> int | None:
    """How many transcript nodes up to and including `at` (`None`: the whole record).

    Raises:
        UnknownNodeError: `at` is not a node of the transcript (unknown, or a node a
            processor made).
    """
    if at is None:
        return None
    transcript = working.pristine.transcript()
    if at in working.pristine and at in transcript:
        return transcript.index(at) + 1
    what = "a node a processor made" if at in working else "no node of the record"
    msg = (
        f"fork(at={at!r}): that is {what}; pass the id of a node of the record's "
        "transcript (`manager.raw.transcript()`), such as a user turn's"
    )
    raise UnknownNodeError(msg)


def journal_of(store: SessionStore | None, record: MemoryRecord) -> list[JournalEntry]:
    """The session's journal: its store's entries, or the in-memory record's.

    Raises:
        ConfigurationError: the store is of a kind whose entries cannot be read.
    """
    if store is None:
        return list(record.entries())
    return list(_copyable(store).journal())


def cut_journal(entries: Iterable[JournalEntry], nodes: int | None) -> list[JournalEntry]:
    """The entries of the session as it was when its first `nodes` nodes were in.

    `None` keeps every entry. See the module docstring for where the cut falls.
    """
    if nodes is None:
        return list(entries)
    kept: list[JournalEntry] = []
    made = 0
    for entry in entries:
        if entry.kind == "proposals":
            kept.append(entry)  # applied to a record that ended where this one ends
            continue
        if made >= nodes:
            break
        events: list[AgentEvent] = []
        for event in entry.events:
            if made >= nodes:
                break
            events.append(event)
            made += _nodes_made(event)
        kept.append(dataclasses.replace(entry, events=tuple(events)))
        if len(events) < len(entry.events):
            break  # cut inside a batch: later edits were made with the rest of it in
    return kept


def _nodes_made(event: AgentEvent) -> int:
    """How many transcript nodes ingesting `event` adds (`context_graph.graph.ingest`)."""
    if isinstance(event, Withdrawal):
        return 0
    if isinstance(event, AssistantTurn):
        return 1 + len(event.tool_calls)
    return 1


def fork_store(
    source: SessionStore | None,
    to: str | os.PathLike[str] | None,
    *,
    session: str | None,
    counter: TokenCounter | None,
    durable: bool,
) -> SessionStore:
    """Open the empty session the fork of `source`'s (`None`: in memory) is written to.

    `to=None`: beside the source, the first free `<name>-fork-<n>`: a file in the same
    folder (`session-fork-1.db`), or a session of the same database.

    Raises:
        ConfigurationError: `session` without a database, or a store that cannot fork.
        StoreError: the destination cannot be opened, or it holds a session already.
    """
    if to is not None:
        store = open_store(to, counter=counter, durable=durable, session=session)
        _check_empty(store)
        return store
    if session is not None and isinstance(source, PostgresStore):
        store = source.sibling(session)
        _check_empty(store)
        return store
    if session is not None:
        msg = (
            f"fork(session={session!r}): this session is not in a database; give `to=` "
            "a PostgreSQL URL to name a session in"
        )
        raise ConfigurationError(msg)
    if isinstance(source, SQLiteStore):
        path = _free_file(source.path)
        return open_store(path, counter=counter, durable=durable)
    if isinstance(source, PostgresStore):
        return _free_session(source)
    where = "memory" if source is None else source.location
    msg = f"fork(): cannot tell where a fork of {where!r} goes; give `to=`"
    raise ConfigurationError(msg)


def write_fork(
    store: SessionStore, entries: Iterable[JournalEntry], state: Mapping[str, JsonValue]
) -> None:
    """Write the fork's entries and state into its new store, in one transaction.

    Raises:
        StoreError: the writes fail; nothing is kept.
    """
    copy = _copyable(store)
    with copy.atomic():
        for entry in entries:
            copy.append_entry(entry)
        if state:
            copy.put_states(state)


def _copyable(store: SessionStore) -> SQLiteStore | PostgresStore:
    """The store, as one of the backends whose entries can be read and appended.

    Raises:
        ConfigurationError: it is of another kind.
    """
    if isinstance(store, (SQLiteStore, PostgresStore)):
        return store
    msg = f"fork(): the session store {store.location!r} does not hand out its entries"
    raise ConfigurationError(msg)


def _check_empty(store: SessionStore) -> None:
    """Refuse a destination that holds a session already (and close it)."""
    copy = _copyable(store)
    held = len(list(copy.journal()))
    if held or copy.state():
        store.close()
        msg = f"already holds a session ({held} entries); fork into a new one"
        raise StoreError(store.location, msg)


def _free_file(path: Path) -> Path:
    for number in range(1, _MAX_FORKS):
        candidate = path.with_name(f"{path.stem}-fork-{number}{path.suffix}")
        if not candidate.exists():
            return candidate
    raise StoreError(str(path), f"has {_MAX_FORKS} forks beside it already; give `to=`")


def _free_session(source: PostgresStore) -> PostgresStore:
    for number in range(1, _MAX_FORKS):
        store = source.sibling(f"{source.session}-fork-{number}")
        if not list(store.journal()) and not store.state():
            return store
        store.close()
    raise StoreError(source.location, f"has {_MAX_FORKS} forks already; give `session=`")
