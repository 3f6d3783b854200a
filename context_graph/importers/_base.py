"""What every importer shares.

Reading files with exact error places, the raw-input and session records,
converting the content blocks that several formats have in common, and finishing
events already built (`with_fields`, with times from `iso_timestamp`).

An importer module provides two functions:

- `sniff(raw: RawInput) -> bool`: whether the input looks like its format (cheap,
  never raises);
- `to_sessions(raw: RawInput) -> list[ImportedSession]`: the events of every session
  in the input, raising `IngestError` with the place of the first problem.

Lenient reading: real logs hold strays, pieces an importer cannot place (a tool result
no call asked for). `raw.strict` is `True` by default and a stray is refused like any
other problem. An importer that supports lenient reading takes its `StrayKeeper` from
`strays_of(raw)`, hands it each stray with the error a strict read raises, and gets back
a `Note` event saying what the stray was; the session lists them in `strays`. An
importer that does not refuses strays in both modes.
"""

from __future__ import annotations

import base64
import json
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import JsonValue, TypeAdapter, ValidationError

from context_graph.errors import IngestError, SourceLocation
from context_graph.graph.content import (
    ContentPart,
    DocumentPart,
    ImagePart,
    RedactedThinkingPart,
    TextPart,
    ThinkingPart,
)
from context_graph.graph.events import AgentEvent
from context_graph.graph.nodes import ExitCode
from context_graph.importers._opencode_db import SQLITE_MAGIC, read_exports
from context_graph.importers._opencode_storage import read_storage, storage_of
from context_graph.importers._strays import Stray, StrayKeeper

__all__ = [
    "ImportedSession",
    "Names",
    "RawInput",
    "Stray",
    "StrayKeeper",
    "block_to_part",
    "check_base64",
    "expect_list",
    "expect_mapping",
    "expect_str",
    "iso_timestamp",
    "read_exit_code",
    "read_raw",
    "strays_of",
    "text_content",
    "with_fields",
]


class Names(frozenset[str]):
    """A set of names (roles, block types) that a JSON value of any type can be tested against.

    JSON gives a list or an object where a name was expected; a plain frozenset would raise
    `TypeError: unhashable` on `value in names`, and the importer's typed error for the
    field would never be reached. Anything but a string is simply not a member.
    """

    __slots__ = ()

    def __contains__(self, value: object) -> bool:
        return isinstance(value, str) and frozenset.__contains__(self, value)


@dataclass(frozen=True)
class RawInput:
    """Parsed input handed to the importers.

    Attributes:
        data: The parsed JSON value; for JSONL, the list of records.
        path: The file it came from, if any.
        lines: For JSONL, the 1-based line number of each record in `data`.
        strict: Refuse strays (the default); `False` keeps each as a note and reports it
            (see the module docstring).
        incomplete_line: The cut-off last line a lenient read left out, if any.
    """

    data: Any
    path: Path | None = None
    lines: tuple[int, ...] | None = None
    strict: bool = True
    incomplete_line: int | None = None
    """For JSONL read leniently: the line number of a last line that was cut off (not
    JSON, and no newline after it: a file still being written) and left out."""

    @property
    def file(self) -> str | None:
        """The file name used in error messages."""
        return str(self.path) if self.path is not None else None

    def at(self, index: int | None = None, path: str | None = None) -> SourceLocation:
        """The location of record `index` (with its line for JSONL)."""
        line = None
        if self.lines is not None and index is not None and index < len(self.lines):
            line = self.lines[index]
            return SourceLocation(self.file, line, None, path)
        return SourceLocation(self.file, None, index, path)


@dataclass
class ImportedSession:
    """One agent session found in an input.

    Attributes:
        name: A name that tells the session apart within its file (run id, task id).
        events: The session as events, in order.
        facts: Gold facts recorded by the source (tau-bench actions and outputs), if any.
        meta: Other facts about the session (model, agent, source format).
        strays: What a lenient import kept as notes instead of refusing, in input order;
            always empty after a strict import.
    """

    name: str
    events: list[AgentEvent]
    facts: list[str] = field(default_factory=list)
    meta: dict[str, JsonValue] = field(default_factory=dict)
    strays: list[Stray] = field(default_factory=list)


def strays_of(raw: RawInput) -> StrayKeeper:
    """A fresh `StrayKeeper` for one import of `raw`, strict as `raw` says."""
    return StrayKeeper(strict=raw.strict)


def read_raw(path: str | Path, *, strict: bool = True) -> RawInput:
    """Read a JSON or JSONL file, naming the line of any syntax error.

    JSONL is detected by content: a file whose text is not one JSON document is read a
    record per line. Blank lines and lines starting with `//` are skipped.

    A session log still being written (an agent running, or one that stopped mid-write)
    ends in a line cut off: not JSON, with no newline after it. A strict read refuses
    it, saying so; a lenient one (`strict=False`) reads the lines before it and names
    it in `RawInput.incomplete_line`.

    A SQLite database is opencode's session store: read as one `opencode export` object
    per session (`_opencode_db`); so is the storage folder of opencode's older versions,
    or one session's file in it (`_opencode_storage`).

    Raises:
        IngestError: the file is missing, not UTF-8, or not JSON / JSONL; or a SQLite
            database that is not opencode's or cannot be read.
    """
    file = Path(path)
    storage = storage_of(file)
    if storage is not None:
        return RawInput(read_storage(*storage), file)
    try:
        blob = file.read_bytes()
    except OSError as exc:
        msg = f"cannot read file: {exc.strerror or exc}"
        raise IngestError(msg, SourceLocation(str(file))) from None
    if blob.startswith(SQLITE_MAGIC):
        return RawInput(read_exports(file), file)
    try:
        text = blob.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = blob[: exc.start].count(b"\n") + 1
        msg = f"not valid UTF-8 (byte {exc.start}: {blob[exc.start : exc.start + 1]!r})"
        raise IngestError(msg, SourceLocation(str(file), line)) from None
    text = text.removeprefix("\ufeff")
    stripped = text.lstrip()
    if not stripped:
        raise IngestError("file is empty", SourceLocation(str(file)))
    if stripped[0] in "[{" and not stripped.startswith("//"):
        try:
            return RawInput(_load_json(text), file)
        except _UnreadableJSON as exc:
            raise IngestError(f"JSON {exc}", SourceLocation(str(file))) from None
        except json.JSONDecodeError as exc:
            if stripped[0] == "[" or not _looks_like_jsonl(text):
                msg = f"invalid JSON: {exc.msg} (column {exc.colno})"
                raise IngestError(msg, SourceLocation(str(file), exc.lineno)) from None
    return _read_jsonl(text, file, strict=strict)


def _looks_like_jsonl(text: str) -> bool:
    first = text.lstrip().split("\n", 1)[0]
    try:
        json.loads(first)
    except json.JSONDecodeError:
        return False
    return True


class _UnreadableJSON(Exception):
    """Well-formed JSON that Python will not read: too deep, or a number too long."""


def _load_json(text: str) -> Any:
    """`json.loads`, with its two refusals of valid JSON turned into `_UnreadableJSON`.

    Raises:
        json.JSONDecodeError: the text is not JSON.
        _UnreadableJSON: nested too deeply, or an integer over Python's digit limit.
    """
    try:
        return json.loads(text)
    except RecursionError:
        raise _UnreadableJSON("is nested too deeply to read") from None
    except json.JSONDecodeError:
        raise
    except ValueError:  # int(): "Exceeds the limit (4300 digits) for integer string ..."
        limit = sys.get_int_max_str_digits()
        msg = f"holds an integer longer than {limit:,} digits, which cannot be read"
        raise _UnreadableJSON(msg) from None


def read_jsonl_text(text: str, file: Path) -> RawInput:
    """JSONL `text` read from `file`, strictly: its records, each with its line number."""
    return _read_jsonl(text, file, strict=True)


def _read_jsonl(text: str, file: Path, *, strict: bool = True) -> RawInput:
    records: list[Any] = []
    lines: list[int] = []
    split = text.split("\n")
    # The last line is cut off when the file does not end with a newline (being written).
    open_end = len(split) if split[-1].strip() else None
    incomplete: int | None = None
    for number, line in enumerate(split, start=1):
        body = line.strip()
        if not body or body.startswith("//"):
            continue
        try:
            records.append(_load_json(body))
        except _UnreadableJSON as exc:
            raise IngestError(
                f"JSON on this line {exc}", SourceLocation(str(file), number)
            ) from None
        except json.JSONDecodeError as exc:
            msg = f"invalid JSON on this line: {exc.msg} (column {exc.colno})"
            if number == open_end and records:
                if not strict:
                    incomplete = number
                    break
                msg += (
                    "; it is the last line and no newline ends it, as in a session still "
                    "being written: a lenient read (--lenient, strict=False) reads the "
                    "lines before it"
                )
            raise IngestError(msg, SourceLocation(str(file), number)) from None
        lines.append(number)
    if not records:
        raise IngestError("file has no JSON records", SourceLocation(str(file)))
    return RawInput(records, file, tuple(lines), incomplete_line=incomplete)


# --- checked access -----------------------------------------------------------------------


def expect_mapping(value: Any, where: SourceLocation, what: str) -> Mapping[str, Any]:
    """Return `value` if it is a JSON object, else raise `IngestError` naming `what`."""
    if not isinstance(value, Mapping):
        msg = f"{what} must be an object, got {_type_name(value)}"
        raise IngestError(msg, where)
    return value


def expect_list(value: Any, where: SourceLocation, what: str) -> Sequence[Any]:
    """Return `value` if it is a JSON array, else raise `IngestError` naming `what`."""
    if not isinstance(value, list | tuple):
        msg = f"{what} must be an array, got {_type_name(value)}"
        raise IngestError(msg, where)
    return value


def expect_str(value: Any, where: SourceLocation, what: str) -> str:
    """Return `value` if it is a string, else raise `IngestError` naming `what`."""
    if not isinstance(value, str):
        msg = f"{what} must be a string, got {_type_name(value)}"
        raise IngestError(msg, where)
    return value


def _type_name(value: Any) -> str:
    if value is None:
        return "null"
    return {dict: "an object", list: "an array", str: "a string", bool: "a boolean"}.get(
        type(value), type(value).__name__
    )


# --- content --------------------------------------------------------------------------------


def text_content(value: Any, where: SourceLocation, what: str = "content") -> str:
    """Flatten a string, or a list of text blocks / strings, to one string.

    Used for tool results whose content may be a plain string or a list of
    `{"type": "text", "text": ...}` blocks. Non-text blocks are kept as a short marker.
    """
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    pieces: list[str] = []
    for i, item in enumerate(expect_list(value, where, what)):
        if isinstance(item, str):
            pieces.append(item)
            continue
        block = expect_mapping(item, where.with_path(f"{what}[{i}]"), f"{what}[{i}]")
        if block.get("type") == "text" or "text" in block:
            pieces.append(expect_str(block.get("text"), where, f"{what}[{i}].text"))
        else:
            pieces.append(f"[{block.get('type', 'block')}]")
    return "\n".join(pieces)


def block_to_part(block: Mapping[str, Any], where: SourceLocation) -> ContentPart | None:
    """Convert one Anthropic-style content block to a content part.

    Returns `None` for blocks that are not content (tool_use, tool_result: the callers
    handle those). Unknown block types raise `IngestError`.
    """
    kind = block.get("type")
    if kind == "text":
        return TextPart(text=expect_str(block.get("text"), where, "text block `text`"))
    if kind == "thinking":
        signature = block.get("signature")
        return ThinkingPart(
            thinking=expect_str(block.get("thinking"), where, "thinking block `thinking`"),
            signature=signature if isinstance(signature, str) else None,
        )
    if kind == "redacted_thinking":
        data = expect_str(block.get("data"), where, "redacted_thinking block `data`")
        return RedactedThinkingPart(data=data)
    if kind in ("image", "document"):
        return _media_part(kind, block, where)
    if kind in ("tool_use", "tool_result"):
        return None
    msg = f"unknown content block type {kind!r}"
    raise IngestError(msg, where)


def _media_part(kind: str, block: Mapping[str, Any], where: SourceLocation) -> ContentPart:
    source = expect_mapping(block.get("source", {}), where, f"{kind} block `source`")
    media_type = _optional_str(source, "media_type", where, kind)
    data = _optional_str(source, "data", where, kind)
    url = _optional_str(source, "url", where, kind)
    if source.get("type") == "base64" and data is not None:
        check_base64(data, where, kind)
    if kind == "image":
        return ImagePart(media_type=media_type, data=data, url=url)
    title = block.get("title")
    return DocumentPart(
        media_type=media_type, data=data, url=url, title=title if isinstance(title, str) else None
    )


def _optional_str(
    source: Mapping[str, Any], key: str, where: SourceLocation, kind: str
) -> str | None:
    value = source.get(key)
    if value is None:
        return None
    return expect_str(value, where, f"{kind} block `source.{key}`")


def check_base64(data: str, where: SourceLocation, kind: str) -> None:
    """Raise `IngestError` when inline `kind` data does not start like base64."""
    # Only the head is checked: a full decode of a large image costs more than it tells.
    head = data[:64]
    head = head[: len(head) - len(head) % 4]
    try:
        base64.b64decode(head, validate=True)
    except ValueError:
        msg = f"{kind} data is declared base64 but is not base64"
        raise IngestError(msg, where) from None


# --- event fields -------------------------------------------------------------------------


def with_fields(
    event: AgentEvent, *, meta: Mapping[str, JsonValue] | None = None, **fields: Any
) -> AgentEvent:
    """Return `event` with more metadata and fields set (e.g. a timestamp, a model).

    Fields whose value is `None` are left as they were.

    Raises:
        TypeError: a field name is not one of the event's fields (a programming error).
    """
    unknown = set(fields) - set(type(event).model_fields)
    if unknown:
        msg = f"{type(event).__name__} has no field(s) {', '.join(sorted(unknown))}"
        raise TypeError(msg)
    update = {k: v for k, v in fields.items() if v is not None}
    if meta:
        update["meta"] = {**event.meta, **meta}
    return event.model_copy(update=update) if update else event


_exit_code_adapter: TypeAdapter[int] = TypeAdapter(ExitCode)


def read_exit_code(value: Any) -> int | None:
    """`value` as a `ToolResult.exit_code`, or `None` when it is not one.

    A bool, a string or a number out of range is a session's odd status: left unread,
    not refused.
    """
    if value is None:
        return None
    try:
        return _exit_code_adapter.validate_python(value)
    except ValidationError:
        return None


def iso_timestamp(value: Any) -> str | None:
    """An ISO 8601 UTC time for Unix seconds (`1733345578.57` -> `2024-12-04T...`), or None."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        return datetime.fromtimestamp(value, tz=UTC).isoformat()
    except (OverflowError, OSError, ValueError):
        return None
