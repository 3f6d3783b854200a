"""Rules of the Gemini generateContent request body (`contents`, `systemInstruction`).

Google's JSON parser takes each field in lowerCamelCase or in its proto snake_case name, so
both spellings are accepted; paths name the key as the payload spells it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import Any, Final

from context_graph.formats.gemini.validate_turns import ContentInfo, check_pairing, check_sequence
from context_graph.validate.common import (
    Collector,
    article,
    as_list,
    check_keys,
    is_obj,
    never,
    nonempty_str,
    objects_in,
    show,
)
from context_graph.validate.tool_fields import FunctionSite, check_tools

__all__ = [
    "GEMINI_RULES",
    "GeminiContentsValidator",
    "gemini_clues",
    "gemini_mixes",
    "validate_gemini",
]

GEMINI_RULES: Mapping[str, str] = MappingProxyType(
    {
        "part_data_count": "A Gemini part holds no data field, or more than one.",
        "tool_output_not_object": "A Gemini functionResponse `response` is not an object.",
        "tool_results_out_of_order": "Gemini functionResponses without ids are not in the "
        "order of their calls.",
    }
)

_DATA = ("text", "inlineData", "fileData", "functionCall", "functionResponse")
_DATA_ALL = (*_DATA, "executableCode", "codeExecutionResult")
_CONTENT_KEYS = frozenset({"role", "parts"})
_META = ("thought", "thoughtSignature", "videoMetadata", "partMetadata", "mediaResolution")


def _snake(name: str) -> str:
    return "".join(f"_{c.lower()}" if c.isupper() else c for c in name)


#: Every accepted spelling of a part field, mapped to its camelCase name.
_CANON = {spelling: name for name in (*_DATA_ALL, *_META) for spelling in (name, _snake(name))}


def validate_gemini(payload: Any, out: Collector) -> None:
    """Check a Gemini generateContent request body, adding every violation to `out`."""
    if not is_obj(payload):
        out.add(
            "payload_not_object",
            "$",
            None,
            f"the request body is {show(payload)}; send a JSON object with a `contents` array",
        )
        return
    check_tools(payload, _functions, out)
    _check_system(payload, out)
    contents = as_list(payload.get("contents"))
    if contents is None:
        out.add(
            "messages_missing",
            "contents",
            None,
            "`contents` is absent or not an array; send the conversation as an array of content "
            "objects",
        )
        return
    if not contents:
        out.add("messages_empty", "contents", None, "`contents` is empty; add a user content")
        return
    single = len(contents) == 1
    seq = [_check_content(i, c, single, out) for i, c in enumerate(contents)]
    check_sequence(seq, out)
    for pos, content in enumerate(seq):
        check_pairing(seq, pos, content, out)


def _get(obj: dict[Any, Any], name: str) -> tuple[str, Any]:
    """The key used for field `name` (camelCase or snake_case) and its value."""
    snake = _snake(name)
    key = name if name in obj or snake not in obj else snake
    return key, obj.get(key)


def _check_system(payload: dict[Any, Any], out: Collector) -> None:
    """`systemInstruction` is a content whose parts are text only."""
    key, system = _get(payload, "systemInstruction")
    if system is None:
        return
    parts = as_list(system.get("parts")) if is_obj(system) else None
    if not parts:
        out.add(
            "system_invalid",
            key,
            None,
            f"`{key}` must be an object with a non-empty `parts` array of text parts",
        )
        return
    for j, part in enumerate(parts):
        if not (is_obj(part) and list(part) == ["text"] and isinstance(part["text"], str)):
            out.add(
                "system_invalid",
                f"{key}.parts[{j}]",
                None,
                "system instruction parts "
                "must be `{text: string}` only; move other data into a user content",
            )


def _check_content(i: int, content: Any, single: bool, out: Collector) -> ContentInfo:
    """Check one content on its own; return what the pairing rules need."""
    path = f"contents[{i}]"
    if not is_obj(content):
        out.add(
            "message_not_object",
            path,
            i,
            f"the content is {show(content)}; make it an object with `role` and `parts`",
        )
        return ContentInfo(i, None)
    role = content.get("role")
    if role is None and single:
        role = "user"  # a lone content may leave its role unset; the API reads it as user
    if role == "system":
        out.add(
            "system_role_in_messages",
            f"{path}.role",
            i,
            "role system is not accepted in `contents`; move the text to `systemInstruction`",
        )
    elif role not in ("user", "model"):
        out.add(
            "unknown_role",
            f"{path}.role",
            i,
            f"the role is {show(role)}; set user or model",
        )
    check_keys(content, _CONTENT_KEYS, path, i, out)
    info = ContentInfo(i, role if role in ("user", "model") else None)
    parts = as_list(content.get("parts"))
    if parts is None:
        out.add(
            "content_invalid",
            f"{path}.parts",
            i,
            f"`parts` is {show(content.get('parts'))}; make it an array of parts",
        )
    elif not parts:
        out.add(
            "content_empty", f"{path}.parts", i, "`parts` is empty; add a part or drop the content"
        )
    for j, part in enumerate(parts or []):
        _check_part(info, f"{path}.parts[{j}]", part, out)
    return info


def _check_part(info: ContentInfo, path: str, part: Any, out: Collector) -> None:
    """Check one part: exactly one data field, known keys, well-typed values."""
    i = info.index
    if not is_obj(part):
        out.add("part_not_object", path, i, f"the part is {show(part)}; make it an object")
        return
    data: list[str] = []
    for key in part:
        name = _CANON.get(key) if isinstance(key, str) else None
        if name is None:
            out.add(
                "unknown_field",
                f"{path}.{_key(key)}",
                i,
                f"a part does not accept the key {show(key)}; remove it",
            )
        elif name in _DATA_ALL:
            data.append(key)
    _check_meta(i, path, part, out)
    if len(data) != 1:
        fix = f"split {', '.join(data)} into one part each" if data else "add one or drop it"
        out.add(
            "part_data_count",
            path,
            i,
            f"a part holds exactly one data field ({', '.join(_DATA)}, ...); {fix}",
        )
        return
    _check_data(info, path, data[0], part[data[0]], out)


def _check_meta(i: int, path: str, part: dict[Any, Any], out: Collector) -> None:
    key, thought = _get(part, "thought")
    if thought is not None and not isinstance(thought, bool):
        out.add(
            "part_invalid", f"{path}.{key}", i, f"`{key}` is {show(thought)}; make it a boolean"
        )
    key, signature = _get(part, "thoughtSignature")
    if signature is not None and not isinstance(signature, str):
        out.add(
            "part_invalid",
            f"{path}.{key}",
            i,
            f"`{key}` is {show(signature)}; send back the base64 string the API returned",
        )


def _check_data(info: ContentInfo, path: str, key: str, value: Any, out: Collector) -> None:
    """Check the one data field of a part."""
    i, name, where = info.index, _CANON[key], f"{path}.{key}"
    if name == "text":
        if not isinstance(value, str):
            out.add("part_invalid", where, i, f"`text` is {show(value)}; make it a string")
    elif name in ("functionCall", "functionResponse"):
        _check_function(info, where, name, value, out)
    elif name in ("inlineData", "fileData"):
        needed = ("mimeType", "data") if name == "inlineData" else ("fileUri",)
        if not (is_obj(value) and all(isinstance(_get(value, n)[1], str) for n in needed)):
            wants = ", ".join(f"{n}: string" for n in needed)
            out.add("part_invalid", where, i, f"`{key}` must be an object with {{{wants}}}")
        elif _get(value, needed[-1])[1] == "":
            out.add("media_empty", where, i, f"`{key}` has an empty `{needed[-1]}`")
    elif not is_obj(value):
        out.add("part_invalid", where, i, f"`{key}` is {show(value)}; make it an object")


def _check_function(info: ContentInfo, where: str, name: str, value: Any, out: Collector) -> None:
    """Check a functionCall or functionResponse and record it for pairing."""
    i = info.index
    owner = "model" if name == "functionCall" else "user"
    if info.role is not None and info.role != owner:
        out.add(
            "part_not_allowed_for_role",
            where,
            i,
            f"{article(name)} belongs in {article(owner)} content, not {article(info.role)} one; "
            "move it",
        )
        return
    if not (is_obj(value) and nonempty_str(value.get("name"))):
        out.add(
            "part_invalid", where, i, f"{article(name)} needs the function's `name` as a string"
        )
        return
    call_id = value.get("id")
    if call_id is not None and not isinstance(call_id, str):
        out.add("part_invalid", f"{where}.id", i, f"`id` is {show(call_id)}; make it a string")
        call_id = None
    if name == "functionCall":
        key, args = _get(value, "args")
        if args is not None and not is_obj(args):
            out.add(
                "tool_input_not_object",
                f"{where}.{key}",
                i,
                f"`{key}` is {show(args)}; make it a JSON object",
            )
        info.calls.append((where, value["name"], call_id))
    else:
        if not is_obj(value.get("response")):
            out.add(
                "tool_output_not_object",
                f"{where}.response",
                i,
                f"`response` is {show(value.get('response'))}; wrap the result in an object, e.g. "
                '{"result": ...}',
            )
        info.responses.append((where, value["name"], call_id))


def _key(key: object) -> str:
    return key if isinstance(key, str) else show(key)


# Signs of a Gemini body that the other formats do not use.
_CLUE_KEYS = ("contents", "systemInstruction", "system_instruction", "generationConfig")


def gemini_clues(body: dict[Any, Any]) -> list[str]:
    """Signs of a Gemini generateContent body: its top-level keys and its tools."""
    found = [f"top-level `{key}`" for key in _CLUE_KEYS if key in body]
    for tool in objects_in(body.get("tools")):
        if "functionDeclarations" in tool or "function_declarations" in tool:
            found.append("a tool with `functionDeclarations`")
    return found


def gemini_mixes(body: dict[Any, Any]) -> bool:
    """`messages` in the body, which Gemini has not: the body mixes two shapes."""
    return "messages" in body


class GeminiContentsValidator:
    """The Gemini generateContent rules as a `ProviderValidator`."""

    format: Final = "gemini"
    rules: Final = GEMINI_RULES
    check = staticmethod(validate_gemini)
    clues = staticmethod(gemini_clues)
    mixes = staticmethod(gemini_mixes)
    leans = staticmethod(never)


#: Gemini's function names may also hold `.` and `:`, and start with a letter or `_`.
_NAME = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_.:-]{0,63}$")


def _functions(tool: dict[Any, Any], path: str, out: Collector) -> Iterable[FunctionSite]:
    """Gemini lists `functionDeclarations` inside tool objects."""
    if "functionDeclarations" not in tool:
        return []
    declarations = as_list(tool["functionDeclarations"])
    if declarations is None:
        text = "`functionDeclarations` must be an array of function declarations"
        out.add("tools_invalid", f"{path}.functionDeclarations", None, text)
        return []
    sites = []
    for n, declaration in enumerate(declarations):
        where = f"{path}.functionDeclarations[{n}]"
        if not is_obj(declaration):
            out.add("tools_invalid", where, None, f"a declaration is {show(declaration)}")
            continue
        key = "parametersJsonSchema" if "parametersJsonSchema" in declaration else "parameters"
        # Gemini's own Schema (`parameters`) spells its types in capitals.
        sites.append(FunctionSite(declaration, where, key, _NAME, key == "parameters"))
    return sites
