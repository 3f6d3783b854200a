"""Claude Code record details: tool-result metadata, sub-agent files and session facts.

A user line that carries a `tool_result` also carries `toolUseResult`, Claude Code's own
account of the call. For `Read` it gives the file's path and the lines read; for a
sub-agent run (`Task`, called `Agent` in later versions) the agent's id, status and
token use. These turn the plain result into a `FileRead` or a `SubagentResult`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from pydantic import JsonValue

from context_graph.errors import IngestError, SourceLocation
from context_graph.graph.events import AgentEvent, FileRead, SubagentResult, ToolResult
from context_graph.importers._base import RawInput, expect_str

__all__ = [
    "SUBAGENT_TOOLS",
    "CallInfo",
    "answer_event",
    "optional_str",
    "read_line_range",
    "session_meta",
    "subagent_files",
    "subagent_transcript",
]

#: Names of the tool that runs a sub-agent, over Claude Code versions.
SUBAGENT_TOOLS: frozenset[str] = frozenset({"Task", "Agent"})

# `toolUseResult` keys of a sub-agent run worth keeping, and their names in `meta`.
_SUBAGENT_META = {
    "status": "status",
    "isAsync": "is_async",
    "totalTokens": "total_tokens",
    "totalDurationMs": "total_duration_ms",
    "totalToolUseCount": "total_tool_use_count",
    "outputFile": "output_file",
}
# Facts about a session taken from its first record that has them.
_SESSION_KEYS = {
    "sessionId": "session_id",
    "agentId": "agent_id",
    "cwd": "cwd",
    "gitBranch": "git_branch",
    "version": "version",
    "slug": "slug",
}


@dataclass(frozen=True, slots=True)
class CallInfo:
    """What the importer remembers of a tool call until its result arrives.

    Attributes:
        name: The tool's name.
        arguments: The call's `input` object.
    """

    name: str
    arguments: Mapping[str, Any]


def optional_str(value: Any, where: SourceLocation, what: str) -> str | None:
    """Return `value` if it is a string or `None`, else raise `IngestError` naming `what`."""
    if value is None or isinstance(value, str):
        return value
    msg = f"{what} must be a string, got {type(value).__name__}"
    raise IngestError(msg, where)


def text_field(record: Mapping[str, Any], at: SourceLocation, name: str) -> str:
    """The string `name` of an object read at `at`; `IngestError` naming it otherwise."""
    return expect_str(record.get(name), at.with_path(name), f"`{name}`")


def optional_field(record: Mapping[str, Any], at: SourceLocation, name: str) -> str | None:
    """The string `name` of an object read at `at`, or `None` when it is absent."""
    return optional_str(record.get(name), at.with_path(name), f"`{name}`")


# --- results ------------------------------------------------------------------------------


def answer_event(
    result: ToolResult, call: CallInfo, record: Mapping[str, Any], raw: RawInput
) -> AgentEvent:
    """Turn a plain result into a `FileRead` or `SubagentResult` when its metadata says so.

    Errors stay plain results: a failed read has no file content, a failed sub-agent
    run no agent.
    """
    details = record.get("toolUseResult")
    if result.is_error:
        return result
    if call.name == "Read":
        read = _file_read(result, call, details)
        if read is not None:
            return read
    if call.name in SUBAGENT_TOOLS and isinstance(details, Mapping):
        agent_id = details.get("agentId")
        if isinstance(agent_id, str) and agent_id:
            return _subagent_result(result, call, details, agent_id, raw)
    return result


#: What a `Read` gives back in place of the file (`toolUseResult.type`): Claude Code 2.1
#: answers a read of a file unchanged since the last one with a note saying so.
_NO_CONTENT_READS = frozenset({"file_unchanged"})


def _file_read(result: ToolResult, call: CallInfo, details: Any) -> FileRead | None:
    """The `Read` result as a `FileRead`; `None` when it holds no content of the file.

    A read answered with "file unchanged since your last Read" stays a plain result:
    as a read of the file it would stand in for the earlier read that holds the text,
    and a later read supersedes an earlier one.
    """
    if isinstance(details, Mapping) and details.get("type") in _NO_CONTENT_READS:
        return None
    info = details.get("file") if isinstance(details, Mapping) else None
    info = info if isinstance(info, Mapping) else {}
    path = info.get("filePath") or call.arguments.get("file_path")
    if not isinstance(path, str) or not path:
        return None
    meta = dict(result.meta)
    for key, name in (("totalLines", "total_lines"), ("numLines", "num_lines")):
        value = _int(info.get(key))
        if value is not None:
            meta[name] = value
    return FileRead(
        path=path,
        call_id=result.call_id,
        content=result.content,
        line_range=read_line_range(call.arguments, info),
        timestamp=result.timestamp,
        meta=meta,
        source=result.source,
    )


def read_line_range(
    arguments: Mapping[str, Any], info: Mapping[str, Any]
) -> tuple[int, int | None] | None:
    """The 1-based, inclusive lines a `Read` call returned; `None` for the whole file.

    Claude Code's own account (`startLine`, `numLines`, `totalLines`) wins; without it
    the call's `offset` (a 1-based line number) and `limit` say what was asked for.
    """
    start, count, total = (_int(info.get(k)) for k in ("startLine", "numLines", "totalLines"))
    if start is not None and count is not None and total is not None:
        if start <= 1 and count >= total:
            return None
        first = max(start, 1)
        return (first, first + max(count, 1) - 1)
    offset, limit = _int(arguments.get("offset")), _int(arguments.get("limit"))
    if offset is None and limit is None:
        return None
    first = offset if offset is not None and offset >= 1 else 1
    last = first + limit - 1 if limit is not None and limit >= 1 else None
    return (first, last)


def _int(value: Any) -> int | None:
    # `bool` is an `int` to Python, not to JSON.
    return value if type(value) is int else None


def _subagent_result(
    result: ToolResult,
    call: CallInfo,
    details: Mapping[str, Any],
    agent_id: str,
    raw: RawInput,
) -> SubagentResult:
    meta: dict[str, JsonValue] = dict(result.meta)
    for key, name in _SUBAGENT_META.items():
        value = details.get(key)
        if isinstance(value, str | int | bool):
            meta[name] = value
    for key in ("subagent_type", "description"):
        value = call.arguments.get(key)
        if isinstance(value, str):
            meta[key] = value
    return SubagentResult(
        call_id=result.call_id,
        content=result.content,
        agent_id=agent_id,
        transcript=subagent_transcript(raw, agent_id),
        timestamp=result.timestamp,
        meta=meta,
        source=result.source,
    )


# --- files ----------------------------------------------------------------------------------


def subagent_transcript(raw: RawInput, agent_id: str) -> str | None:
    """Where sub-agent `agent_id`'s transcript is, relative to the session file's folder.

    Relative, because the path is part of the node's content and so of its id: the same
    session copied to another folder (or machine) must import to the same ids.
    `None` when the file does not exist.
    """
    if raw.path is None:
        return None
    relative = PurePosixPath(raw.path.stem, "subagents", f"agent-{agent_id}.jsonl")
    return str(relative) if (raw.path.parent / relative).is_file() else None


def subagent_files(raw: RawInput) -> list[Path]:
    """The sub-agent transcripts of a session file (`<stem>/subagents/agent-*.jsonl`), sorted."""
    if raw.path is None:
        return []
    folder = raw.path.parent / raw.path.stem / "subagents"
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.glob("agent-*.jsonl") if p.is_file())


# --- session facts ------------------------------------------------------------------------


def session_meta(records: Sequence[Any], skipped: Mapping[str, int]) -> dict[str, JsonValue]:
    """Facts about a session: ids, working directory, branch, models, title, skipped records."""
    meta: dict[str, JsonValue] = {"format": "claude_code"}
    models: list[JsonValue] = []
    for record in records:
        if not isinstance(record, Mapping):
            continue
        for key, name in _SESSION_KEYS.items():
            value = record.get(key)
            if name not in meta and isinstance(value, str) and value:
                meta[name] = value
        if record.get("isSidechain") is True:
            meta["is_sidechain"] = True
        if record.get("type") == "summary" and isinstance(record.get("summary"), str):
            meta["title"] = record["summary"]
        model = _model(record)
        if model is not None and model not in models:
            models.append(model)
    meta["models"] = models
    meta["skipped_records"] = dict(sorted(skipped.items()))
    return meta


def _model(record: Mapping[str, Any]) -> str | None:
    message = record.get("message")
    if record.get("type") != "assistant" or not isinstance(message, Mapping):
        return None
    model = message.get("model")
    return model if isinstance(model, str) and model != "<synthetic>" else None
