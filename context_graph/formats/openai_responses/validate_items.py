"""The shape of one OpenAI Responses input item: messages and their parts, reasoning.

`context_graph.formats.openai_responses.validate` walks the `input` list, pairs calls with their
outputs and calls these for the items' own fields.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from context_graph.validate.common import (
    Collector,
    article,
    as_list,
    check_keys,
    has_str,
    is_obj,
    nonempty_str,
    show,
)

__all__ = [
    "ITEM_FIELDS",
    "MAX_CALL_ID",
    "MAX_ENCRYPTED_CONTENT",
    "check_call_id",
    "check_compaction",
    "check_message",
    "check_output",
    "check_reasoning",
]

#: The Responses API refuses a longer `call_id` (`string_above_max_length`).
MAX_CALL_ID = 64
#: The Responses API refuses a longer `encrypted_content` (`string_above_max_length`).
MAX_ENCRYPTED_CONTENT = 10_485_760

#: The keys each checked item type accepts.
ITEM_FIELDS: Mapping[str, frozenset[str]] = MappingProxyType(
    {
        "message": frozenset({"type", "role", "content", "id", "status", "phase"}),
        "function_call": frozenset(
            {"type", "call_id", "name", "arguments", "id", "status", "namespace", "caller"}
        ),
        "function_call_output": frozenset(
            {"type", "call_id", "output", "id", "status", "name", "namespace", "caller"}
        ),
        "custom_tool_call": frozenset(
            {"type", "call_id", "name", "input", "id", "namespace", "caller"}
        ),
        "custom_tool_call_output": frozenset({"type", "call_id", "output", "id", "caller"}),
        "reasoning": frozenset({"type", "id", "summary", "content", "encrypted_content", "status"}),
        "compaction": frozenset({"type", "id", "encrypted_content"}),
    }
)

_INPUT_PARTS = frozenset({"input_text", "input_image", "input_file"})
_PARTS: dict[str, frozenset[str]] = {
    "user": _INPUT_PARTS,
    "system": _INPUT_PARTS,
    "developer": _INPUT_PARTS,
    "assistant": frozenset({"output_text", "refusal"}),
}
_ALL_PARTS = frozenset().union(*_PARTS.values())
_PART_FIELDS: dict[str, frozenset[str]] = {
    "input_text": frozenset({"type", "text", "prompt_cache_breakpoint"}),
    "input_image": frozenset({"type", "image_url", "file_id", "detail", "prompt_cache_breakpoint"}),
    "input_file": frozenset(
        {
            "type",
            "file_data",
            "file_id",
            "file_url",
            "filename",
            "detail",
            "prompt_cache_breakpoint",
        }
    ),
    "output_text": frozenset({"type", "text", "annotations", "logprobs"}),
    "refusal": frozenset({"type", "refusal"}),
}


def check_call_id(i: int, item: dict[Any, Any], out: Collector) -> str | None:
    """The item's `call_id` if it is valid; otherwise report it and return None."""
    path = f"input[{i}].call_id"
    call_id = item.get("call_id")
    if not nonempty_str(call_id):
        out.add(
            "call_id_invalid",
            path,
            i,
            f"`call_id` is {show(call_id)}; give the item the non-empty string id of its call",
        )
        return None
    if len(call_id) > MAX_CALL_ID:
        out.add(
            "call_id_invalid",
            path,
            i,
            f"`call_id` has {len(call_id)} characters; the API accepts at most {MAX_CALL_ID}",
        )
        return None
    return call_id


def check_message(i: int, item: dict[Any, Any], out: Collector) -> str | None:
    """Check a `message` item; return its role when it is a known one."""
    path = f"input[{i}]"
    role = item.get("role")
    if not isinstance(role, str) or role not in _PARTS:
        out.add(
            "unknown_role",
            f"{path}.role",
            i,
            f"the role is {show(role)}; use user, assistant, system or developer",
        )
        return None
    check_keys(item, ITEM_FIELDS["message"], path, i, out)
    content = item.get("content")
    if content is None:
        out.add("content_missing", f"{path}.content", i, f"{article(role)} message needs `content`")
        return role
    if isinstance(content, str):
        if role == "assistant" and not content:
            out.add("content_empty", f"{path}.content", i, "the assistant message has no text")
        return role
    parts = as_list(content)
    if parts is None:
        out.add(
            "content_invalid",
            f"{path}.content",
            i,
            f"`content` is {show(content)}; make it a string or an array of content parts",
        )
        return role
    if not parts:
        out.add("content_empty", f"{path}.content", i, "`content` is an empty array; add a part")
    for j, part in enumerate(parts):
        _check_part(i, role, f"{path}.content[{j}]", part, out)
    return role


def _check_part(i: int, role: str, path: str, part: Any, out: Collector) -> None:
    if not is_obj(part):
        out.add(
            "part_not_object", path, i, f"the part is {show(part)}; make it an object with a `type`"
        )
        return
    kind = part.get("type")
    allowed = ", ".join(sorted(_PARTS[role]))
    if not isinstance(kind, str) or kind not in _ALL_PARTS:
        out.add(
            "unknown_part_type",
            f"{path}.type",
            i,
            f"part type {show(kind)} is unknown; {article(role)} message accepts {allowed}",
        )
        return
    if kind not in _PARTS[role]:
        out.add(
            "part_not_allowed_for_role",
            f"{path}.type",
            i,
            f"{article(role)} message cannot carry {article(kind)} part; use {allowed}",
        )
        return
    check_keys(part, _PART_FIELDS[kind], path, i, out)
    _check_part_fields(i, kind, path, part, out)


def _check_part_fields(i: int, kind: str, path: str, part: dict[Any, Any], out: Collector) -> None:
    if kind in ("input_text", "output_text") and not isinstance(part.get("text"), str):
        out.add("part_invalid", f"{path}.text", i, f"{article(kind)} part needs a string `text`")
    elif kind == "output_text" and not isinstance(part.get("annotations", []), list):
        out.add("part_invalid", f"{path}.annotations", i, "`annotations` must be an array")
    elif kind == "refusal" and not isinstance(part.get("refusal"), str):
        out.add("part_invalid", f"{path}.refusal", i, "a refusal part needs a string `refusal`")
    elif kind == "input_image":
        _check_source(i, path, part, ("image_url", "file_id"), out)
    elif kind == "input_file":
        _check_source(i, path, part, ("file_data", "file_id", "file_url"), out)


def _check_source(
    i: int, path: str, part: dict[Any, Any], keys: tuple[str, ...], out: Collector
) -> None:
    """A media part needs one of `keys` as a string; an empty one carries nothing."""
    given = [k for k in keys if part.get(k) is not None]
    if not given:
        shown = " or ".join(f"`{k}`" for k in keys)
        out.add("part_invalid", path, i, f"the part needs {shown}")
        return
    for key in given:
        value = part[key]
        if not isinstance(value, str):
            out.add(
                "part_invalid", f"{path}.{key}", i, f"`{key}` is {show(value)}; make it a string"
            )
        elif not value.strip() or (value.startswith("data:") and value.endswith(",")):
            out.add("media_empty", f"{path}.{key}", i, "the part has no data or address")


def check_output(i: int, item: dict[Any, Any], out: Collector) -> None:
    """A call output's `output`: a string, or an array of input parts."""
    path = f"input[{i}].output"
    output = item.get("output")
    if isinstance(output, str):
        return
    parts = as_list(output)
    if parts is None:
        out.add(
            "output_invalid",
            path,
            i,
            f"`output` is {show(output)}; make it a string or an array of input parts",
        )
        return
    for j, part in enumerate(parts):
        _check_part(i, "user", f"{path}[{j}]", part, out)


def check_reasoning(i: int, item: dict[Any, Any], out: Collector) -> None:
    """A `reasoning` item: an id or its encrypted payload, and a summary of text parts."""
    path = f"input[{i}]"
    check_keys(item, ITEM_FIELDS["reasoning"], path, i, out)
    rid = item.get("id")
    encrypted = item.get("encrypted_content")
    if rid is not None and not nonempty_str(rid):
        out.add("reasoning_invalid", f"{path}.id", i, f"`id` is {show(rid)}; make it a string")
    if encrypted is not None and not isinstance(encrypted, str):
        out.add(
            "reasoning_invalid",
            f"{path}.encrypted_content",
            i,
            f"`encrypted_content` is {show(encrypted)}; send it back as received (a string)",
        )
    if rid is None and encrypted is None:
        out.add(
            "reasoning_invalid",
            path,
            i,
            "a reasoning item needs its `id` or its `encrypted_content`; send it as received",
        )
    summary = as_list(item.get("summary"))
    if summary is None:
        out.add(
            "reasoning_invalid",
            f"{path}.summary",
            i,
            "`summary` must be an array (empty, or of `summary_text` parts)",
        )
        return
    for j, part in enumerate(summary):
        if not (is_obj(part) and part.get("type") == "summary_text" and has_str(part, "text")):
            out.add(
                "reasoning_invalid",
                f"{path}.summary[{j}]",
                i,
                'a summary part is `{"type": "summary_text", "text": string}`',
            )


def check_compaction(i: int, item: dict[Any, Any], out: Collector) -> None:
    """A `compaction` item: its opaque `encrypted_content`, sent back as received."""
    path = f"input[{i}]"
    check_keys(item, ITEM_FIELDS["compaction"], path, i, out)
    encrypted = item.get("encrypted_content")
    if not nonempty_str(encrypted):
        out.add(
            "compaction_invalid",
            f"{path}.encrypted_content",
            i,
            f"`encrypted_content` is {show(encrypted)}; send the compaction item back as the "
            "API returned it",
        )
    elif len(encrypted) > MAX_ENCRYPTED_CONTENT:
        out.add(
            "compaction_invalid",
            f"{path}.encrypted_content",
            i,
            f"`encrypted_content` has {len(encrypted):,} characters, over the API's "
            f"{MAX_ENCRYPTED_CONTENT:,}; compact again, or render this history elsewhere",
        )
    rid = item.get("id")
    if rid is not None and not isinstance(rid, str):
        out.add("compaction_invalid", f"{path}.id", i, f"`id` is {show(rid)}; make it a string")
