"""Journal entries of a session store, to and from JSON text.

Two kinds of entry make the journal:

- `events`: one ingested batch, a JSON list of agent events. Node ids are derived from
  each event's JSON encoding, which is stable, so the same events give the same nodes.
- `proposals`: the proposals of one apply (or one atomic batch) with the audit entries
  the working graph wrote for them: nodes round-trip by their `kind`, edits by `op`.

Every body carries a checksum, so an entry edited after it was written is named as
such instead of replaying into something subtly different.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, TypeAlias

from pydantic import BaseModel, ConfigDict, TypeAdapter, ValidationError

from context_graph.errors import StoreCorruptError
from context_graph.events import AgentEvent
from orchestrator.buffer import AuditEntry
from processors.base import Proposal

__all__ = [
    "EntryKind",
    "JournalEntry",
    "checksum",
    "decode_entry",
    "encode_applied",
    "encode_events",
]

EntryKind: TypeAlias = Literal["events", "proposals"]

_events_adapter: TypeAdapter[list[AgentEvent]] = TypeAdapter(list[AgentEvent])


class _Applied(BaseModel):
    """The body of a `proposals` entry."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    proposals: tuple[Proposal, ...]
    """The proposals, in the order they were applied."""
    audit: tuple[AuditEntry, ...]
    """The audit entry each one got, in the same order."""


@dataclass(frozen=True, slots=True)
class JournalEntry:
    """One entry of a session's journal, decoded.

    Attributes:
        seq: The entry's position in the journal (1-based, increasing).
        kind: `events` (an ingested batch) or `proposals` (an applied batch).
        events: The events of an `events` entry, in order.
        proposals: The proposals of a `proposals` entry, in the order applied.
        audit: The audit entries of those proposals, one each.
    """

    seq: int
    kind: EntryKind
    events: tuple[AgentEvent, ...] = ()
    proposals: tuple[Proposal, ...] = ()
    audit: tuple[AuditEntry, ...] = ()


def encode_events(events: Sequence[AgentEvent]) -> str:
    """The body of an `events` entry."""
    return _events_adapter.dump_json(list(events)).decode("utf-8")


def encode_applied(proposals: Sequence[Proposal], audit: Sequence[AuditEntry]) -> str:
    """The body of a `proposals` entry."""
    return _Applied(proposals=tuple(proposals), audit=tuple(audit)).model_dump_json()


def checksum(body: str | bytes) -> str:
    """The checksum stored beside a body (16 hex digits of its UTF-8 bytes)."""
    data = body.encode("utf-8") if isinstance(body, str) else body
    return hashlib.blake2b(data, digest_size=8).hexdigest()


def decode_entry(path: str, seq: int, kind: str, body: bytes | None, digest: str) -> JournalEntry:
    """Decode one stored entry (its body as UTF-8 bytes), checking its checksum first.

    Raises:
        StoreCorruptError: the body was changed after it was written, does not decode,
            or the kind is unknown; names the file and the entry.
    """
    if not isinstance(body, bytes) or checksum(body) != digest:
        msg = (
            "the entry was changed after it was written (its checksum does not match); "
            "restore the file from a copy, or truncate the journal before this entry"
        )
        raise StoreCorruptError(path, msg, seq=seq)
    try:
        if kind == "events":
            return JournalEntry(seq, "events", events=tuple(_events_adapter.validate_json(body)))
        if kind == "proposals":
            applied = _Applied.model_validate_json(body)
            _check_pairs(path, seq, applied)
            return JournalEntry(seq, "proposals", proposals=applied.proposals, audit=applied.audit)
    except ValidationError as exc:
        raise StoreCorruptError(
            path, f"{kind} do not decode: {_first_error(exc)}", seq=seq
        ) from None
    msg = f"unknown entry kind {kind!r}; this version knows `events` and `proposals`"
    raise StoreCorruptError(path, msg, seq=seq)


def _check_pairs(path: str, seq: int, applied: _Applied) -> None:
    if not applied.proposals or len(applied.proposals) != len(applied.audit):
        msg = (
            f"{len(applied.proposals)} proposals and {len(applied.audit)} audit entries; "
            "an applied batch has one audit entry per proposal, and at least one"
        )
        raise StoreCorruptError(path, msg, seq=seq)


def _first_error(exc: ValidationError) -> str:
    first = exc.errors()[0]
    where = ".".join(str(part) for part in first["loc"])
    return f"{first['msg']}" + (f" at `{where}`" if where else "")
