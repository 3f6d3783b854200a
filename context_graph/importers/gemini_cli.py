"""Gemini CLI chat recordings: `~/.gemini/tmp/<project>/chats/session-*.json[l]`.

The file is one object, `{sessionId, projectHash, startTime, lastUpdated, messages}`, or,
from gemini-cli 0.61 on, a log of JSON lines that builds that object (`_fold`, read as
the CLI reads it back): the first line holds the session's fields; a line with a string
`id` is a message, added at the end or, when that id was recorded before, replacing it
in its place (the CLI writes a model turn as it starts, then again with its calls); a
`$set` line sets fields (a `messages` list among them replaces every message); a
`$rewindTo` line takes back the message it names and every later one (all of them when
it names none recorded). Other lines are counted in `meta["skipped_records"]`. Errors
then name the line a message was last written on.

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

The log records each round's results twice: in the model turn's `toolCalls`, and as a
`user` message of `functionResponse` parts (what the CLI sends back). A response to a
call already answered is that copy, counted in `meta["skipped_messages"]` as
`function_response`; one to a call recorded without a result answers it.

Strays (refused by a strict read; kept as a `Note` by a lenient one, and listed in the
session's `strays`): a message of a type the recording format does not have, a
`functionResponse` that names another call than the one it is recorded under, and one
in a user message that answers no call recorded before it.
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
from context_graph.formats.harness import is_harness_message
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
    """Whether `raw` is a chat recording (never raises).

    A `sessionId` and typed `messages`, or a log of lines whose first holds `sessionId`
    and `projectHash`.
    """
    data = raw.data
    if isinstance(data, list):
        # The header is the log's own mark; a line of a kind added later stays readable.
        return (
            bool(data)
            and _is_header(data[0])
            and all(isinstance(r, Mapping) for r in data[:_SNIFF])
        )
    if not isinstance(data, Mapping) or not isinstance(data.get("sessionId"), str):
        return False
    messages = data.get("messages")
    if not isinstance(messages, list):
        return False
    return not messages or (
        isinstance(messages[0], Mapping) and "type" in messages[0] and "role" not in messages[0]
    )


#: How many lines of a log detection looks at.
_SNIFF = 50


def _is_header(record: Any) -> bool:
    return (
        isinstance(record, Mapping)
        and isinstance(record.get("sessionId"), str)
        and isinstance(record.get("projectHash"), str)
    )


# --- the log --------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Folded:
    """A log read back: the recording's object, and where each message was written."""

    data: dict[str, Any]
    places: list[tuple[int, str]]
    """Per message of `data["messages"]`: the line's record index and the path in it."""
    skipped: Counter[str]


def _fold(raw: RawInput) -> _Folded:
    """Replay a log of lines into the object a `.json` recording holds (see the docstring).

    Raises:
        IngestError: a line is not an object, `$set` is not an object, `$rewindTo` not a
            string, or a message's `id` is empty; names the line.
    """
    fields: dict[str, Any] = {}
    messages: dict[str, tuple[Any, int, str]] = {}  # id -> (message, record index, path)
    skipped: Counter[str] = Counter()
    for index, record in enumerate(raw.data):
        line = expect_mapping(record, raw.at(index), "a line of a chat recording")
        if "$rewindTo" in line:
            target = expect_str(line["$rewindTo"], raw.at(index, "$rewindTo"), "`$rewindTo`")
            ids = list(messages)
            for taken in ids[ids.index(target) :] if target in messages else ids:
                del messages[taken]
        elif "$set" in line:
            update = expect_mapping(line["$set"], raw.at(index, "$set"), "`$set`")
            if "messages" in update:
                listed = expect_list(
                    update["messages"], raw.at(index, "$set.messages"), "`$set.messages`"
                )
                messages = {}
                for k, message in enumerate(listed):
                    _put(messages, message, index, f"$set.messages[{k}]", raw)
            fields.update({k: v for k, v in update.items() if k != "messages"})
        elif isinstance(line.get("id"), str):
            _put(messages, line, index, "", raw)
        elif _is_header(line):
            fields.update({k: v for k, v in line.items() if k != "messages"})
            if "messages" in line:
                listed = expect_list(line["messages"], raw.at(index, "messages"), "`messages`")
                for k, message in enumerate(listed):
                    _put(messages, message, index, f"messages[{k}]", raw)
        else:
            skipped[",".join(sorted(str(key) for key in line)) or "{}"] += 1
    data = {**fields, "messages": [message for message, _, _ in messages.values()]}
    places = [(index, path) for _, index, path in messages.values()]
    return _Folded(data, places, skipped)


def _put(
    messages: dict[str, tuple[Any, int, str]], message: Any, index: int, path: str, raw: RawInput
) -> None:
    """Record `message` under its id: in its earlier place if it had one, else last."""
    at = raw.at(index, path or None)
    body = expect_mapping(message, at, "a message")
    message_id = expect_str(body.get("id"), at.with_path("id"), "message `id`")
    if not message_id:
        raise IngestError("message `id` must not be empty", at.with_path("id"))
    messages[message_id] = (body, index, path)


# --- conversion -----------------------------------------------------------------------------


@dataclass
class _Walk:
    raw: RawInput
    strays: StrayKeeper
    places: list[tuple[int, str]] | None = None
    """Where each message was written, for a log (`_Folded.places`)."""
    events: list[AgentEvent] = field(default_factory=list)
    skipped: Counter[str] = field(default_factory=Counter)
    answered: dict[str, bool] = field(default_factory=dict)
    """Each call recorded so far, and whether a result answered it."""
    calls: dict[str, ToolCall] = field(default_factory=dict)

    def at(self, index: int, path: str = "") -> SourceLocation:
        if self.places is None:
            return self.raw.at(index, f"messages[{index}]{path}")
        record, prefix = self.places[index]
        joined = f"{prefix}{path}" if prefix else path.removeprefix(".")
        return self.raw.at(record, joined or None)


def to_sessions(raw: RawInput) -> list[ImportedSession]:
    """Convert one chat recording to one session, named by its `sessionId`.

    Raises:
        IngestError: the recording is malformed, or (strict) holds a stray; names the
            message index and JSON path.
    """
    folded = _fold(raw) if isinstance(raw.data, list) else None
    data = expect_mapping(
        raw.data if folded is None else folded.data, raw.at(), "a Gemini CLI chat recording"
    )
    first = None if folded is None else 0  # a log's fields come from its first line
    session_id = expect_str(data.get("sessionId"), raw.at(first, "sessionId"), "`sessionId`")
    messages = expect_list(data.get("messages"), raw.at(None, "messages"), "`messages`")
    walk = _Walk(raw, strays_of(raw), None if folded is None else folded.places)
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
    if folded is not None and folded.skipped:
        lines: dict[str, JsonValue] = dict(sorted(folded.skipped.items()))
        meta["skipped_records"] = lines
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
    raw_content = message.get("content")
    if kind == "user":
        raw_content = _responses(raw_content, walk.at(index, ".content"), timestamp, walk)
        if raw_content is None:
            return None
    content = _content(raw_content, walk.at(index, ".content"), str(kind))
    meta: dict[str, JsonValue] = {}
    if isinstance(message.get("id"), str):
        meta["message_id"] = message["id"]
    if kind == "user":
        # The CLI's `<session_context>` (workspace, date, file tree) and the snapshot its
        # compression writes are its own, not the user's request (`formats.harness`).
        notice = is_harness_message(content)
        turn = UserTurn(
            content=tuple(content), notice=notice, timestamp=timestamp, meta=meta, source=where
        )
        walk.events.append(turn)
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
    walk.answered[call_id] = False
    walk.calls[call_id] = call
    if result is None:
        return call, []
    answers = _answers(call, status, timestamp, result, where.with_path("result"), walk)
    walk.answered[call_id] = any(isinstance(a, ToolResult) for a in answers)
    return call, answers


def _responses(value: Any, where: SourceLocation, timestamp: str | None, walk: _Walk) -> Any | None:
    """A user message's content without its `functionResponse` parts, which answer calls.

    A response to a call already answered is the log's copy of that result, and is
    dropped; one to a call recorded without a result answers it (a `ToolResult`); one
    to no call recorded before is a stray. `None` when nothing else is left (the
    message was the results alone).
    """
    if not isinstance(value, list) or not any(
        isinstance(p, Mapping) and "functionResponse" in p for p in value
    ):
        return value
    rest: list[Any] = []
    for j, item in enumerate(value):
        if not (isinstance(item, Mapping) and "functionResponse" in item):
            rest.append(item)
            continue
        at = where.with_path(f"[{j}].functionResponse")
        body = expect_mapping(item["functionResponse"], at, "`functionResponse`")
        response_id = optional_id(body, at)
        name = name_of(body, at, "functionResponse")
        call = walk.calls.get(response_id or "")
        if call is not None and walk.answered.get(call.id):
            walk.skipped["function_response"] += 1
        elif call is not None and call.name == name:
            walk.events.extend(
                _answers(call, None, timestamp, [item], where.with_path(f"[{j}]"), walk)
            )
            walk.answered[call.id] = True
        else:
            named = f"`{name}`" if response_id is None else f"`{name}` (id `{response_id}`)"
            msg = f"the response {named} in a user message answers no call recorded before it"
            text = response_text(
                expect_mapping(body.get("response", {}), at.with_path("response"), "`response`"),
                at.with_path("response"),
            )
            note = f"a tool result for {named} answered no recorded call; its output: {text}"
            walk.events.append(walk.strays.keep(IngestError(msg, at), note, timestamp=timestamp))
    return rest or None


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
