"""Claude Code `attachment` records: what the harness put beside the conversation.

Claude Code (2.1 and later) records, as `attachment` lines, what it adds to a request
that neither the user typed nor a tool returned, and sends each to the model as a
message of its own. Most of it is the harness talking (the agent types and skills it
lists, hook results, reminders); three kinds carry what the session is about, and
become events:

- `file`: a file the user named with `@path`, read by the harness before the turn (the
  model gets it as a `Read` call's result). A `FileRead` of that path, answering no call.
- `nested_memory`: a `CLAUDE.md` of a folder the agent reached, loaded then (the
  model gets "Contents of <path>:" and the text). The project's instructions: a pinned
  `Note`, as the system prompt would carry them; a compaction must not lose them.
- `queued_command`: what the user typed while the agent was working, given to the model
  after the next tool result. The user's words: a `UserTurn` (a notice when its mode is
  not a prompt, such as a queued shell command).
- `directory`: a folder the user named with `@path`, listed by the harness; a notice
  with the listing.
- `hook_additional_context`, and `hook_success` of a `SessionStart` or
  `UserPromptSubmit` hook: what the user's hooks add to the context (the only hook
  output the model is given); a notice with it.
- what the harness tells the model about the session's state (a file the user edited,
  the lines selected in the IDE, the plan, the todo list, diagnostics, the mode): a
  notice with it (`_claude_code_reminders`).

Every other kind is counted in the session's `meta["skipped_records"]` as
`attachment:<kind>`. The shapes are those Claude Code 2.1.197 writes
(tests/context_graph/importers/test_claude_code_real.py records them with the real CLI).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import JsonValue

from context_graph.errors import IngestError, SourceLocation
from context_graph.graph.events import AgentEvent, FileRead, Note, UserTurn
from context_graph.importers._base import expect_mapping, expect_str
from context_graph.importers._claude_code_records import (
    optional_field,
    optional_str,
    read_line_range,
    text_field,
)
from context_graph.importers._claude_code_reminders import REMINDER_KINDS, reminder_text

__all__ = ["attachment_events", "attachment_kind"]


def attachment_kind(record: Mapping[str, Any]) -> str | None:
    """The kind of an `attachment` record (`attachment.type`); `None` when it names none."""
    attachment = record.get("attachment")
    kind = attachment.get("type") if isinstance(attachment, Mapping) else None
    return kind if isinstance(kind, str) else None


def attachment_events(record: Mapping[str, Any], where: SourceLocation) -> list[AgentEvent] | None:
    """The events an `attachment` record stands for; `None` for a kind that is skipped.

    An attachment that names no kind is skipped too, like a record of a type not read:
    nothing of it reaches the session.

    Raises:
        IngestError: a kind read here lacks a field it needs, or holds one of the wrong
            type (naming the line and the field).
    """
    kind = attachment_kind(record)
    if kind is None:
        return None
    attachment: Mapping[str, Any] = record["attachment"]
    at = where.with_path("attachment")
    timestamp = optional_str(record.get("timestamp"), where.with_path("timestamp"), "`timestamp`")
    meta: dict[str, JsonValue] = {"uuid": record.get("uuid"), "attachment": kind}
    if kind == "file":
        read = _file(attachment, at, timestamp, meta)
        return None if read is None else [read]
    if kind == "nested_memory":
        return [_memory(attachment, at, timestamp, meta)]
    if kind == "queued_command":
        return [_queued(attachment, at, timestamp, meta)]
    if kind == "directory":
        return [_directory(attachment, at, timestamp, meta)]
    if kind == "hook_additional_context" or (
        kind == "hook_success" and attachment.get("hookEvent") in _CONTEXT_HOOKS
    ):
        hooked = _hook(attachment, at, timestamp, meta)
        return None if hooked is None else [hooked]
    if kind in REMINDER_KINDS:
        told = reminder_text(kind, attachment, at)
        if told is None:
            return None
        return [UserTurn(content=told, notice=True, timestamp=timestamp, meta=meta, source=at)]
    return None


#: The hook events whose output Claude Code adds to the model's context.
_CONTEXT_HOOKS = frozenset({"SessionStart", "UserPromptSubmit"})


def _hook(
    attachment: Mapping[str, Any],
    at: SourceLocation,
    timestamp: str | None,
    meta: dict[str, JsonValue],
) -> UserTurn | None:
    """What a hook added to the context, as a notice; `None` when it added nothing."""
    event = optional_field(attachment, at, "hookEvent")
    found = attachment.get("content")
    pieces = found if isinstance(found, list) else [found]
    texts = [expect_str(piece, at.with_path("content"), "`content`") for piece in pieces if piece]
    if not texts:
        return None
    label = f"{event} hook" if event else "hook"
    return UserTurn(
        content=f"Context from the {label}:\n" + "\n".join(texts),
        notice=True,
        timestamp=timestamp,
        meta={**meta, "hook_event": event},
        source=at,
    )


def _file(
    attachment: Mapping[str, Any],
    at: SourceLocation,
    timestamp: str | None,
    meta: dict[str, JsonValue],
) -> FileRead | None:
    """A text file the user named; `None` for another content type (an image, a notebook)."""
    content = expect_mapping(attachment.get("content"), at.with_path("content"), "`content`")
    if content.get("type") != "text":
        return None
    info = expect_mapping(content.get("file"), at.with_path("content.file"), "`content.file`")
    path = expect_str(info.get("filePath"), at.with_path("content.file.filePath"), "`filePath`")
    text = expect_str(info.get("content"), at.with_path("content.file.content"), "`content`")
    if not path:
        raise IngestError("`filePath` must not be empty", at.with_path("content.file.filePath"))
    return FileRead(
        path=path,
        content=text,
        line_range=read_line_range({}, info),
        timestamp=timestamp,
        meta=meta,
        source=at,
    )


def _memory(
    attachment: Mapping[str, Any],
    at: SourceLocation,
    timestamp: str | None,
    meta: dict[str, JsonValue],
) -> Note:
    """A folder's `CLAUDE.md`, as the model was given it."""
    content = expect_mapping(attachment.get("content"), at.with_path("content"), "`content`")
    path = expect_str(content.get("path"), at.with_path("content.path"), "`content.path`")
    text = expect_str(content.get("content"), at.with_path("content.content"), "`content.content`")
    return Note(
        content=f"Contents of {path}:\n\n{text}",
        timestamp=timestamp,
        meta={**meta, "path": path},
        source=at,
    )


def _queued(
    attachment: Mapping[str, Any],
    at: SourceLocation,
    timestamp: str | None,
    meta: dict[str, JsonValue],
) -> UserTurn:
    """What the user typed while the agent worked."""
    prompt = text_field(attachment, at, "prompt")
    mode = optional_field(attachment, at, "commandMode")
    if mode is not None:
        meta = {**meta, "command_mode": mode}
    queued_at = optional_field(attachment, at, "timestamp")
    return UserTurn(
        content=prompt,
        notice=mode not in (None, "prompt"),
        timestamp=queued_at or timestamp,
        meta=meta,
        source=at,
    )


def _directory(
    attachment: Mapping[str, Any],
    at: SourceLocation,
    timestamp: str | None,
    meta: dict[str, JsonValue],
) -> UserTurn:
    """A folder the user named, as the harness listed it."""
    path = text_field(attachment, at, "path")
    listing = text_field(attachment, at, "content")
    return UserTurn(
        content=f"Listing of {path}:\n{listing}",
        notice=True,
        timestamp=timestamp,
        meta={**meta, "path": path},
        source=at,
    )
