"""Cline CLI session files: `~/.cline/data/sessions/<id>/<id>.messages.json`.

Cline 3 (the `cline` CLI on the npm registry) keeps a session as one JSON object,
`{version, sessionId, messages, system_prompt, ...}`, its messages in Anthropic's shape
whatever provider the session used, each with Cline's own fields (`id`, `ts`,
`modelInfo`, `metrics`, `metadata`). The import is the history Cline resumes the session
from (read in its 3.0 bundle, and checked against what the real CLI sends):

- `system_prompt` is the system prompt;
- a message whose `metadata.displayOnly` is set was shown to the user, never sent: left
  out (counted in `meta["display_only"]`);
- a user text is stored wrapped in `<user_input mode="act">...</user_input>` (a slash
  command in `<user_command slash="...">`): the wrapper is Cline's bookkeeping and is
  read off, as Cline does (`user_text`);
- a tool result's `content` is the tool's own output, a list of JSON objects (a shell
  command's `{query, result}` per command): it becomes the JSON text Cline sends,
  compact, as `JSON.stringify` writes it; typed `text` and `image` blocks stay blocks;
- an assistant message's `modelInfo.id` is its model, `metrics` its usage;
- Cline's own compaction is a file beside, `<id>.compaction.json`: `{source_message_count,
  source_prefix_hash, source_last_message_key, messages}`, the messages it sends in place
  of the first `source_message_count` (a summary message, then the newest of them kept
  as they were). Cline uses it only while those messages are still the session's: the
  hash of them (or, without one, the key of the last) must match; then the summary
  becomes a `Compaction` event (origin `cline`) standing for the messages before the
  kept ones, which follow it. A stale or unreadable compaction file is left out and said
  so in `meta["compaction"]`.

When it sends that history, Cline's message builder also cuts each long tool output in
the middle (to about 10,000 characters, around `...[truncated N chars]...`) and marks file
reads a newer read superseded; the record keeps both whole, and so does the import:
what a request can hold is the engine's to decide.

Cline's `<id>.json` beside the messages says where and how the session ran: its `cwd`,
`provider`, `status`, `started_at`, `ended_at`, title and Cline version go to the
session's meta (`_session_info`); an unreadable one is said so in
`meta["session_info"]` and changes nothing else.

A malformed message (not an object, an unknown role, a block Anthropic does not have) is
refused with its index and JSON path; so is a tool result no call asked for (a lenient
import keeps it as a note, listed in the session's `strays`).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import JsonValue

from context_graph.errors import IngestError, SourceLocation
from context_graph.formats.anthropic.read import (
    assistant_content,
    tool_result_event,
    user_content,
)
from context_graph.graph.content import TextPart
from context_graph.graph.events import (
    AgentEvent,
    AssistantTurn,
    Compaction,
    SystemPrompt,
    UserTurn,
)
from context_graph.importers._base import (
    ImportedSession,
    Names,
    RawInput,
    StrayKeeper,
    expect_list,
    expect_mapping,
    expect_str,
    iso_timestamp,
    strays_of,
    with_fields,
)

__all__ = ["compaction_path", "info_path", "sniff", "to_sessions", "user_text"]

_ROLES = Names({"user", "assistant"})
_TYPED = Names({"text", "image"})
_WRAPPERS = ("user_input", "user_command")
_SLASH = re.compile(r'^<user_command\b[^>]*\bslash="([^"]+)"[^>]*>([\s\S]*)</user_command>$')
_MODE_NOTICE = re.compile(r"<mode_notice>[\s\S]*?</mode_notice>")
#: Cline's version of the compaction source hash (`cline-session-compaction-source-v2`).
_HASH_HEAD = "cline-session-compaction-source-v2\n"
_COMPACTION_FIELDS = ("role", "content", "agent", "sessionId", "metadata", "modelInfo", "metrics")


def sniff(raw: RawInput) -> bool:
    """Whether `raw` is a Cline session: an object with `sessionId`, a `version` and messages.

    An Anthropic request body has `messages` too, never a `sessionId` beside a `version`.
    """
    data = raw.data
    if not isinstance(data, Mapping) or not isinstance(data.get("messages"), list):
        return False
    version = data.get("version")
    return (
        isinstance(data.get("sessionId"), str)
        and isinstance(version, int)
        and not isinstance(version, bool)
    )


def compaction_path(messages_file: Path) -> Path:
    """Where Cline keeps the compaction of the session in `messages_file`."""
    return _beside(messages_file, ".compaction.json")


def info_path(messages_file: Path) -> Path:
    """Where Cline keeps what it knows of the session in `messages_file` (`<id>.json`)."""
    return _beside(messages_file, ".json")


def _beside(messages_file: Path, suffix: str) -> Path:
    """Cline's file `<id><suffix>` in the folder of the session's `<id>.messages.json`."""
    name = messages_file.name.removesuffix(".messages.json")
    return messages_file.with_name(f"{name}{suffix}")


# What the session's own file says of it, as the session's meta (Cline's key, ours).
_INFO_FIELDS = (
    ("cwd", "cwd"),
    ("provider", "provider"),
    ("status", "status"),
    ("started_at", "started_at"),
    ("ended_at", "ended_at"),
)


def user_text(text: str) -> str:
    """A stored user text as Cline sends it: its `<user_input>` wrapper read off.

    A slash command's wrapper gives the command back (`/compact keep tests`); a
    `<mode_notice>` Cline added for the user is dropped.
    """
    stripped = text.strip()
    command = _SLASH.match(stripped)
    if command is not None:
        body = _plain(command.group(2))
        return f"/{command.group(1)} {body}".rstrip()
    return _plain(stripped)


def _plain(text: str) -> str:
    for tag in _WRAPPERS:
        whole = re.fullmatch(rf"<{tag}\b[^>]*>([\s\S]*)</{tag}>", text)
        text = (whole.group(1) if whole else re.sub(rf"</?{tag}[^>]*>", "", text)).strip()
    return _MODE_NOTICE.sub("", text).strip()


def to_sessions(raw: RawInput) -> list[ImportedSession]:
    """Convert a Cline session file (and its compaction beside it) to its one session.

    Raises:
        IngestError: a message is malformed, or (strict) a tool result answers no call;
            names the message and its JSON path.
    """
    data = expect_mapping(raw.data, raw.at(None, ""), "Cline session")
    messages = expect_list(data.get("messages"), raw.at(None, "messages"), "`messages`")
    sent = [
        (index, message)
        for index, message in enumerate(messages)
        if not (isinstance(message, Mapping) and _display_only(message))
    ]
    session_id = expect_str(data.get("sessionId"), raw.at(None, "sessionId"), "`sessionId`")
    meta: dict[str, JsonValue] = {"session_id": session_id}
    if len(sent) < len(messages):
        meta["display_only"] = len(messages) - len(sent)
    _session_info(raw, meta)
    compaction = _compaction(raw, [m for _, m in sent], meta)
    events: list[AgentEvent] = _system(data, raw)
    known: set[str] = set()
    keeper = strays_of(raw)
    for position, (index, message) in enumerate(sent):
        if compaction is not None and position == compaction[0]:
            events.append(compaction[1])
        where = raw.at(None, f"messages[{index}]")
        events.extend(_message(message, where, known, keeper))
    if compaction is not None and compaction[0] == len(sent):
        events.append(compaction[1])  # it stands for every message, and none came after
    name = raw.path.name.removesuffix(".messages.json") if raw.path else session_id
    return [ImportedSession(name=name, events=events, meta=meta, strays=keeper.found)]


def _display_only(message: Mapping[str, Any]) -> bool:
    metadata = message.get("metadata")
    return isinstance(metadata, Mapping) and metadata.get("displayOnly") is True


def _system(data: Mapping[str, Any], raw: RawInput) -> list[AgentEvent]:
    prompt = data.get("system_prompt")
    if prompt is None:
        return []
    text = expect_str(prompt, raw.at(None, "system_prompt"), "`system_prompt`")
    return [SystemPrompt(content=(TextPart(text=text),), source=raw.at(None, "system_prompt"))]


def _message(
    message: Any, where: SourceLocation, known: set[str], keeper: StrayKeeper
) -> list[AgentEvent]:
    body = expect_mapping(message, where, "message")
    role = body.get("role")
    if role not in _ROLES:
        msg = f"unknown role {role!r}; Cline's messages are `user` or `assistant`"
        raise IngestError(msg, where.with_path("role"))
    when = iso_timestamp(body["ts"] / 1000) if _is_number(body.get("ts")) else None
    if role == "assistant":
        parts, calls = assistant_content(body.get("content"), where)
        known.update(call.id for call in calls)
        turn = AssistantTurn(content=tuple(parts), tool_calls=tuple(calls), source=where)
        return [with_fields(turn, model=_model(body), timestamp=when, meta=_usage(body))]
    results, parts = user_content(_as_sent(body.get("content")), where)
    events: list[AgentEvent] = []
    for block, at in results:
        if block.get("tool_use_id") not in known:
            call = block.get("tool_use_id")
            problem = f"tool result `{call}` has no matching tool_use earlier in the history"
            error = IngestError(problem, at.with_path("tool_use_id"))
            text = (
                f"a result of tool call {call!r}, which no call made, held: {block.get('content')}"
            )
            events.append(keeper.keep(error, text, timestamp=when))
            continue
        events.append(tool_result_event(block, at, known, timestamp=when))
    texts = [
        p.model_copy(update={"text": user_text(p.text)}) if isinstance(p, TextPart) else p
        for p in parts
    ]
    kept = [p for p in texts if not (isinstance(p, TextPart) and not p.text)]
    if kept or not results:
        events.append(UserTurn(content=tuple(kept), timestamp=when, source=where))
    return events


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _as_sent(content: Any) -> Any:
    """A user message's content with each tool result's output as Cline sends it."""
    if not isinstance(content, list):
        return content
    out: list[Any] = []
    for block in content:
        if isinstance(block, Mapping) and block.get("type") == "tool_result":
            # `name` is Cline's own (the tool the result answers); Anthropic has none.
            result = {k: v for k, v in block.items() if k != "name"}
            result["content"] = _result_content(block.get("content"))
            out.append(result)
        else:
            out.append(block)
    return out


def _result_content(content: Any) -> Any:
    """A tool's output as sent: typed blocks as they are, anything else its JSON text."""
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, list) and all(
        isinstance(b, Mapping) and b.get("type") in _TYPED for b in content
    ):
        return content
    return _js_json(content)


def _js_json(value: Any) -> str:
    """`value` as JavaScript's `JSON.stringify` writes it (no spaces, non-ASCII as is)."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _model(body: Mapping[str, Any]) -> str | None:
    info = body.get("modelInfo")
    model = info.get("id") if isinstance(info, Mapping) else None
    return model if isinstance(model, str) else None


def _usage(body: Mapping[str, Any]) -> dict[str, JsonValue] | None:
    metrics = body.get("metrics")
    if not isinstance(metrics, Mapping):
        return None
    return {"usage": {k: v for k, v in metrics.items() if _is_number(v)}}


# --- Cline's compaction ---------------------------------------------------------------------


def _session_info(raw: RawInput, meta: dict[str, JsonValue]) -> None:
    """Add what Cline's `<id>.json` beside the messages says of the session to `meta`.

    The folder the session ran in, the provider, how it ended, when, its title and the
    Cline version; a field of another type is left out. The file is Cline's
    bookkeeping, not the conversation: one that cannot be read is said so in
    `meta["session_info"]` and changes nothing else.
    """
    if raw.path is None:
        return
    path = info_path(raw.path)
    if not path.is_file():
        return
    try:
        info = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError, RecursionError) as error:
        meta["session_info"] = f"unreadable ({type(error).__name__}): left out"
        return
    if not isinstance(info, Mapping):
        meta["session_info"] = "not a session file Cline writes: left out"
        return
    for theirs, ours in _INFO_FIELDS:
        if isinstance(value := info.get(theirs), str) and value:
            meta[ours] = value
    metadata = info.get("metadata")
    metadata = metadata if isinstance(metadata, Mapping) else {}
    if isinstance(title := metadata.get("title"), str) and title:
        meta["title"] = title
    origin = metadata.get("sessionHistoryOrigin")
    if isinstance(origin, Mapping) and isinstance(version := origin.get("version"), str):
        meta["version"] = version


def _compaction(
    raw: RawInput, messages: Sequence[Any], meta: dict[str, JsonValue]
) -> tuple[int, Compaction] | None:
    """Where Cline's compaction goes among the sent messages, and its event; None if none.

    Cline uses the file only while the messages it stands for are the session's own.
    """
    if raw.path is None:
        return None
    path = compaction_path(raw.path)
    if not path.is_file():
        return None
    try:
        state = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as error:
        meta["compaction"] = f"unreadable ({type(error).__name__}): left out"
        return None
    shape = _shape(state)
    if shape is None:
        meta["compaction"] = "not a compaction Cline writes: left out"
        return None
    count, replacement = shape
    if count > len(messages) or not _same_source(state, messages, count):
        meta["compaction"] = "stale (the messages it stands for changed since): left out"
        return None
    summary, kept = replacement[0], replacement[1:]
    start = count - len(kept)
    if start < 0 or list(messages[start:count]) != list(kept):
        # The kept messages are not the newest it stood for: the summary stands for all
        # of them, and what it kept is its text.
        start, kept = count, replacement
        summary_text = "\n\n".join(text for text in map(_texts, kept) if text)
    else:
        summary_text = _texts(summary)
    meta["compaction"] = f"applied: {start} messages summarized, {count - start} kept"
    where = SourceLocation(str(path), None, None, "messages[0]")
    text = summary_text or "[Cline compacted the conversation here; its summary was empty]"
    event = Compaction(content=(TextPart(text=text),), origin="cline", source=where)
    return start, event


def _shape(state: Any) -> tuple[int, list[Mapping[str, Any]]] | None:
    if not isinstance(state, Mapping) or state.get("version") != 1:
        return None
    count = state.get("source_message_count")
    replacement = state.get("messages")
    if not isinstance(count, int) or isinstance(count, bool) or count < 0:
        return None
    if not isinstance(replacement, list) or not replacement:
        return None
    if not all(isinstance(m, Mapping) for m in replacement):
        return None
    return count, replacement


def _same_source(state: Mapping[str, Any], messages: Sequence[Any], count: int) -> bool:
    """Whether the first `count` messages are those the compaction was written for."""
    digest = state.get("source_prefix_hash")
    if isinstance(digest, str) and digest:
        return _source_hash(messages, count) == digest
    key = state.get("source_last_message_key")
    return count > 0 and isinstance(key, str) and _message_key(messages[count - 1]) == key


def _source_hash(messages: Sequence[Any], count: int) -> str:
    """Cline's hash of the first `count` messages (its `cline-session-compaction-source-v2`)."""
    digest = hashlib.sha256()
    digest.update(_HASH_HEAD.encode())
    digest.update(f"{count}\n".encode())
    for message in messages[:count]:
        if not isinstance(message, Mapping):
            return ""
        normal = _normalized(message)
        fields = [[name, normal.get(name)] for name in _COMPACTION_FIELDS]
        try:
            digest.update(_js_json(fields).encode("utf-8"))
        except UnicodeEncodeError:  # a lone surrogate: JavaScript would write it escaped
            return ""
        digest.update(b"\n")
    return f"sha256:{digest.hexdigest()}"


def _normalized(message: Mapping[str, Any]) -> Mapping[str, Any]:
    """A message as Cline hashes and keys it: a user text's wrapper read off."""
    if message.get("role") != "user":
        return message
    content = message.get("content")
    if isinstance(content, str):
        return {**message, "content": user_text(content)}
    if isinstance(content, list):
        blocks = [
            {**b, "text": user_text(b["text"])}
            if isinstance(b, Mapping) and b.get("type") == "text" and isinstance(b.get("text"), str)
            else b
            for b in content
        ]
        return {**message, "content": blocks}
    return message


def _message_key(message: Any) -> str:
    if not isinstance(message, Mapping):
        return ""
    normal = _normalized(message)
    ident = normal.get("id")
    if isinstance(ident, str) and ident.strip():
        return f"id:{ident.strip()}"
    if _is_number(normal.get("ts")):
        return f"ts:{normal.get('role')}:{normal['ts']}"
    return f"content:{normal.get('role')}:{_js_json(normal.get('content'))}"


def _texts(message: Mapping[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    return "\n\n".join(
        b["text"]
        for b in content
        if isinstance(b, Mapping) and b.get("type") == "text" and isinstance(b.get("text"), str)
    )
