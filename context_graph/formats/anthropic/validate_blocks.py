"""Rules of each Anthropic content block on its own: its type, its role, its fields.

`check_block` is called by the per-message checks in `validate` for every
block of a message's `content`.
"""

from __future__ import annotations

from typing import Any

from context_graph.formats.anthropic.validate_turns import TOOL_ID, Msg
from context_graph.validate.common import (
    Collector,
    article,
    as_list,
    is_obj,
    nonempty_str,
    show,
)

__all__ = ["check_block", "check_text"]

_BLOCKS = frozenset(
    {
        "text",
        "image",
        "document",
        "tool_use",
        "tool_result",
        "thinking",
        "redacted_thinking",
        "compaction",
    }
)
_ONLY_IN = {
    "compaction": "assistant",
    "tool_use": "assistant",
    "thinking": "assistant",
    "redacted_thinking": "assistant",
    "tool_result": "user",
}
_RESULT_BLOCKS = frozenset({"text", "image", "document", "search_result"})


def check_block(msg: Msg, path: str, block: Any, out: Collector) -> bool:
    """Check one content block; True when it is an object of a known type."""
    i = msg.index
    if not is_obj(block):
        out.add(
            "part_not_object",
            path,
            i,
            f"the block is {show(block)}; make it an object with a `type`",
        )
        return False
    kind = block.get("type")
    if not isinstance(kind, str) or kind not in _BLOCKS:
        out.add(
            "unknown_part_type",
            f"{path}.type",
            i,
            f"block type {show(kind)} is not one of {', '.join(sorted(_BLOCKS))}; convert or drop "
            "the block",
        )
        return False
    owner = _ONLY_IN.get(kind)
    if owner is not None and msg.role is not None and msg.role != owner:
        out.add(
            "part_not_allowed_for_role",
            f"{path}.type",
            i,
            f"a {kind} block may only appear in {article(owner)} message; move it or drop it",
        )
    _check_block_fields(i, path, kind, block, out)
    return True


def _check_block_fields(
    i: int, path: str, kind: str, block: dict[Any, Any], out: Collector
) -> None:
    """Check the fields each block type requires."""
    if kind == "text":
        check_text(i, path, block, out)
    elif kind in ("image", "document"):
        source = block.get("source")
        if not (is_obj(source) and isinstance(source.get("type"), str)):
            out.add(
                "part_invalid",
                f"{path}.source",
                i,
                f"{article(kind)} block needs a `source` object with a `type` (base64, url, file)",
            )
        elif _empty_source(source):
            out.add("media_empty", f"{path}.source", i, f"the {kind}'s source has no data or url")
    elif kind == "tool_use":
        _check_id(i, f"{path}.id", block.get("id"), out)
        if not nonempty_str(block.get("name")):
            out.add(
                "part_invalid",
                f"{path}.name",
                i,
                "a tool_use block needs the tool's `name` as a non-empty string",
            )
        if not is_obj(block.get("input")):
            out.add(
                "tool_input_not_object",
                f"{path}.input",
                i,
                f"tool_use `input` is {show(block.get('input'))}; make it a JSON object (use {{}} "
                "for none)",
            )
    elif kind == "tool_result":
        _check_id(i, f"{path}.tool_use_id", block.get("tool_use_id"), out)
        _check_result_content(i, path, block, out)
    elif kind == "compaction":
        _check_compaction(i, path, block, out)
    elif kind == "thinking":
        if not isinstance(block.get("thinking"), str):
            out.add(
                "part_invalid",
                f"{path}.thinking",
                i,
                "a thinking block needs its text in a string `thinking`",
            )
        if not nonempty_str(block.get("signature")):
            out.add(
                "thinking_signature_missing",
                f"{path}.signature",
                i,
                "a thinking block needs the string `signature` the API returned; resend it "
                "unchanged",
            )
    elif not nonempty_str(block.get("data")):
        out.add(
            "redacted_thinking_data_missing",
            f"{path}.data",
            i,
            "a redacted_thinking block needs the opaque string `data` the API returned; resend "
            "it unchanged",
        )


def _check_compaction(i: int, path: str, block: dict[Any, Any], out: Collector) -> None:
    """A compaction block as the API returned it: summary text or null, opaque strings."""
    content = block.get("content")
    if content is not None and not nonempty_str(content):
        out.add(
            "compaction_block_invalid",
            f"{path}.content",
            i,
            f"compaction `content` is {show(content)}; send the summary text the API "
            "returned, or null",
        )
    for key in ("encrypted_content", "signature"):
        value = block.get(key)
        if value is not None and not isinstance(value, str):
            out.add(
                "compaction_block_invalid",
                f"{path}.{key}",
                i,
                f"compaction `{key}` is {show(value)}; send it back as received (a string)",
            )


def check_text(i: int | None, path: str, block: dict[Any, Any], out: Collector) -> None:
    """A text block's `text` is a string with something other than whitespace in it."""
    text = block.get("text")
    if not isinstance(text, str):
        out.add(
            "part_invalid",
            f"{path}.text",
            i,
            f"a text block's `text` is {show(text)}; make it a string",
        )
    elif text.strip() == "":
        out.add(
            "text_empty",
            f"{path}.text",
            i,
            "a text block must contain non-whitespace text; drop the block or fill it",
        )


def _check_id(i: int, path: str, value: Any, out: Collector) -> None:
    if not (isinstance(value, str) and TOOL_ID.fullmatch(value)):
        out.add(
            "tool_use_id_invalid",
            path,
            i,
            f"the id {show(value)} must be a string of letters, digits, `_` and `-` only; rewrite "
            "it (and its pair) to match",
        )


def _check_result_content(i: int, path: str, block: dict[Any, Any], out: Collector) -> None:
    """Check the `content` of a tool_result: a string or text/image/document blocks."""
    content = block.get("content")
    if content is None or isinstance(content, str):
        return
    inner = as_list(content)
    if inner is None:
        out.add(
            "part_invalid",
            f"{path}.content",
            i,
            f"tool_result `content` is {show(content)}; make it a string or an array of blocks",
        )
        return
    for k, item in enumerate(inner):
        where = f"{path}.content[{k}]"
        if not is_obj(item):
            out.add("part_not_object", where, i, f"the block is {show(item)}; make it an object")
        elif item.get("type") not in _RESULT_BLOCKS:
            out.add(
                "unknown_part_type",
                f"{where}.type",
                i,
                f"tool_result content type {show(item.get('type'))} is not text, image, document "
                "or search_result",
            )
        elif item.get("type") == "text":
            check_text(i, where, item, out)


def _empty_source(source: dict[Any, Any]) -> bool:
    """A base64 or url source whose data or address is an empty string."""
    key = {"base64": "data", "text": "data", "url": "url"}.get(source["type"])
    return key is not None and source.get(key) == ""
