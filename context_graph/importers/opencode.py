"""opencode sessions, as `opencode export <session id>` writes them.

The export is one object, `{info, messages}`: `info` is the session (`id`, `directory`,
`title`, `version`, ...) and each message is `{info, parts}`. A message's `info` has its
`role` (`user` or `assistant`), `id` and `time.created` (Unix milliseconds); an
assistant's also its `modelID` and `tokens`. Its `parts` carry the content:

- `text` (`text`; `synthetic` when opencode wrote it, such as a file it read for an
  `@` mention), `reasoning` (`text`, as thinking);
- `tool`: one call and its outcome, `{tool, callID, state}`: `state.input` the
  arguments; `state.status` `completed` (`state.output`, and `state.metadata.exit` for
  a shell command) or `error` (`state.error`), or `pending` / `running` for a call the
  session ended in;
- `compaction`: opencode's own compaction, with the summary message after it (see
  `_with_compactions`): a `Compaction`;
- `step-start`, `step-finish` (a model step's bounds, its tokens and finish reason),
  `snapshot`, `patch`, `file`, `agent`, `retry` and the like: bookkeeping, or content
  that reaches the model through another part; counted in `meta["skipped_parts"]`.

An assistant message is one model step: an `AssistantTurn` with its text, reasoning and
calls, followed by a `ToolResult` for each call that finished. A user message's own text
is a `UserTurn`; its synthetic text a notice after it. The session database
(`~/.local/share/opencode/opencode.db`) holds the same messages and parts: given it, every
session in it is read, oldest first (`_opencode_db`), a sub-agent's with its parent's id
in `meta["parentID"]`; so is the storage folder of the versions before the database
(`_opencode_storage`). A session the user reverted (`/undo`, `info.revert`) is read
without what opencode removes at its next prompt (`_unreverted`).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import JsonValue

from context_graph.errors import IngestError, SourceLocation
from context_graph.graph.content import ContentPart, TextPart, ThinkingPart
from context_graph.graph.events import (
    AgentEvent,
    AssistantTurn,
    Compaction,
    ToolCall,
    ToolResult,
    UserTurn,
)
from context_graph.importers._base import (
    ImportedSession,
    Names,
    RawInput,
    expect_list,
    expect_mapping,
    expect_str,
    iso_timestamp,
    read_exit_code,
)

__all__ = ["sniff", "to_sessions"]

_ROLES = Names({"user", "assistant"})
#: Call states with an outcome; `pending` and `running` have none yet.
_FINISHED = Names({"completed", "error"})


def sniff(raw: RawInput) -> bool:
    """Whether `raw` is an opencode export, or a list of them (never raises).

    An export has `info` with an `id`, and `{info, parts}` messages; the session database
    reads as a list of them (`_opencode_db`).
    """
    if isinstance(raw.data, list) and raw.lines is None:
        return bool(raw.data) and all(_is_export(d) for d in raw.data[:5])
    return _is_export(raw.data)


def _is_export(data: Any) -> bool:
    if not isinstance(data, Mapping) or not isinstance(data.get("info"), Mapping):
        return False
    if not isinstance(data["info"].get("id"), str) or not isinstance(data.get("messages"), list):
        return False
    return all(
        isinstance(m, Mapping) and isinstance(m.get("info"), Mapping) and "parts" in m
        for m in data["messages"][:5]
    )


def to_sessions(raw: RawInput) -> list[ImportedSession]:
    """Convert an export to one session, named by its id; a database's, one per session.

    Raises:
        IngestError: the export or one of its messages is malformed (names the message,
            the part and the field; in a database, the session's place too).
    """
    if isinstance(raw.data, list) and raw.lines is None:
        return [_session(raw, export, index) for index, export in enumerate(raw.data)]
    return [_session(raw, raw.data, None)]


def _session(raw: RawInput, value: Any, place: int | None) -> ImportedSession:
    data = expect_mapping(value, raw.at(place), "an opencode export")
    info = expect_mapping(data.get("info"), raw.at(place, "info"), "`info`")
    session_id = expect_str(info.get("id"), raw.at(place, "info.id"), "`info.id`")
    messages = expect_list(data.get("messages"), raw.at(place, "messages"), "`messages`")
    messages, reverted = _unreverted(messages, info.get("revert"), raw.at(place, "info.revert"))
    per_message: list[list[AgentEvent]] = []
    skipped: Counter[str] = Counter()
    models: list[JsonValue] = []
    for index, message in enumerate(messages):
        where = raw.at(place, f"messages[{index}]")
        found: list[AgentEvent] = []
        model = _message(message, where, found, skipped)
        per_message.append(found)
        if model is not None and model not in models:
            models.append(model)
    events = _with_compactions(messages, per_message, raw, place)
    meta: dict[str, JsonValue] = {"format": "opencode", "session_id": session_id}
    for key in ("title", "directory", "version", "slug", "parentID"):
        if isinstance(info.get(key), str):
            meta[key] = info[key]
    meta["models"] = models
    if reverted:
        meta["reverted_messages"] = reverted
    if skipped:
        counts: dict[str, JsonValue] = dict(sorted(skipped.items()))
        meta["skipped_parts"] = counts
    return ImportedSession(name=session_id, events=events, meta=meta)


def _unreverted(
    messages: Sequence[Any], revert: Any, where: SourceLocation
) -> tuple[Sequence[Any], int]:
    """The messages a reverted session keeps, and how many it leaves out.

    A session the user reverted (`/undo`) still holds the messages after the point it
    went back to, until its next prompt removes them; the model is never sent them
    again. As opencode removes them: the message `revert.messageID` and every later one,
    or, with `revert.partID`, only that message's parts from that part on.
    """
    if revert is None:
        return messages, 0
    revert = expect_mapping(revert, where, "`revert`")
    target = expect_str(revert.get("messageID"), where.with_path("messageID"), "`messageID`")
    part = revert.get("partID")
    if part is not None:
        part = expect_str(part, where.with_path("partID"), "`partID`")
    place = next((i for i, m in enumerate(messages) if _message_id(m) == target), None)
    if place is None:  # opencode removes nothing then either
        return messages, 0
    if part is None:
        return messages[:place], len(messages) - place
    message = messages[place]
    parts = message.get("parts") if isinstance(message, Mapping) else None
    if isinstance(parts, list):
        cut = next((i for i, p in enumerate(parts) if _part_id(p) == part), len(parts))
        message = {**message, "parts": parts[:cut]}
    return [*messages[:place], message], len(messages) - place - 1


def _part_id(part: Any) -> Any:
    return part.get("id") if isinstance(part, Mapping) else None


def _with_compactions(
    messages: Sequence[Any], per_message: list[list[AgentEvent]], raw: RawInput, place: int | None
) -> list[AgentEvent]:
    """The messages' events in order, opencode's own compactions made `Compaction`s.

    opencode compacts with a user message holding a `compaction` part, answered by an
    assistant message marked `summary` whose text is the summary; from then on the model
    is sent the summary, then the messages from the part's `tail_start_id` on, verbatim.
    So the pair becomes one `Compaction` (origin `opencode`), placed before that tail
    message: it stands for everything before it, as the model saw. Without a tail the
    summary stands where the pair was.
    """
    inserts: dict[int, list[AgentEvent]] = {}
    ids = [_message_id(m) for m in messages]
    for index in range(len(messages) - 1):
        tail = _compaction_tail(messages[index])
        summary = messages[index + 1]
        if tail is None or not _is_summary(summary):
            continue
        where = raw.at(place, f"messages[{index + 1}]")
        event = Compaction(
            content=_summary_text(per_message[index + 1]),
            origin="opencode",
            timestamp=next((e.timestamp for e in per_message[index + 1]), None),
            meta={"tail_start_id": tail or None, "message_id": ids[index + 1]},
            source=where,
        )
        per_message[index] = per_message[index + 1] = []
        at = ids.index(tail) if tail and tail in ids[:index] else index
        inserts.setdefault(at, []).append(event)
    events: list[AgentEvent] = []
    for index, found in enumerate(per_message):
        events.extend(inserts.get(index, ()))
        events.extend(found)
    return events


def _message_id(message: Any) -> str | None:
    info = message.get("info") if isinstance(message, Mapping) else None
    found = info.get("id") if isinstance(info, Mapping) else None
    return found if isinstance(found, str) else None


def _compaction_tail(message: Any) -> str | None:
    """A compaction request's `tail_start_id` ("" when it names none); `None`: no request."""
    for part in message.get("parts") or ():
        if isinstance(part, Mapping) and part.get("type") == "compaction":
            tail = part.get("tail_start_id")
            return tail if isinstance(tail, str) else ""
    return None


def _is_summary(message: Any) -> bool:
    info = message.get("info") if isinstance(message, Mapping) else None
    return (
        isinstance(info, Mapping)
        and info.get("role") == "assistant"
        and info.get("summary") is True
    )


def _summary_text(events: Sequence[AgentEvent]) -> str:
    """The text of the summary message, from the turn its parts were read into (checked)."""
    return "\n".join(
        part.text
        for event in events
        if isinstance(event, AssistantTurn)
        for part in event.content
        if isinstance(part, TextPart)
    )


def _message(
    value: Any, where: SourceLocation, events: list[AgentEvent], skipped: Counter[str]
) -> str | None:
    """Add one message's events; the model an assistant message names, if any."""
    message = expect_mapping(value, where, "a message")
    info = expect_mapping(message.get("info"), where.with_path("info"), "message `info`")
    role = info.get("role")
    if role not in _ROLES:
        msg = f"message role must be user or assistant, got {role!r}"
        raise IngestError(msg, where.with_path("info.role"))
    parts = expect_list(message.get("parts"), where.with_path("parts"), "message `parts`")
    created = info.get("time")
    timestamp = _time(created.get("created") if isinstance(created, Mapping) else None)
    meta: dict[str, JsonValue] = {}
    if isinstance(info.get("id"), str):
        meta["message_id"] = info["id"]
    if role == "user":
        events.extend(_user(parts, where, timestamp, meta, skipped))
        return None
    model = info.get("modelID")
    model = model if isinstance(model, str) else None
    tokens = info.get("tokens")
    if isinstance(tokens, Mapping):
        meta["usage"] = _usage(tokens)
    events.extend(_assistant(parts, where, timestamp, model, meta, skipped))
    return model


def _user(
    parts: Sequence[Any],
    where: SourceLocation,
    timestamp: str | None,
    meta: dict[str, JsonValue],
    skipped: Counter[str],
) -> list[AgentEvent]:
    said: list[ContentPart] = []
    added: list[ContentPart] = []
    for j, value in enumerate(parts):
        at = where.with_path(f"parts[{j}]")
        part = expect_mapping(value, at, "a part")
        kind = part.get("type")
        if kind == "text":
            text = TextPart(text=expect_str(part.get("text"), at.with_path("text"), "`text`"))
            (added if part.get("synthetic") is True else said).append(text)
        elif kind != "compaction":  # a compaction request is read with its summary
            skipped[kind if isinstance(kind, str) else "?"] += 1
    turns: list[AgentEvent] = []
    if said:
        turns.append(UserTurn(content=tuple(said), timestamp=timestamp, meta=meta, source=where))
    if added:
        notice = UserTurn(
            content=tuple(added), notice=True, timestamp=timestamp, meta=meta, source=where
        )
        turns.append(notice)
    return turns


def _assistant(
    parts: Sequence[Any],
    where: SourceLocation,
    timestamp: str | None,
    model: str | None,
    meta: dict[str, JsonValue],
    skipped: Counter[str],
) -> list[AgentEvent]:
    content: list[ContentPart] = []
    calls: list[ToolCall] = []
    results: list[AgentEvent] = []
    for j, value in enumerate(parts):
        at = where.with_path(f"parts[{j}]")
        part = expect_mapping(value, at, "a part")
        kind = part.get("type")
        if kind == "text":
            content.append(
                TextPart(text=expect_str(part.get("text"), at.with_path("text"), "`text`"))
            )
        elif kind == "reasoning":
            thought = expect_str(part.get("text"), at.with_path("text"), "`text`")
            # Unsigned: the export keeps no provider signature to send back.
            content.append(ThinkingPart(thinking=thought))
        elif kind == "tool":
            call, result = _tool(part, at)
            calls.append(call)
            if result is not None:
                results.append(result)
        else:
            skipped[kind if isinstance(kind, str) else "?"] += 1
    turn = AssistantTurn(
        content=tuple(content),
        tool_calls=tuple(calls),
        model=model,
        timestamp=timestamp,
        meta=meta,
        source=where,
    )
    return [turn, *results]


def _tool(part: Mapping[str, Any], at: SourceLocation) -> tuple[ToolCall, ToolResult | None]:
    """A `tool` part: the call, and its result when it finished."""
    call_id = expect_str(part.get("callID"), at.with_path("callID"), "`callID`")
    if not call_id:
        raise IngestError("`callID` must not be empty", at.with_path("callID"))
    name = expect_str(part.get("tool"), at.with_path("tool"), "`tool`")
    if not name:
        raise IngestError("`tool` must not be empty", at.with_path("tool"))
    state = expect_mapping(part.get("state"), at.with_path("state"), "`state`")
    arguments = state.get("input", {})
    expect_mapping(arguments, at.with_path("state.input"), "`state.input`")
    call = ToolCall(id=call_id, name=name, arguments=json.dumps(arguments, ensure_ascii=False))
    status = state.get("status")
    if status not in _FINISHED:
        return call, None
    failed = status == "error"
    key = "error" if failed else "output"
    output = expect_str(state.get(key, ""), at.with_path(f"state.{key}"), f"`state.{key}`")
    details = state.get("metadata")
    exit_code = read_exit_code(details.get("exit")) if isinstance(details, Mapping) else None
    times = state.get("time")
    ended = _time(times.get("end") if isinstance(times, Mapping) else None)
    result = ToolResult(
        call_id=call_id,
        name=name,
        content=output,
        is_error=failed,
        exit_code=exit_code,
        timestamp=ended,
        meta={"status": str(status)},
        source=at,
    )
    return call, result


def _time(milliseconds: Any) -> str | None:
    """An ISO time for opencode's Unix milliseconds; `None` when it is not a number."""
    if isinstance(milliseconds, bool) or not isinstance(milliseconds, int | float):
        return None
    return iso_timestamp(milliseconds / 1000)


def _usage(tokens: Mapping[str, Any]) -> dict[str, JsonValue]:
    """The provider's usage as opencode counts it: whole numbers only, the cache flattened."""
    usage: dict[str, JsonValue] = {}
    for key, value in tokens.items():
        if type(value) is int and value >= 0:
            usage[str(key)] = value
        elif key == "cache" and isinstance(value, Mapping):
            for sub, count in value.items():
                if type(count) is int and count >= 0:
                    usage[f"cache_{sub}"] = count
    return usage
