"""Claude Code attachments that tell the model about the session's state, read as notices.

Besides what the user attached (`_claude_code_attachments`), Claude Code sends the model
messages of its own about what changed around the conversation: a file the user (or a
linter) edited since the agent read it, the lines the user selected in the IDE, the
plan file, the todo list, the IDE's new diagnostics, a resource the user named, memory
files, the mode the session is in. None is the user's words and none answers a call, but
each is what the model was told: a notice (`UserTurn(notice=True)`) with its content, in
our own words. An attachment of one of these kinds that has nothing to tell (an empty
todo list) adds nothing and is counted, as the kinds not read are.

The fields are those Claude Code 2.1.197 builds each message from (read from the CLI's
bundle; the CLI run offline in `-p` mode writes none of these, so the tests use
hand-made records of the same shape).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from context_graph.errors import IngestError, SourceLocation
from context_graph.importers._base import expect_list, expect_mapping, expect_str
from context_graph.importers._claude_code_records import optional_field, text_field

__all__ = ["REMINDER_KINDS", "reminder_text"]

Reader = Callable[[Mapping[str, Any], SourceLocation], str | None]


def reminder_text(kind: str, attachment: Mapping[str, Any], at: SourceLocation) -> str | None:
    """The notice an attachment of `kind` (one of `REMINDER_KINDS`) stands for.

    `None` when it tells nothing (an empty list).

    Raises:
        IngestError: a field the notice is made of is missing or of the wrong type.
    """
    return _READERS[kind](attachment, at)


def _number(attachment: Mapping[str, Any], at: SourceLocation, name: str) -> int:
    value = attachment.get(name)
    if isinstance(value, bool) or not isinstance(value, int):
        msg = f"`{name}` must be an integer, got {type(value).__name__}"
        raise IngestError(msg, at.with_path(name))
    return value


def _items(attachment: Mapping[str, Any], at: SourceLocation, name: str) -> list[Mapping[str, Any]]:
    found = expect_list(attachment.get(name), at.with_path(name), f"`{name}`")
    return [
        expect_mapping(item, at.with_path(f"{name}[{index}]"), f"`{name}` entry")
        for index, item in enumerate(found)
    ]


def _edited_file(attachment: Mapping[str, Any], at: SourceLocation) -> str:
    """A file changed on disk after the agent read it; the change is meant to stay."""
    name = text_field(attachment, at, "filename")
    snippet = text_field(attachment, at, "snippet")
    said = f"{name} was changed outside the agent (by the user or a tool such as a linter) "
    said += "since it was read; the change is intended and stays."
    return f"{said}\nThe changed lines:\n{snippet}" if snippet else said


def _selected_lines(attachment: Mapping[str, Any], at: SourceLocation) -> str:
    name = text_field(attachment, at, "filename")
    first, last = _number(attachment, at, "lineStart"), _number(attachment, at, "lineEnd")
    lines = text_field(attachment, at, "content")
    return f"The user selected lines {first}-{last} of {name} in the IDE:\n{lines}"


def _selected_diff(attachment: Mapping[str, Any], at: SourceLocation) -> str:
    lines = text_field(attachment, at, "content")
    return f"The user selected these lines of the diff view:\n{lines}"


def _opened_file(attachment: Mapping[str, Any], at: SourceLocation) -> str:
    return f"The user opened {text_field(attachment, at, 'filename')} in the IDE."


def _plan_file(attachment: Mapping[str, Any], at: SourceLocation) -> str:
    path = text_field(attachment, at, "planFilePath")
    return f"The plan, from {path}:\n{text_field(attachment, at, 'planContent')}"


def _rows(
    attachment: Mapping[str, Any],
    at: SourceLocation,
    name: str,
    row: Callable[[int, Mapping[str, Any], SourceLocation], str],
) -> list[str]:
    """`row` of each entry of the list `name` (its number, the entry, its place)."""
    return [
        row(index, item, at.with_path(f"{name}[{index}]"))
        for index, item in enumerate(_items(attachment, at, name))
    ]


def _todo_row(index: int, item: Mapping[str, Any], where: SourceLocation) -> str:
    status, text = text_field(item, where, "status"), text_field(item, where, "content")
    return f"{index + 1}. [{status}] {text}"


def _task_row(index: int, item: Mapping[str, Any], where: SourceLocation) -> str:
    task = item.get("id")
    label = f"#{task} " if isinstance(task, str | int) and not isinstance(task, bool) else ""
    return f"{label}[{text_field(item, where, 'status')}] {text_field(item, where, 'subject')}"


def _listed(heading: str, rows: list[str], joint: str = "\n") -> str | None:
    """The rows under `heading`; `None` when there are none (nothing to tell)."""
    return heading + joint.join(rows) if rows else None


def _todo_list(attachment: Mapping[str, Any], at: SourceLocation) -> str | None:
    return _listed("The todo list:\n", _rows(attachment, at, "content", _todo_row))


def _task_list(attachment: Mapping[str, Any], at: SourceLocation) -> str | None:
    return _listed("The task list:\n", _rows(attachment, at, "content", _task_row))


def _memories(attachment: Mapping[str, Any], at: SourceLocation) -> str | None:
    def memory(_: int, item: Mapping[str, Any], where: SourceLocation) -> str:
        path, text = text_field(item, where, "path"), text_field(item, where, "content")
        return f"Memory file {path}:\n{text}"

    return _listed("", _rows(attachment, at, "memories", memory), "\n\n")


def _diagnostics(attachment: Mapping[str, Any], at: SourceLocation) -> str | None:
    blocks = []
    for index, item in enumerate(_items(attachment, at, "files")):
        where = at.with_path(f"files[{index}]")
        uri = text_field(item, where, "uri")
        rows = [
            _diagnostic(found, where.with_path(f"diagnostics[{number}]"))
            for number, found in enumerate(_items(item, where, "diagnostics"))
        ]
        if rows:
            blocks.append(f"{uri}:\n" + "\n".join(rows))
    return "New diagnostics from the IDE:\n" + "\n\n".join(blocks) if blocks else None


def _diagnostic(found: Mapping[str, Any], where: SourceLocation) -> str:
    message = text_field(found, where, "message")
    severity = optional_field(found, where, "severity")
    span = expect_mapping(found.get("range"), where.with_path("range"), "`range`")
    at_start = where.with_path("range.start")
    start = expect_mapping(span.get("start"), at_start, "`range.start`")
    line, column = _number(start, at_start, "line"), _number(start, at_start, "character")
    code, source = found.get("code"), found.get("source")
    row = f"  {severity or 'Note'} at line {line + 1}, column {column + 1}: {message}"
    row += f" [{code}]" if isinstance(code, str | int) and code != "" else ""
    return row + (f" ({source})" if isinstance(source, str) and source else "")


def _resource(attachment: Mapping[str, Any], at: SourceLocation) -> str:
    """A resource of an MCP server the user named with `@server:uri`."""
    server, uri = text_field(attachment, at, "server"), text_field(attachment, at, "uri")
    content = attachment.get("content")
    found = content.get("contents") if isinstance(content, Mapping) else None
    texts = []
    for index, item in enumerate(found if isinstance(found, list) else []):
        if isinstance(item, Mapping) and "text" in item:
            where = at.with_path(f"content.contents[{index}].text")
            texts.append(expect_str(item["text"], where, "`text`"))
        elif isinstance(item, Mapping) and "blob" in item:
            texts.append(f"[binary content: {item.get('mimeType') or 'unknown type'}]")
    body = "\n".join(texts) if texts else "(no content)"
    return f"The resource {uri} of the MCP server {server}:\n{body}"


def _skills(attachment: Mapping[str, Any], at: SourceLocation) -> str | None:
    def skill(_: int, item: Mapping[str, Any], where: SourceLocation) -> str:
        return f"Skill {text_field(item, where, 'name')}:\n{text_field(item, where, 'content')}"

    heading = "Skills used before the last compaction (not a new request):\n\n"
    return _listed(heading, _rows(attachment, at, "skills", skill), "\n\n")


def _plan_mode(attachment: Mapping[str, Any], at: SourceLocation) -> str:
    path = optional_field(attachment, at, "planFilePath")
    plan = f" except the plan file {path}" if path else ""
    return f"Plan mode is on: read only, no edits or commands that change anything{plan}."


def _plan_mode_exit(attachment: Mapping[str, Any], at: SourceLocation) -> str:
    return "Plan mode is off: edits and commands are allowed again."


def _task_status(attachment: Mapping[str, Any], at: SourceLocation) -> str:
    task = attachment.get("taskId")
    label = task if isinstance(task, str) else "?"
    said = f"Background task {label} ({text_field(attachment, at, 'description')}): "
    said += text_field(attachment, at, "status")
    delta = optional_field(attachment, at, "deltaSummary")
    return f"{said}. {delta}" if delta else said


def _hook_blocked(attachment: Mapping[str, Any], at: SourceLocation) -> str:
    hook = text_field(attachment, at, "hookName")
    where = at.with_path("blockingError")
    blocked = expect_mapping(attachment.get("blockingError"), where, "`blockingError`")
    error = text_field(blocked, where, "blockingError")
    command = optional_field(blocked, where, "command")
    return f"The {hook} hook blocked" + (f" (command {command})" if command else "") + f": {error}"


def _hook_stopped(attachment: Mapping[str, Any], at: SourceLocation) -> str:
    hook = text_field(attachment, at, "hookName")
    return f"The {hook} hook stopped the agent: {text_field(attachment, at, 'message')}"


_READERS: dict[str, Reader] = {
    "edited_text_file": _edited_file,
    "selected_lines_in_ide": _selected_lines,
    "selected_lines_in_diff": _selected_diff,
    "opened_file_in_ide": _opened_file,
    "plan_file_reference": _plan_file,
    "todo_reminder": _todo_list,
    "task_reminder": _task_list,
    "relevant_memories": _memories,
    "diagnostics": _diagnostics,
    "mcp_resource": _resource,
    "invoked_skills": _skills,
    "critical_system_reminder": lambda attachment, at: text_field(attachment, at, "content"),
    "date_change": lambda attachment, at: (
        f"The date is now {text_field(attachment, at, 'newDate')}."
    ),
    "agent_mention": lambda attachment, at: (
        f"The user asked for the {text_field(attachment, at, 'agentType')} agent."
    ),
    "compact_file_reference": lambda attachment, at: (
        f"{text_field(attachment, at, 'filename')} was read before the last compaction; "
        "its text was not carried over."
    ),
    "pdf_reference": lambda attachment, at: (
        f"{text_field(attachment, at, 'filename')} is a PDF too large to read at once; "
        "read it a few pages at a time."
    ),
    "plan_mode": _plan_mode,
    "plan_mode_reentry": _plan_mode,
    "plan_mode_exit": _plan_mode_exit,
    "task_status": _task_status,
    "hook_blocking_error": _hook_blocked,
    "hook_stopped_continuation": _hook_stopped,
}

#: The attachment kinds read as notices here.
REMINDER_KINDS = frozenset(_READERS)
