"""Qwen Code session files: `~/.qwen/projects/<project>/chats/<session id>.jsonl`.

One JSON record a line, each `{uuid, parentUuid, sessionId, timestamp, type, ...}` of type
`user`, `assistant`, `tool_result` or `system`, the first three with a `message` in
Gemini's `Content` shape (`{role, parts}`: text, `thought` text, `functionCall`,
`functionResponse`, inline data), whatever provider the session used. The import is the
history Qwen Code itself rebuilds when it resumes the session (read in its 0.24 bundle):

- the conversation is the chain of `parentUuid` links back from the last record that is
  part of it (artifact records and source snapshots are not), so a rewind, which
  appends a `rewind` record linked to where the user went back to, leaves the turns
  after that point out; they are counted in `meta["abandoned_records"]`. The chain
  stops at a parent missing from the file, as Qwen Code's does (joining the records
  before it could bring back turns the user rewound away); `meta["history_gap"]` names
  the missing parent;
- records sharing a `uuid` are one message, their parts in file order;
- `system` records are never sent to the model, but for two: a `chat_compression`
  record with a `compressedHistory` (what Qwen Code sent in place of the history from
  then on) becomes a `Compaction` event (origin `qwen_code`) standing for everything
  before it, its content the text of the user-role contents of that history (the
  summary, and the files and reminders it restores; the model's acknowledgement and a
  call still waiting for its result, which the records before hold, are left out); and
  a `slash_command` result that only the user saw takes the command's own user record
  out, as Qwen Code does. The others are counted in `meta["skipped_records"]` by subtype;
- a `mid_turn_user_message` (what the user typed while tools ran) joins the user content
  before it (the tool results it was sent with); `realtime_message` records are left out.

Messages become events as the Gemini request-body reader makes them
(`context_graph.formats.gemini.read.ContentWalk`): model contents are assistant turns
(with the record's `model`, and `usageMetadata` as `meta["usage"]`), function responses
are tool results (an `error` or `cancelled` status in the record's `toolCallResult`
marks the result as an error), user text is a user turn. A user record Qwen Code writes
itself (`provenance` other than `real_user`: a background task's notification, a cron
prompt, a goal's runtime message) is a notice. The system prompt is not recorded.

A malformed record (not an object, identity fields missing, a `message` without
`parts`) is refused with its line, as are records of two sessions in one file; a strict
import also refuses a tool result that answers no call (`strict=False` keeps it as a
note, listed in the session's `strays`). Records of a type Qwen Code does not write are
counted in `meta["skipped_records"]`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import JsonValue

from context_graph.errors import IngestError
from context_graph.formats.gemini.read import ContentWalk
from context_graph.formats.gemini.read_parts import data_key, plain_part
from context_graph.graph.content import ContentPart, TextPart
from context_graph.graph.events import AgentEvent, AssistantTurn, Compaction, ToolResult, UserTurn
from context_graph.importers._base import (
    ImportedSession,
    Names,
    RawInput,
    expect_list,
    expect_mapping,
    strays_of,
    with_fields,
)

__all__ = ["sniff", "to_sessions"]

_TYPES = Names({"user", "assistant", "tool_result", "system"})
_MESSAGES = frozenset({"user", "assistant", "tool_result"})
#: System records that are not part of the conversation's chain (Qwen Code's own lists).
_OFF_CHAIN = frozenset(
    {
        "session_artifact_event",
        "session_artifact_snapshot",
        "session_sources_snapshot",
        "managed_session_header_v1",
        "managed_session_event_v1",
        "managed_session_commit_v1",
    }
)
_ERROR_STATUSES = frozenset({"error", "cancelled"})
_SNIFF_RECORDS = 50
_NO_SUMMARY = "[Qwen Code compressed the conversation here; no readable summary was recorded]"


def sniff(raw: RawInput) -> bool:
    """Whether `raw` is a Qwen Code session: typed records with ids and `Content` messages.

    Claude Code's records have the same ids; their messages have `content`, never `parts`.
    """
    head = _records(raw.data)[:_SNIFF_RECORDS]
    typed = [r for r in head if isinstance(r, Mapping) and r.get("type") in _TYPES]
    if not typed or 2 * len(typed) <= len(head):
        return False
    if not all("uuid" in r and "sessionId" in r for r in typed):
        return False
    messages = [r["message"] for r in typed if isinstance(r.get("message"), Mapping)]
    return any(isinstance(m.get("parts"), list) for m in messages) and not any(
        "content" in m for m in messages
    )


def _records(data: Any) -> list[Any]:
    if isinstance(data, list):
        return data
    return [data] if isinstance(data, Mapping) else []


def to_sessions(raw: RawInput) -> list[ImportedSession]:
    """Convert a Qwen Code session file to its one session.

    Raises:
        IngestError: a record is malformed, the file holds two sessions, or (strict) a
            tool result answers no call; names the line.
    """
    records = _records(raw.data)
    if not records:
        raise IngestError("a Qwen Code session must be a list of records", raw.at())
    skipped: Counter[str] = Counter()
    valid = _valid(records, raw, skipped)
    chain, gap = _chain(records, valid)
    kept = {index for message in chain for index in message.indexes}
    abandoned = sum(
        1
        for index in valid
        if index not in kept
        and records[index]["type"] in _MESSAGES
        and isinstance(records[index].get("message"), Mapping)
    )
    walk = ContentWalk(lambda i, path: raw.at(i, f"message{path}"), None, strays_of(raw))
    _read(_history(chain, raw, skipped), raw, walk)
    meta = _meta(records, valid, chain, skipped)
    if abandoned:
        meta["abandoned_records"] = abandoned
    if gap is not None:
        meta["history_gap"] = gap
    session_id = meta.get("session_id")
    name = raw.path.stem if raw.path is not None else str(session_id or "qwen_code")
    return [ImportedSession(name=name, events=walk.events, meta=meta, strays=walk.strays.found)]


# --- records and the chain -------------------------------------------------------------------


def _valid(records: Sequence[Any], raw: RawInput, skipped: Counter[str]) -> list[int]:
    """The indexes of the records Qwen Code reads; refuses a malformed one.

    A record of a type Qwen Code does not write is skipped and counted.
    """
    valid: list[int] = []
    session: str | None = None
    for index, value in enumerate(records):
        where = raw.at(index)
        record = expect_mapping(value, where, "a Qwen Code record")
        for key in ("uuid", "sessionId"):
            found = record.get(key)
            if not isinstance(found, str) or not found:
                msg = f"a Qwen Code record needs a non-empty string `{key}`"
                raise IngestError(msg, where.with_path(key))
        parent = record.get("parentUuid")
        if parent is not None and not isinstance(parent, str):
            raise IngestError(
                "`parentUuid` must be a string or null", where.with_path("parentUuid")
            )
        kind = record.get("type")
        if not isinstance(kind, str):
            raise IngestError("a Qwen Code record needs a string `type`", where.with_path("type"))
        if session is None:
            session = record["sessionId"]
        elif record["sessionId"] != session:
            msg = f"records of two sessions in one file: {session!r} and {record['sessionId']!r}"
            raise IngestError(msg, where.with_path("sessionId"))
        if kind not in _TYPES:
            skipped[f"type:{kind}"] += 1
            continue
        message = record.get("message")
        if message is not None:
            body = expect_mapping(message, where.with_path("message"), "`message`")
            expect_list(body.get("parts"), where.with_path("message.parts"), "`message.parts`")
        valid.append(index)
    return valid


@dataclass
class _Message:
    """One message of the chain: the records sharing its uuid, merged in file order."""

    indexes: list[int]
    """The records' positions in the file; the first one's line names the message."""
    record: Mapping[str, Any]
    """The first record: its type, subtype, provenance and payload are the message's."""
    parts: list[Any]
    role: str | None
    model: str | None
    usage: Any
    tool_result: Any
    timestamp: str | None

    @property
    def index(self) -> int:
        return self.indexes[0]

    @property
    def type(self) -> str:
        return str(self.record["type"])

    @property
    def subtype(self) -> str | None:
        subtype = self.record.get("subtype")
        return subtype if isinstance(subtype, str) else None

    @classmethod
    def of(cls, records: Sequence[Any], indexes: list[int]) -> _Message:
        """The records at `indexes` as one message (Qwen Code's aggregation)."""
        first = records[indexes[0]]
        parts: list[Any] = []
        role: str | None = None
        model = usage = result = timestamp = None
        for index in indexes:
            record = records[index]
            message = record.get("message")
            if isinstance(message, Mapping):
                if role is None and isinstance(message.get("role"), str):
                    role = message["role"]
                parts.extend(message["parts"])
            usage = record.get("usageMetadata") or usage
            result = result or record.get("toolCallResult")
            model = model or record.get("model")
            stamp = record.get("timestamp")
            if isinstance(stamp, str) and (timestamp is None or stamp > timestamp):
                timestamp = stamp
        return cls(
            indexes,
            first,
            parts,
            role,
            model if isinstance(model, str) else None,
            usage,
            result,
            timestamp,
        )


def _chain(records: Sequence[Any], valid: Sequence[int]) -> tuple[list[_Message], str | None]:
    """The conversation's messages, root first, and the missing parent the chain stopped at."""
    fragments: dict[str, list[int]] = {}
    leaf: str | None = None
    for index in valid:
        record = records[index]
        if record["type"] == "system" and record.get("subtype") in _OFF_CHAIN:
            continue
        fragments.setdefault(record["uuid"], []).append(index)
        leaf = record["uuid"]
    uuids: list[str] = []
    seen: set[str] = set()
    gap: str | None = None
    current = leaf
    while current is not None and current not in seen:
        seen.add(current)
        uuids.append(current)
        parent = records[fragments[current][0]].get("parentUuid")
        if parent is not None and parent not in fragments:
            gap = parent
            break
        current = parent
    return [_Message.of(records, fragments[uuid]) for uuid in reversed(uuids)], gap


# --- the history Qwen Code sends --------------------------------------------------------------


@dataclass
class _Content:
    """A content of the history Qwen Code sends, and the message it came from."""

    message: _Message
    role: str
    parts: list[Any]


@dataclass
class _Compressed:
    """Where a `chat_compression` record replaced the history, and what with."""

    message: _Message
    history: Sequence[Any]


def _history(
    chain: Sequence[_Message], raw: RawInput, skipped: Counter[str]
) -> list[_Content | _Compressed]:
    """The chain as Qwen Code's resume reads it: contents, and where compressions went."""
    history: list[_Content | _Compressed] = []
    previous: _Message | None = None  # the last message that added a content
    for message in chain:
        if message.type == "system":
            if message.subtype == "slash_command":
                if previous is not None and _local_command(message, previous):
                    history.pop()
                previous = None if previous is not None and previous.type == "user" else previous
                continue
            compressed = _compressed(message, raw)
            if compressed is None:
                skipped[f"system:{message.subtype}"] += 1
                continue
            history.append(compressed)
            previous = None
            continue
        if message.subtype == "realtime_message" or message.role is None:
            skipped[f"{message.type}:{message.subtype or 'no message'}"] += 1
            continue
        last = history[-1] if history else None
        if (
            message.subtype == "mid_turn_user_message"
            and isinstance(last, _Content)
            and last.role == "user"
        ):
            last.parts.extend(message.parts)
            previous = message
            continue
        history.append(_Content(message, message.role, list(message.parts)))
        previous = message
    return history


def _local_command(result: _Message, previous: _Message) -> bool:
    """Whether a slash command's result record takes its command's user record out.

    A command whose output only the user saw (every item an `assistant` UI item, not
    sent to the model) typed as the whole of a user message: Qwen Code leaves that
    message out of the history it resumes.
    """
    payload = result.record.get("systemPayload")
    if not isinstance(payload, Mapping) or payload.get("phase") != "result":
        return False
    items = payload.get("outputHistoryItems")
    if payload.get("sentToModel") is True or not isinstance(items, list) or not items:
        return False
    if not all(isinstance(i, Mapping) and i.get("type") == "assistant" for i in items):
        return False
    parts = previous.parts
    return (
        previous.type == "user"
        and previous.subtype is None
        and previous.role == "user"
        and len(parts) == 1
        and isinstance(parts[0], Mapping)
        and set(parts[0]) == {"text"}
        and parts[0]["text"] == payload.get("rawCommand")
    )


def _compressed(message: _Message, raw: RawInput) -> _Compressed | None:
    """A `chat_compression` record's replacement history, or `None` for other records."""
    if message.subtype != "chat_compression":
        return None
    where = raw.at(message.index, "systemPayload")
    payload = message.record.get("systemPayload")
    if not isinstance(payload, Mapping) or not payload.get("compressedHistory"):
        return None
    history = expect_list(
        payload["compressedHistory"], where.with_path("compressedHistory"), "`compressedHistory`"
    )
    return _Compressed(message, history)


# --- events -----------------------------------------------------------------------------------


def _read(history: Sequence[_Content | _Compressed], raw: RawInput, walk: ContentWalk) -> None:
    """Add the events of every content of `history` to `walk`, in order."""
    for item in history:
        message = item.message
        start = len(walk.events)
        if isinstance(item, _Compressed):
            walk.events.append(_compaction(item, raw))
            continue
        walk.model = message.model
        walk.read(message.index, {"role": item.role, "parts": item.parts})
        for position in range(start, len(walk.events)):
            walk.events[position] = _finished(walk.events[position], message)


def _finished(event: AgentEvent, message: _Message) -> AgentEvent:
    """`event`, read from `message`, with what the record says beside its content."""
    meta: dict[str, JsonValue] = {}
    fields: dict[str, Any] = {"timestamp": message.timestamp}
    if isinstance(event, AssistantTurn) and isinstance(message.usage, Mapping):
        meta["usage"] = dict(message.usage)
    if isinstance(event, ToolResult):
        result = message.tool_result
        if (
            isinstance(result, Mapping)
            and result.get("callId") == event.call_id
            and result.get("status") in _ERROR_STATUSES
        ):
            fields["is_error"] = True
    if isinstance(event, UserTurn) and (
        message.record.get("provenance", "real_user") != "real_user"
    ):
        fields["notice"] = True
    return with_fields(event, meta=meta or None, **fields)


def _compaction(item: _Compressed, raw: RawInput) -> Compaction:
    """A compression's replacement history as a `Compaction`: its user-role contents' text."""
    where = raw.at(item.message.index, "systemPayload.compressedHistory")
    parts: list[ContentPart] = []
    for k, value in enumerate(item.history):
        at = where.with_path(f"[{k}]")
        content = expect_mapping(value, at, "a content")
        raw_parts = expect_list(content.get("parts"), at.with_path("parts"), "`parts`")
        if content.get("role", "user") != "user":
            continue
        for n, part in enumerate(raw_parts):
            place = at.with_path(f"parts[{n}]")
            body = expect_mapping(part, place, "a part")
            if data_key(body, place) in ("functionCall", "functionResponse"):
                continue
            parts.append(plain_part(body, place, "user"))
    readable = [p for p in parts if not isinstance(p, TextPart) or p.text.strip()]
    return Compaction(
        content=tuple(readable) or (TextPart(text=_NO_SUMMARY),),
        origin="qwen_code",
        timestamp=item.message.timestamp,
        source=raw.at(item.message.index),
    )


def _meta(
    records: Sequence[Any], valid: Sequence[int], chain: Sequence[_Message], skipped: Counter[str]
) -> dict[str, JsonValue]:
    first = records[valid[0]] if valid else records[0]
    meta: dict[str, JsonValue] = {"format": "qwen_code"}
    for key, name in (("sessionId", "session_id"), ("cwd", "cwd"), ("version", "version")):
        value = first.get(key) if isinstance(first, Mapping) else None
        if isinstance(value, str):
            meta[name] = value
    model = next((m.model for m in chain if m.model is not None), None)
    if model is not None:
        meta["model"] = model
    if skipped:
        meta["skipped_records"] = dict(sorted(skipped.items()))
    return meta
