"""Journal entries of a session store, to and from JSON text.

Two kinds of entry make the journal:

- `events`: one ingested batch, a JSON list of agent events. Node ids are derived from
  each event's JSON encoding, which is stable, so the same events give the same nodes.
- `proposals`: the proposals of one apply (or one atomic batch) with the audit entries
  the working graph wrote for them: nodes round-trip by their `kind`, edits by `op`.

Every body carries a checksum, so an entry edited after it was written is named as
such instead of replaying into something subtly different.

Encoding and decoding are symmetric by construction: both use pydantic's JSON mode, and
the encoder decodes what it wrote and encodes that again before handing the body on: the
two encodings must be the same bytes (node ids are derived from them). A body the
decoder would refuse (nesting past its depth limit, an integer past Python's digit
limit) or read back as something else is refused at write time, before anything is
applied, instead of making the file unreadable later: events with an `IngestError`
naming the event, proposals with an `InvariantViolation` (a pipeline reports it as a
rejected proposal and goes on).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, TypeAlias, TypeVar

from pydantic import BaseModel, ConfigDict, TypeAdapter, ValidationError

from context_graph.errors import (
    ConfigurationError,
    IngestError,
    InvariantViolation,
    SourceLocation,
    StoreCorruptError,
)
from context_graph.graph.events import AgentEvent
from orchestrator.working.buffer import AuditEntry
from processors.base import Proposal

__all__ = [
    "EntryKind",
    "JournalEntry",
    "check_audit",
    "checksum",
    "decode_entry",
    "encode_applied",
    "encode_events",
]

_T = TypeVar("_T")

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
    """The body of an `events` entry, checked to decode back to `events`.

    Raises:
        IngestError: an event could not be read back from the journal (names it).
    """
    batch = list(events)
    body, problem = _round_trip(_events_adapter, batch)
    if problem is None:
        return body
    index = next(
        (i for i, event in enumerate(batch) if _round_trip(_events_adapter, [event])[1]), None
    )
    msg = f"the event cannot be kept in the session journal: {problem}"
    raise IngestError(msg, SourceLocation(index=index))


def encode_applied(proposals: Sequence[Proposal], audit: Sequence[AuditEntry]) -> str:
    """The body of a `proposals` entry, checked to decode back to what it was given.

    Raises:
        InvariantViolation: the proposals could not be read back from the journal.
    """
    applied = _Applied(proposals=tuple(proposals), audit=tuple(audit))
    body, problem = _round_trip(_applied_adapter, applied)
    if problem is None:
        return body
    names = ", ".join(sorted({f"`{p.processor}`" for p in proposals}))
    msg = (
        f"journal_readable: the proposal from {names} cannot be kept in the session "
        f"journal ({problem}); nothing was applied"
    )
    raise InvariantViolation(msg)


_applied_adapter: TypeAdapter[_Applied] = TypeAdapter(_Applied)


def _round_trip(adapter: TypeAdapter[_T], value: _T) -> tuple[str, str | None]:
    """`value` encoded, and why it does not read back to the same bytes (`None`: it does).

    Fields left out of the JSON (an event's `source`) do not take part.
    """
    try:
        data = adapter.dump_json(value)
    except ValueError as exc:  # pydantic's serialization error (a lone surrogate, say)
        return "", f"it does not encode: {exc}"
    try:
        back = adapter.validate_json(data)
    except ValidationError as exc:
        return "", f"it would not decode: {_first_error(exc)}"
    if adapter.dump_json(back) != data:
        return "", "it would read back as something else"
    return data.decode("utf-8"), None


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


def check_audit(proposals: tuple[Proposal, ...], audit: tuple[AuditEntry, ...]) -> None:
    """Refuse audit entries that are not one per proposal, in order.

    Raises:
        ConfigurationError: names the first mismatch.
    """
    if not proposals or len(proposals) != len(audit):
        msg = (
            f"append_proposals: {len(proposals)} proposals and {len(audit)} audit "
            "entries; pass what one apply or apply_batch call took and returned"
        )
        raise ConfigurationError(msg)
    for index, (proposal, entry) in enumerate(zip(proposals, audit, strict=True)):
        if proposal.processor != entry.processor:
            msg = (
                f"append_proposals: audit entry {index} is from `{entry.processor}`, "
                f"but proposal {index} from `{proposal.processor}`; keep them in order"
            )
            raise ConfigurationError(msg)
