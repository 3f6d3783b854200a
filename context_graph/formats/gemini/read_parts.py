"""Gemini parts that are content, and the checked field access both Gemini importers share.

A part holds exactly one data field (`text`, `functionCall`, `functionResponse`,
`inlineData`, `fileData`, `executableCode`, `codeExecutionResult`), or none when it is a
thought or carries only a `thoughtSignature`. Every field is read by its camelCase name
or its snake_case twin (`function_call`, `inline_data`), as the SDKs write either.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from context_graph.errors import IngestError, SourceLocation
from context_graph.graph.content import (
    ContentPart,
    DocumentPart,
    ImagePart,
    TextPart,
    ThinkingPart,
)
from context_graph.importers._base import check_base64, expect_mapping, expect_str

__all__ = [
    "DATA_KEYS",
    "data_key",
    "dump",
    "get",
    "key_of",
    "name_of",
    "optional_id",
    "plain_part",
    "signature_of",
]

#: The part fields of which a part holds exactly one.
DATA_KEYS = (
    "text",
    "functionCall",
    "functionResponse",
    "inlineData",
    "fileData",
    "executableCode",
    "codeExecutionResult",
)
_SNAKE = {
    "systemInstruction": "system_instruction",
    "functionCall": "function_call",
    "functionResponse": "function_response",
    "inlineData": "inline_data",
    "fileData": "file_data",
    "executableCode": "executable_code",
    "codeExecutionResult": "code_execution_result",
    "thoughtSignature": "thought_signature",
    "mimeType": "mime_type",
    "fileUri": "file_uri",
}


def get(obj: Mapping[str, Any], key: str) -> Any:
    """Read a field by its camelCase name or its snake_case twin."""
    value = obj.get(key)
    if value is None and key in _SNAKE:
        value = obj.get(_SNAKE[key])
    return value


def key_of(part: Mapping[str, Any], key: str) -> str:
    """The spelling of `key` this part uses, for error paths."""
    return key if key in part else _SNAKE.get(key, key)


def plain_part(value: Any, where: SourceLocation, role: str) -> ContentPart:
    """Convert a part that is content (not a call or a response) to a content part."""
    part = expect_mapping(value, where, "a part")
    kind = data_key(part, where)
    if kind in ("functionCall", "functionResponse"):
        msg = f"a `{kind}` part cannot be in a {role} turn"
        raise IngestError(msg, where)
    thought = part.get("thought")
    if thought is not None and not isinstance(thought, bool):
        raise IngestError("part `thought` must be a boolean", where.with_path("thought"))
    if kind is None or (thought and kind == "text"):
        text = "" if kind is None else expect_str(part["text"], where, "part `text`")
        return ThinkingPart(thinking=text, signature=signature_of(part, where), provider="gemini")
    body = get(part, kind)
    inner = where.with_path(key_of(part, kind))
    if kind == "text":
        return TextPart(text=expect_str(body, where.with_path("text"), "part `text`"))
    if kind == "inlineData":
        return _inline(body, inner)
    if kind == "fileData":
        return _file(body, inner)
    return _code(kind, body, inner)


def data_key(part: Mapping[str, Any], where: SourceLocation) -> str | None:
    """The one data field a part holds; `None` for a thought or signature-only part."""
    found = [k for k in DATA_KEYS if get(part, k) is not None]
    if len(found) > 1:
        msg = f"a part holds exactly one of {', '.join(DATA_KEYS)}; got {', '.join(found)}"
        raise IngestError(msg, where)
    if found:
        return found[0]
    if part.get("thought") is True or signature_of(part, where) is not None:
        return None
    keys = ", ".join(sorted(str(k) for k in part)) or "none"
    msg = f"unknown part (keys: {keys}); expected one of {', '.join(DATA_KEYS)}"
    raise IngestError(msg, where)


def _inline(value: Any, where: SourceLocation) -> ContentPart:
    body = expect_mapping(value, where, "`inlineData`")
    mime = expect_str(get(body, "mimeType"), where.with_path("mimeType"), "`mimeType`")
    data = expect_str(body.get("data"), where.with_path("data"), "inlineData `data`")
    check_base64(data, where.with_path("data"), "inlineData")
    if mime.startswith("image/"):
        return ImagePart(media_type=mime, data=data)
    return DocumentPart(media_type=mime, data=data)


def _file(value: Any, where: SourceLocation) -> ContentPart:
    body = expect_mapping(value, where, "`fileData`")
    uri = expect_str(get(body, "fileUri"), where.with_path("fileUri"), "`fileUri`")
    mime = get(body, "mimeType")
    if mime is not None:
        expect_str(mime, where.with_path("mimeType"), "`mimeType`")
    if isinstance(mime, str) and mime.startswith("image/"):
        return ImagePart(media_type=mime, url=uri)
    return DocumentPart(media_type=mime, url=uri)


def _code(kind: str, value: Any, where: SourceLocation) -> ContentPart:
    body = expect_mapping(value, where, f"`{kind}`")
    if kind == "executableCode":
        code = expect_str(body.get("code"), where.with_path("code"), "`code`")
        language = str(body.get("language", "")).lower()
        return TextPart(text=f"```{language}\n{code}\n```")
    output = body.get("output")
    return TextPart(
        text=expect_str(output, where.with_path("output"), "`output`") if output else ""
    )


# --- small checks ---------------------------------------------------------------------------


def name_of(body: Mapping[str, Any], where: SourceLocation, what: str) -> str:
    """The non-empty `name` of a `functionCall` / `functionResponse` body."""
    name = expect_str(body.get("name"), where.with_path("name"), f"{what} `name`")
    if not name:
        raise IngestError(f"{what} `name` must not be empty", where.with_path("name"))
    return name


def optional_id(body: Mapping[str, Any], where: SourceLocation) -> str | None:
    """The `id` of a call or response body; `None` when absent or empty."""
    value = body.get("id")
    if value is None or value == "":
        return None
    return expect_str(value, where.with_path("id"), "`id`")


def signature_of(part: Mapping[str, Any], where: SourceLocation) -> str | None:
    """A part's `thoughtSignature`, if it has one."""
    value = get(part, "thoughtSignature")
    if value is None:
        return None
    return expect_str(
        value, where.with_path(key_of(part, "thoughtSignature")), "`thoughtSignature`"
    )


def dump(value: Any, where: SourceLocation) -> str:
    """`value` as JSON text, or `IngestError` at `where` when it cannot be written."""
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError) as exc:
        msg = f"value is not JSON-serializable: {exc}"
        raise IngestError(msg, where) from None
