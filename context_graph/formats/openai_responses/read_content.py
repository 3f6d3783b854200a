"""Content parts of OpenAI Responses messages and outputs, as context-graph parts.

`input_text` / `output_text` (and `text`) become text, `refusal` its text, `input_image`
an image (a data URL inline, any other URL by address; a stored `file_id` a short text
marker, since there is nothing offline to send), `input_file` a document (inline
`file_data` or a `file_url`; a stored `file_id` a marker).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from pydantic import JsonValue

from context_graph.errors import IngestError, SourceLocation
from context_graph.graph.content import ContentPart, DocumentPart, ImagePart, TextPart
from context_graph.importers._base import expect_list, expect_mapping, expect_str

__all__ = ["content_parts", "optional_str", "plain_json"]


def content_parts(value: Any, where: SourceLocation, what: str) -> tuple[ContentPart, ...]:
    """A message's or an output's content (a string, or a list of parts) as content parts."""
    if isinstance(value, str):
        return (TextPart(text=value),)
    parts = []
    for i, part in enumerate(expect_list(value, where, what)):
        here = where.with_path(f"[{i}]")
        parts.append(_part(expect_mapping(part, here, "content part"), here))
    return tuple(parts)


def _part(block: Mapping[str, Any], where: SourceLocation) -> ContentPart:
    kind = block.get("type")
    if kind in ("input_text", "output_text", "text"):
        return TextPart(text=expect_str(block.get("text"), where.with_path("text"), "`text`"))
    if kind == "refusal":
        text = expect_str(block.get("refusal"), where.with_path("refusal"), "`refusal`")
        return TextPart(text=text)
    if kind == "input_image":
        url = optional_str(block, "image_url", where)
        if url is None:
            return TextPart(text=f"[input_image {optional_str(block, 'file_id', where) or ''}]")
        head, sep, data = url.partition(",")
        if url.startswith("data:") and sep and head.endswith(";base64"):
            media_type = head.removeprefix("data:").removesuffix(";base64") or None
            return ImagePart(media_type=media_type, data=data)
        return ImagePart(url=url)
    if kind == "input_file":
        return _file(block, where)
    msg = f"unknown content part type {kind!r}"
    raise IngestError(msg, where.with_path("type"))


def _file(block: Mapping[str, Any], where: SourceLocation) -> ContentPart:
    name = optional_str(block, "filename", where)
    data = optional_str(block, "file_data", where)
    url = optional_str(block, "file_url", where)
    if data is None and url is None:
        return TextPart(text=f"[input_file {name or optional_str(block, 'file_id', where) or ''}]")
    media_type = None
    if data is not None and data.startswith("data:"):
        head, _, data = data.partition(",")
        media_type = head.removeprefix("data:").removesuffix(";base64") or None
    return DocumentPart(media_type=media_type, data=data, url=url, title=name)


def optional_str(item: Mapping[str, Any], key: str, where: SourceLocation) -> str | None:
    """`item[key]`: a string, or `None` when absent or null."""
    value = item.get(key)
    return None if value is None else expect_str(value, where.with_path(key), f"`{key}`")


def plain_json(item: Any, where: SourceLocation) -> JsonValue:
    """`item` as plain JSON for `meta` (it came from JSON, so only odd numbers can fail)."""
    try:
        value: JsonValue = json.loads(json.dumps(item, allow_nan=False))
    except (TypeError, ValueError, RecursionError):
        raise IngestError("item cannot be kept as JSON", where) from None
    return value
