"""Gemini CLI chat recordings: `~/.gemini/tmp/<project>/chats/session-*.json`.

The file is one object, `{sessionId, projectHash, startTime, lastUpdated, messages}`.
Each message has `id`, `timestamp`, `type` and `content`; a `gemini` message also has
`model`, `thoughts` (`[{subject, description, timestamp}]`), `tokens` (the provider's
usage: `input`, `output`, `cached`, `thoughts`, `tool`, `total`) and `toolCalls`
(`[{id, name, args, result, status, timestamp, ...}]`, `result` being the parts sent back:
a `functionResponse`, sometimes with more parts such as an image read).

The CLI adds the calls of every model round that had no text to the last `gemini`
message, so one message may hold several rounds. Calls recorded at one `timestamp` are
one round (the CLI records a round's calls together when they finish): each round becomes
an `AssistantTurn` followed by its results. The message's text, thoughts (as unsigned
`ThinkingPart`s, `provider="gemini"`; the recording keeps no signatures), model and usage
(`meta["usage"]`, the CLI's own key names) go on its first round.

A call's `status` of `error` or `cancelled` marks its result as an error, as does an
`error` key in its response. A call with no `result` is left unanswered (a session cut
off while it ran). `info`, `error` and `warning` messages are the CLI's own UI lines,
never sent to the model: they are skipped and counted in `meta["skipped_messages"]`.

Strays (refused by a strict read; kept as a `Note` by a lenient one, and listed in the
session's `strays`): a message of a type the recording format does not have, and a
`functionResponse` that names another call than the one it is recorded under.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from itertools import groupby
from typing import Any

from pydantic import JsonValue

from context_graph.errors import IngestError, SourceLocation
from context_graph.formats.gemini.read import response_text
from context_graph.formats.gemini.read_parts import (
    data_key,
    dump,
    get,
    key_of,
    name_of,
    optional_id,
    plain_part,
)
from context_graph.formats.wires import GEMINI_FORMAT
from context_graph.graph.content import ContentPart, TextPart, ThinkingPart
from context_graph.graph.events import AgentEvent, AssistantTurn, ToolCall, ToolResult, UserTurn
from context_graph.importers._base import (
    ImportedSession,
    Names,
    RawInput,
    StrayKeeper,
    expect_list,
    expect_mapping,
    expect_str,
    strays_of,
)

__all__ = ["sniff", "to_sessions"]

_TYPES = Names({"user", "gemini"})
_SKIPPED = Names({"info", "error", "warning"})
_ERROR_STATUSES = Names({"error", "cancelled"})


# --- detection ------------------------------------------------------------------------------


def sniff(raw: RawInput) -> bool:
    """Whether `raw` is a chat recording: a `sessionId` and typed `messages` (never raises)."""
    data = raw.data
    if not isinstance(data, Mapping) or not isinstance(data.get("sessionId"), str):
        return False
    messages = data.get("messages")
    if not isinstance(messages, list):
        return False
    return not messages or (
        isinstance(messages[0], Mapping) and "type" in messages[0] and "role" not in messages[0]
    )


# --- conversion -----------------------------------------------------------------------------


@dataclass
class _Walk:
    raw: RawInput
    strays: StrayKeeper
    events: list[AgentEvent] = field(default_factory=list)
    skipped: Counter[str] = field(default_factory=Counter)

    def at(self, index: int, path: str = "") -> SourceLocation:
        return self.raw.at(index, f"messages[{index}]{path}")


def to_sessions(raw: RawInput) -> list[ImportedSession]:
    """Convert one chat recording to one session, named by its `sessionId`.

    Raises:
        IngestError: the recording is malformed, or (strict) holds a stray; names the
            message index and JSON path.
    """
    data = expect_mapping(raw.data, raw.at(), "a Gemini CLI chat recording")
    session_id = expect_str(data.get("sessionId"), raw.at(None, "sessionId"), "`sessionId`")
    messages = expect_list(data.get("messages"), raw.at(None, "messages"), "`messages`")
    walk = _Walk(raw, strays_of(raw))
    models: list[str] = []
    for index, value in enumerate(messages):
        model = _message(index, value, walk)
        if model is not None and model not in models:
            models.append(model)
    meta: dict[str, JsonValue] = {"format": "gemini_cli", "session_id": session_id}
    for key, name in (("projectHash", "project_hash"), ("startTime", "start_time")):
        if isinstance(data.get(key), str):
            meta[name] = data[key]
    if models:
        several: list[JsonValue] = list(models)
        meta["model"] = models[0] if len(models) == 1 else several
    if walk.skipped:
        counts: dict[str, JsonValue] = dict(sorted(walk.skipped.items()))
        meta["skipped_messages"] = counts
    return [
        ImportedSession(name=session_id, events=walk.events, meta=meta, strays=walk.strays.found)
    ]


def _message(index: int, value: Any, walk: _Walk) -> str | None:
    """Add one message's events; return the model it names, if any."""
    where = walk.at(index)
    message = expect_mapping(value, where, "a message")
    kind = message.get("type")
    if isinstance(kind, str) and kind in _SKIPPED:
        walk.skipped[kind] += 1
        return None
    timestamp = _optional_str(message, "timestamp", walk.at(index, ".timestamp"))
    if kind not in _TYPES:
        msg = (
            f"unknown message type {kind!r}; expected user or gemini "
            f"(info, error and warning are skipped)"
        )
        error = IngestError(msg, walk.at(index, ".type"))
        text = f"a message of unknown type {kind!r} was recorded; it held: {dump(message, where)}"
        walk.events.append(walk.strays.keep(error, text, timestamp=timestamp))
        return None
    content = _content(message.get("content"), walk.at(index, ".content"), str(kind))
    meta: dict[str, JsonValue] = {}
    if isinstance(message.get("id"), str):
        meta["message_id"] = message["id"]
    if kind == "user":
        walk.events.append(
            UserTurn(content=tuple(content), timestamp=timestamp, meta=meta, source=where)
        )
        return None
    return _gemini(index, message, content, meta, walk)


def _gemini(
    index: int,
    message: Mapping[str, Any],
    content: list[ContentPart],
    meta: dict[str, JsonValue],
    walk: _Walk,
) -> str | None:
    model = _optional_str(message, "model", walk.at(index, ".model"))
    timestamp = _optional_str(message, "timestamp", walk.at(index, ".timestamp"))
    thoughts = _thoughts(message.get("thoughts"), walk.at(index, ".thoughts"))
    usage = _usage(message.get("tokens"), walk.at(index, ".tokens"))
    if usage is not None:
        meta["usage"] = usage
    found = message.get("toolCalls")
    raw_calls = expect_list(
        [] if found is None else found, walk.at(index, ".toolCalls"), "`toolCalls`"
    )
    records = [
        (k, expect_mapping(c, walk.at(index, f".toolCalls[{k}]"), "a tool call"))
        for k, c in enumerate(raw_calls)
    ]
    rounds = [list(group) for _, group in groupby(records, key=lambda r: r[1].get("timestamp"))]
    first: list[ContentPart] = [*thoughts, *content]
    later: dict[str, JsonValue] = {k: v for k, v in meta.items() if k == "message_id"}
    for number, calls in enumerate(rounds or [[]]):
        parsed = [_call(index, k, record, walk) for k, record in calls]
        turn = AssistantTurn(
            content=tuple(first) if number == 0 else (),
            tool_calls=tuple(call for call, _ in parsed),
            model=model,
            timestamp=timestamp,
            meta=meta if number == 0 else later,
            source=walk.at(index),
        )
        walk.events.append(turn)
        for _, answers in parsed:
            walk.events.extend(answers)
    return model


def _call(
    index: int, k: int, record: Mapping[str, Any], walk: _Walk
) -> tuple[ToolCall, list[AgentEvent]]:
    """One recorded call and the events its `result` becomes (a result, or strays)."""
    where = walk.at(index, f".toolCalls[{k}]")
    call_id = expect_str(record.get("id"), where.with_path("id"), "tool call `id`")
    if not call_id:
        raise IngestError("tool call `id` must not be empty", where.with_path("id"))
    name = name_of(record, where, "tool call")
    args = record.get("args")
    if args is not None:
        expect_mapping(args, where.with_path("args"), "tool call `args`")
    call = ToolCall(id=call_id, name=name, arguments=dump(args or {}, where.with_path("args")))
    status = _optional_str(record, "status", where.with_path("status"))
    timestamp = _optional_str(record, "timestamp", where.with_path("timestamp"))
    result = record.get("result")
    if result is None:
        return call, []
    return call, _answers(call, status, timestamp, result, where.with_path("result"), walk)


def _answers(
    call: ToolCall,
    status: str | None,
    timestamp: str | None,
    result: Any,
    where: SourceLocation,
    walk: _Walk,
) -> list[AgentEvent]:
    parts = [result] if isinstance(result, str | Mapping) else result
    items = expect_list(parts, where, "tool call `result`")
    content: list[ContentPart] = []
    strays: list[AgentEvent] = []
    is_error = status in _ERROR_STATUSES
    for j, item in enumerate(items):
        at = where.with_path(f"[{j}]")
        if isinstance(item, str):
            content.append(TextPart(text=item))
            continue
        part = expect_mapping(item, at, "a result part")
        if data_key(part, at) != "functionResponse":
            content.append(plain_part(part, at, "tool result"))
            continue
        inner = at.with_path(key_of(part, "functionResponse"))
        text, failed, stray = _response(call, get(part, "functionResponse"), inner, timestamp, walk)
        if stray is not None:
            strays.append(stray)
            continue
        content.append(TextPart(text=text))
        is_error = is_error or failed
    answer = ToolResult(
        call_id=call.id,
        name=call.name,
        content=tuple(content),
        is_error=is_error,
        timestamp=timestamp,
        meta={} if status is None else {"status": status},
        source=where,
    )
    # A result whose only part named another call answers nothing: the call stays open.
    return [answer, *strays] if content or not strays else strays


def _response(
    call: ToolCall, value: Any, where: SourceLocation, timestamp: str | None, walk: _Walk
) -> tuple[str, bool, AgentEvent | None]:
    """A `functionResponse`'s text and error flag, or the note for one naming another call."""
    body = expect_mapping(value, where, "`functionResponse`")
    name = name_of(body, where, "functionResponse")
    response = expect_mapping(
        body.get("response", {}), where.with_path("response"), "functionResponse `response`"
    )
    text = response_text(response, where.with_path("response"))
    response_id = optional_id(body, where)
    if name == call.name and response_id in (None, call.id):
        return text, "error" in response, None
    named = f"`{name}`" if response_id is None else f"`{name}` (id `{response_id}`)"
    msg = f"the response {named} is recorded under the call `{call.name}` (id `{call.id}`)"
    note = (
        f"a tool result for {named} was recorded under the call `{call.name}` "
        f"(id `{call.id}`), which it does not answer; its output: {text}"
    )
    return "", False, walk.strays.keep(IngestError(msg, where), note, timestamp=timestamp)


# --- fields ---------------------------------------------------------------------------------


def _content(value: Any, where: SourceLocation, role: str) -> list[ContentPart]:
    """A message's `content`: a string, one part, or a list of parts and strings."""
    if value is None or value == "":
        return []
    if isinstance(value, str):
        return [TextPart(text=value)]
    items = [value] if isinstance(value, Mapping) else value
    parts: list[ContentPart] = []
    for j, item in enumerate(expect_list(items, where, "message `content`")):
        at = where.with_path(f"[{j}]") if not isinstance(value, Mapping) else where
        if isinstance(item, str):
            parts.append(TextPart(text=item))
        else:
            parts.append(plain_part(item, at, role))
    return parts


def _thoughts(value: Any, where: SourceLocation) -> list[ContentPart]:
    if value is None:
        return []
    out: list[ContentPart] = []
    for j, item in enumerate(expect_list(value, where, "`thoughts`")):
        at = where.with_path(f"[{j}]")
        thought = expect_mapping(item, at, "a thought")
        subject = _optional_str(thought, "subject", at.with_path("subject")) or ""
        description = _optional_str(thought, "description", at.with_path("description")) or ""
        text = f"**{subject}** {description}".strip() if subject else description
        out.append(ThinkingPart(thinking=text, provider=GEMINI_FORMAT))
    return out


def _usage(value: Any, where: SourceLocation) -> dict[str, JsonValue] | None:
    if value is None:
        return None
    tokens = expect_mapping(value, where, "`tokens`")
    for key, count in tokens.items():
        if type(count) is not int or count < 0:
            msg = f"`tokens.{key}` must be a whole number of tokens, got {count!r}"
            raise IngestError(msg, where.with_path(str(key)))
    return {str(key): count for key, count in tokens.items()}


def _optional_str(body: Mapping[str, Any], key: str, where: SourceLocation) -> str | None:
    value = body.get(key)
    return None if value is None else expect_str(value, where, f"`{key}`")
