"""Claude Code session JSONL: one record per line, as `~/.claude/projects/*/<id>.jsonl`.

Records are read in file order, but for the branches a rewind or an edited prompt left
in the file: only the branch Claude Code resumes is the conversation
(`_claude_code_branches`; the others are counted in `meta["abandoned_records"]`).
`user` and `assistant` records are the conversation;
a `system` record of subtype `compact_boundary` marks Claude Code's own compaction, and
the `isCompactSummary` user line after it becomes a `Compaction` event (origin
`claude_code`). Every other record (`progress`, `file-history-snapshot`,
`queue-operation`, `summary` titles, other `system` subtypes such as hook summaries,
turn durations, API retries, and types added by later versions) is not sent to the
model and is skipped; the counts are kept in the session's `meta["skipped_records"]`.
Of the `attachment` records, what the harness gave the model beside the conversation,
the files and folders the user named with `@`, the folders' `CLAUDE.md`, the messages
the user typed while the agent worked and what the user's hooks added to the context
become events (`_claude_code_attachments`); the rest are counted as `attachment:<kind>`.

Claude Code writes an assistant message one content block per line, all lines sharing
`message.id`, and runs tools while the message streams, so results for its first calls
can sit between its lines. Lines of one message are merged into one `AssistantTurn`
until a user line with content other than tool results, a compaction or another message
ends it; the results are emitted after the merged turn, in file order. A message id
that comes back after that (a resumed session rewrites earlier turns) starts a new turn.

User lines the harness wrote (task notifications, local command output, hook
reminders, interruptions, expanded slash commands) become notices (`UserTurn.notice`;
see `_claude_code_notices`).

`toolUseResult` turns `Read` results into `FileRead` events and sub-agent runs into
`SubagentResult` events linked to `<session>/subagents/agent-<id>.jsonl`. Those
transcripts, and Claude Code's compaction runs (`agent-acompact-*.jsonl`), are
sessions of their own: `to_sessions` returns the main session first, then one per file.
A session file that holds a sub-agent's lines among its own (`isSidechain: true` beside
lines that are not) keeps them out of the main conversation, which the sub-agent's
messages never reached: each sub-agent run there (its lines, linked by `parentUuid` to
the first) is a session of its own after the main one.
The system prompt is not recorded, so no `SystemPrompt` event is made.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import JsonValue

from context_graph.errors import IngestError, SourceLocation
from context_graph.formats.anthropic.read import assistant_content, tool_result_event, user_content
from context_graph.graph.content import ContentPart
from context_graph.graph.events import AgentEvent, AssistantTurn, Compaction, ToolCall, UserTurn
from context_graph.importers._base import ImportedSession, RawInput, read_raw, text_content
from context_graph.importers._claude_code_attachments import attachment_events, attachment_kind
from context_graph.importers._claude_code_branches import abandoned
from context_graph.importers._claude_code_notices import Notices
from context_graph.importers._claude_code_records import (
    CallInfo,
    answer_event,
    optional_str,
    session_meta,
    subagent_files,
)

__all__ = ["sniff", "to_sessions"]

# How many leading records detection looks at.
_SNIFF_RECORDS = 50


# --- detection ------------------------------------------------------------------------------


def sniff(raw: RawInput) -> bool:
    """Whether `raw` is a Claude Code session: typed records carrying `sessionId` and `uuid`.

    Most leading records must be typed objects. A damaged line among them (no object, no
    type) does not hide the session: the import then refuses that line by its number,
    where "unrecognized input" would name none.
    """
    head = _records(raw.data)[:_SNIFF_RECORDS]
    typed = [r for r in head if isinstance(r, Mapping) and isinstance(r.get("type"), str)]
    if 2 * len(typed) <= len(head):
        return False
    if _loglines(raw.data) is not None:  # a web session: its records carry no ids
        return any(r["type"] in _TURNS and isinstance(r.get("message"), Mapping) for r in typed)
    return any("sessionId" in r and "uuid" in r for r in typed)


def _records(data: Any) -> list[Any]:
    if isinstance(data, list):
        return data
    lines = _loglines(data)
    if lines is not None:
        return lines
    return [data] if isinstance(data, Mapping) else []


def _loglines(data: Any) -> list[Any] | None:
    """The records of a Claude Code web session, if `data` is one.

    The sessions API returns a web session as `{"loglines": [...]}`: the records a CLI
    session file holds, without their ids.
    """
    found = data.get("loglines") if isinstance(data, Mapping) else None
    return found if isinstance(found, list) else None


# --- sessions -------------------------------------------------------------------------------


def to_sessions(raw: RawInput) -> list[ImportedSession]:
    """Convert a session file, then each sub-agent transcript found next to it.

    Raises:
        IngestError: a record is malformed, or a result answers no earlier call; names
            the file and line.
    """
    own, sidechains = _split_sidechains(raw)
    main = _session(own, _name(raw), branches=True)
    sessions = [main]
    for number, run in enumerate(sidechains, start=1):
        sub = _session(run, f"{main.name}.sidechain-{number}")
        sub.meta["parent_session"] = main.name
        sessions.append(sub)
    for path in subagent_files(raw):
        sub = _session(read_raw(path, strict=raw.strict), path.stem)
        sub.meta["parent_session"] = main.name
        sub.meta["compaction_run"] = path.stem.startswith("agent-acompact")
        sessions.append(sub)
    return sessions


def _is_sidechain(record: Any) -> bool:
    return isinstance(record, Mapping) and record.get("isSidechain") is True


def _split_sidechains(raw: RawInput) -> tuple[RawInput, list[RawInput]]:
    """The file's own lines, and each sub-agent run whose lines it holds among them.

    A file of sidechain lines only (a sub-agent's transcript) is its own session and is
    not split. The lines keep their line numbers. A run is the lines linked through
    `parentUuid` to one first line (a parent that is not a sidechain line of the file
    starts a run).
    """
    records = _records(raw.data)
    if not any(_is_sidechain(r) for r in records) or all(
        _is_sidechain(r) for r in records if isinstance(r, Mapping) and r.get("type") in _TURNS
    ):
        return raw, []
    own = [i for i, r in enumerate(records) if not _is_sidechain(r)]
    runs: dict[str, list[int]] = {}
    root_of: dict[str, str] = {}
    for index, record in enumerate(records):
        if not _is_sidechain(record):
            continue
        uuid, parent = record.get("uuid"), record.get("parentUuid")
        root = root_of.get(parent) if isinstance(parent, str) else None
        root = root or (uuid if isinstance(uuid, str) else f"line-{index}")
        if isinstance(uuid, str):
            root_of[uuid] = root
        runs.setdefault(root, []).append(index)

    def part(indexes: list[int]) -> RawInput:
        # JSONL keeps each record's line; a JSON file's records are then counted per part.
        lines = raw.lines
        return RawInput(
            data=[records[i] for i in indexes],
            path=raw.path,
            lines=None if lines is None else tuple(lines[i] for i in indexes),
            strict=raw.strict,
        )

    return part(own), [part(indexes) for indexes in runs.values()]


#: The record types that are the conversation.
_TURNS = frozenset({"user", "assistant"})


def _name(raw: RawInput) -> str:
    if raw.path is not None:
        return raw.path.stem
    for record in _records(raw.data):
        session_id = record.get("sessionId") if isinstance(record, Mapping) else None
        if isinstance(session_id, str) and session_id:
            return session_id
    return "claude_code"


def _session(raw: RawInput, name: str, *, branches: bool = False) -> ImportedSession:
    """One session's records as events; with `branches`, only its conversation's branch."""
    records = _records(raw.data)
    if not records:
        msg = "a Claude Code session must be a list of records"
        raise IngestError(msg, raw.at())
    left = abandoned(records) if branches else frozenset()
    walk = _Walk(raw)
    for index, record in enumerate(records):
        if index not in left:
            walk.record(index, record)
    walk.flush()
    meta = session_meta(records, walk.skipped)
    if left:
        meta["abandoned_records"] = len(left)
    return ImportedSession(name=name, events=walk.events, meta=meta)


# --- the walk -------------------------------------------------------------------------------


@dataclass
class _Turn:
    """An assistant message being merged from its lines, and the results held behind it."""

    index: int
    message_id: str | None
    model: str | None
    timestamp: str | None
    parts: list[ContentPart] = field(default_factory=list)
    calls: list[ToolCall] = field(default_factory=list)
    meta: dict[str, JsonValue] = field(default_factory=dict)
    uuids: list[JsonValue] = field(default_factory=list)
    held: list[AgentEvent] = field(default_factory=list)
    attached: list[AgentEvent] = field(default_factory=list)
    """What the harness attached while the turn was open (`_claude_code_attachments`)."""


@dataclass
class _Walk:
    """The state of converting one session file, record by record."""

    raw: RawInput
    events: list[AgentEvent] = field(default_factory=list)
    turn: _Turn | None = None
    calls: dict[str, CallInfo] = field(default_factory=dict)
    boundary: dict[str, JsonValue] | None = None
    notices: Notices = field(default_factory=Notices)
    skipped: Counter[str] = field(default_factory=Counter)

    def record(self, index: int, value: Any) -> None:
        where = self.raw.at(index)
        if not isinstance(value, Mapping):
            msg = f"record must be an object, got {type(value).__name__}"
            raise IngestError(msg, where)
        kind = value.get("type")
        if not isinstance(kind, str):
            raise IngestError("record has no string `type`", where.with_path("type"))
        if kind == "assistant":
            self._assistant(index, value)
        elif kind == "user":
            self._user(index, value)
        elif kind == "system" and value.get("subtype") == "compact_boundary":
            self._boundary(value)
        elif kind == "attachment":
            self._attachment(index, value)
        else:
            self.skipped[kind] += 1

    def flush(self) -> None:
        """Emit the assistant turn being merged, then the results held behind it."""
        turn, self.turn = self.turn, None
        if turn is None:
            return
        meta = {"uuids": turn.uuids, **turn.meta}
        self.events.append(
            AssistantTurn(
                content=tuple(turn.parts),
                tool_calls=tuple(turn.calls),
                message_id=turn.message_id,
                model=turn.model,
                timestamp=turn.timestamp,
                meta=meta,
                source=self.raw.at(turn.index),
            )
        )
        self.events.extend(turn.held)
        self.events.extend(turn.attached)

    # -- records --

    def _assistant(self, index: int, record: Mapping[str, Any]) -> None:
        where = self.raw.at(index, "message")
        message = _message(record, where, "assistant")
        message_id = optional_str(message.get("id"), where.with_path("id"), "`message.id`")
        parts, calls = assistant_content(message.get("content"), where)
        turn = self.turn
        if turn is None or message_id is None or turn.message_id != message_id:
            self.flush()
            turn = self.turn = self._new_turn(index, record, message, message_id)
        turn.parts.extend(parts)
        turn.calls.extend(calls)
        turn.uuids.append(record.get("uuid"))
        _update_turn_meta(turn.meta, record, message)
        for call in calls:
            self.calls[call.id] = CallInfo(call.name, json.loads(call.arguments))

    def _new_turn(
        self, index: int, record: Mapping[str, Any], message: Mapping[str, Any], mid: str | None
    ) -> _Turn:
        where = self.raw.at(index)
        model = optional_str(message.get("model"), where.with_path("message.model"), "model")
        return _Turn(index, mid, model, _timestamp(record, where))

    def _user(self, index: int, record: Mapping[str, Any]) -> None:
        where = self.raw.at(index, "message")
        message = _message(record, where, "user")
        if record.get("isCompactSummary") is True:
            self._compaction(index, record, message)
            return
        results, parts = user_content(message.get("content"), where)
        meta = _user_meta(record)
        timestamp = _timestamp(record, self.raw.at(index))
        for block, at in results:
            result = tool_result_event(block, at, self.calls, timestamp=timestamp, meta=meta)
            event = answer_event(result, self.calls[result.call_id], record, self.raw)
            self._emit_answer(event)
        if parts or not results:
            self.flush()
            turn = UserTurn(
                content=tuple(parts),
                notice=self.notices.is_notice(record, parts),
                timestamp=timestamp,
                meta=meta,
                source=self.raw.at(index),
            )
            self.events.append(turn)

    def _attachment(self, index: int, record: Mapping[str, Any]) -> None:
        events = attachment_events(record, self.raw.at(index))
        if events is None:
            self.skipped[f"attachment:{attachment_kind(record) or '?'}"] += 1
            return
        if self.turn is not None:
            # The model was given it after the open turn's results (a queued message
            # after the tool result it waited for), never between them.
            self.turn.attached.extend(events)
        else:
            self.events.extend(events)

    def _emit_answer(self, event: AgentEvent) -> None:
        if self.turn is not None:
            self.turn.held.append(event)
        else:
            self.events.append(event)

    def _boundary(self, record: Mapping[str, Any]) -> None:
        self.flush()
        details = record.get("compactMetadata")
        details = details if isinstance(details, Mapping) else {}
        boundary: dict[str, JsonValue] = {"boundary_uuid": record.get("uuid")}
        if isinstance(details.get("trigger"), str):
            boundary["trigger"] = details["trigger"]
        if type(details.get("preTokens")) is int:
            boundary["pre_tokens"] = details["preTokens"]
        self.boundary = boundary

    def _compaction(
        self, index: int, record: Mapping[str, Any], message: Mapping[str, Any]
    ) -> None:
        self.flush()
        where = self.raw.at(index, "message.content")
        summary = text_content(message.get("content"), where, "content")
        meta: dict[str, JsonValue] = {"uuid": record.get("uuid"), **(self.boundary or {})}
        self.boundary = None
        event = Compaction(
            content=summary,
            origin="claude_code",
            timestamp=_timestamp(record, self.raw.at(index)),
            meta=meta,
            source=self.raw.at(index),
        )
        self.events.append(event)


def _message(record: Mapping[str, Any], where: SourceLocation, role: str) -> Mapping[str, Any]:
    message = record.get("message")
    if not isinstance(message, Mapping):
        msg = f"a `{role}` record must have a `message` object"
        raise IngestError(msg, where)
    if message.get("role") != role:
        msg = f"a `{role}` record holds a message with role {message.get('role')!r}"
        raise IngestError(msg, where.with_path("role"))
    return message


def _timestamp(record: Mapping[str, Any], where: SourceLocation) -> str | None:
    return optional_str(record.get("timestamp"), where.with_path("timestamp"), "`timestamp`")


def _user_meta(record: Mapping[str, Any]) -> dict[str, JsonValue]:
    meta: dict[str, JsonValue] = {"uuid": record.get("uuid")}
    if record.get("isMeta") is True:
        meta["is_meta"] = True
    return meta


def _update_turn_meta(
    meta: dict[str, JsonValue], record: Mapping[str, Any], message: Mapping[str, Any]
) -> None:
    """Keep the request id, the latest usage and the final stop reason of a merged turn."""
    if isinstance(record.get("requestId"), str):
        meta["request_id"] = record["requestId"]
    if isinstance(message.get("usage"), Mapping):
        meta["usage"] = dict(message["usage"])
    if isinstance(message.get("stop_reason"), str):
        meta["stop_reason"] = message["stop_reason"]
    if record.get("isApiErrorMessage") is True:
        meta["is_api_error"] = True
