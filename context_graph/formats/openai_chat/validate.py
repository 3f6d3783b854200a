"""Rules of the OpenAI Chat Completions request body (`{"messages": [...]}`)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from types import MappingProxyType
from typing import Any, Final

from context_graph.formats.openai_chat.tool_calls import (
    AssistantTurn,
    check_tool_calls,
    close_turn,
    leave_run,
    pair_tool_message,
)
from context_graph.validate.common import (
    Collector,
    article,
    as_list,
    check_keys,
    has_str,
    is_obj,
    never,
    objects_in,
    show,
)
from context_graph.validate.tool_fields import FunctionSite, check_tools

__all__ = ["OPENAI_RULES", "OpenAIChatValidator", "openai_clues", "validate_openai"]

OPENAI_RULES: Mapping[str, str] = MappingProxyType(
    {
        "field_invalid": "A message field (`name`, `refusal`, `audio`, ...) has the wrong type.",
        "tool_calls_invalid": "An assistant's `tool_calls` is not a non-empty array.",
        "tool_call_invalid": "A tool call is not `{id, type: function, function: {name, "
        "arguments}}`.",
        "tool_call_id_invalid": "A `tool` message has no string `tool_call_id`.",
        "tool_result_misplaced": "A `tool` message is separated from its assistant by other "
        "messages.",
    }
)

_FIELDS: dict[str, frozenset[str]] = {
    "system": frozenset({"role", "content", "name"}),
    "developer": frozenset({"role", "content", "name"}),
    "user": frozenset({"role", "content", "name"}),
    "assistant": frozenset(
        {"role", "content", "name", "refusal", "tool_calls", "function_call", "audio"}
    ),
    "tool": frozenset({"role", "content", "tool_call_id"}),
    "function": frozenset({"role", "content", "name"}),
}
_PARTS: dict[str, frozenset[str]] = {
    "system": frozenset({"text"}),
    "developer": frozenset({"text"}),
    "user": frozenset({"text", "image_url", "input_audio", "file"}),
    "assistant": frozenset({"text", "refusal"}),
    "tool": frozenset({"text"}),
}
_ALL_PARTS = frozenset().union(*_PARTS.values())


def validate_openai(payload: Any, out: Collector) -> None:
    """Check an OpenAI Chat Completions request body, adding every violation to `out`."""
    if not is_obj(payload):
        out.add(
            "payload_not_object",
            "$",
            None,
            f"the request body is {show(payload)}; send a JSON object with a `messages` array",
        )
        return
    check_tools(payload, _functions, out)
    messages = as_list(payload.get("messages"))
    if messages is None:
        out.add(
            "messages_missing",
            "messages",
            None,
            "`messages` is absent or not an array; send the conversation as an array of message "
            "objects",
        )
        return
    if not messages:
        out.add(
            "messages_empty", "messages", None, "`messages` is empty; add at least a user message"
        )
        return
    turn: AssistantTurn | None = None
    for i, message in enumerate(messages):
        turn = _check_message(i, message, turn, out)
    close_turn(turn, out)


def _check_message(
    i: int, message: Any, turn: AssistantTurn | None, out: Collector
) -> AssistantTurn | None:
    """Check one message and advance the pairing state."""
    path = f"messages[{i}]"
    if not is_obj(message):
        out.add(
            "message_not_object",
            path,
            i,
            f"the message is {show(message)}; make it an object with `role` and `content`",
        )
        return leave_run(turn)
    role = message.get("role")
    if not isinstance(role, str) or role not in _FIELDS:
        out.add(
            "unknown_role",
            f"{path}.role",
            i,
            f"the role is {show(role)}; use system, developer, user, assistant or tool",
        )
        return leave_run(turn)
    check_keys(message, _FIELDS[role], path, i, out)
    _check_fields(i, role, message, out)
    if role == "assistant":
        close_turn(turn, out)
        return AssistantTurn(i, check_tool_calls(i, message, out))
    if role == "tool":
        pair_tool_message(i, message, turn, out)
        return turn
    return leave_run(turn)


def _check_fields(i: int, role: str, message: dict[Any, Any], out: Collector) -> None:
    """Check `content` and the small per-role fields of one message."""
    path = f"messages[{i}]"
    name = message.get("name")
    if "name" in message and not isinstance(name, str):
        out.add("field_invalid", f"{path}.name", i, f"`name` is {show(name)}; make it a string")
    if role == "function":
        if "name" not in message:
            out.add(
                "field_invalid",
                f"{path}.name",
                i,
                "a function message needs a string `name`; add the function's name",
            )
        content = message.get("content")
        if "content" not in message or not (content is None or isinstance(content, str)):
            out.add(
                "content_invalid",
                f"{path}.content",
                i,
                "a function message needs a `content` that is a string or null",
            )
        return
    if role == "assistant":
        _check_assistant_extras(i, message, out)
    _check_content(i, role, message, out)


_EXTRAS: tuple[tuple[str, Callable[[Any], bool], str], ...] = (
    ("refusal", lambda v: isinstance(v, str), "a string"),
    ("audio", lambda v: has_str(v, "id"), "an object with a string `id`"),
    (
        "function_call",
        lambda v: has_str(v, "name") and has_str(v, "arguments"),
        "`{name, arguments}` with string values",
    ),
)


def _check_assistant_extras(i: int, message: dict[Any, Any], out: Collector) -> None:
    """Check `refusal`, `audio` and `function_call` of an assistant message."""
    for key, valid, shape in _EXTRAS:
        value = message.get(key)
        if value is not None and not valid(value):
            path = f"messages[{i}].{key}"
            out.add("field_invalid", path, i, f"`{key}` must be {shape}, or null")


def _check_content(i: int, role: str, message: dict[Any, Any], out: Collector) -> None:
    """Check the `content` of a message against what its role accepts."""
    path = f"messages[{i}].content"
    content = message.get("content")
    if content is None:
        if role != "assistant" or not _stands_in_for_content(message):
            out.add(
                "content_missing",
                path,
                i,
                f"{article(role)} message needs `content`"
                + ("; give it text, or tool calls" if role == "assistant" else "; add it"),
            )
        return
    if isinstance(content, str):
        return
    parts = as_list(content)
    if parts is None:
        out.add(
            "content_invalid",
            path,
            i,
            f"`content` is {show(content)}; make it a string or an array of content parts",
        )
        return
    if not parts:
        out.add(
            "content_empty", path, i, "`content` is an empty array; add a part or send a string"
        )
    for j, part in enumerate(parts):
        _check_part(i, role, f"{path}[{j}]", part, out)


def _stands_in_for_content(message: dict[Any, Any]) -> bool:
    """Whether an assistant message carries something that lets `content` be null."""
    calls = as_list(message.get("tool_calls"))
    stand_ins = ("function_call", "audio", "refusal")
    return bool(calls) or any(message.get(key) is not None for key in stand_ins)


_PART_FIELD = {"text": "text", "refusal": "refusal"}


def _check_part(i: int, role: str, path: str, part: Any, out: Collector) -> None:
    """Check one content part."""
    if not is_obj(part):
        out.add(
            "part_not_object", path, i, f"the part is {show(part)}; make it an object with a `type`"
        )
        return
    kind = part.get("type")
    if not isinstance(kind, str) or kind not in _ALL_PARTS:
        out.add(
            "unknown_part_type",
            f"{path}.type",
            i,
            f"part type {show(kind)} is unknown; {article(role)} message accepts "
            f"{', '.join(sorted(_PARTS[role]))}",
        )
        return
    if kind not in _PARTS[role]:
        out.add(
            "part_not_allowed_for_role",
            f"{path}.type",
            i,
            f"{article(role)} message cannot carry {article(kind)} part; use "
            f"{', '.join(sorted(_PARTS[role]))}",
        )
        return
    if kind in _PART_FIELD and not isinstance(part.get(kind), str):
        out.add(
            "part_invalid", f"{path}.{kind}", i, f"{article(kind)} part needs a string `{kind}`"
        )
    elif kind == "image_url" and not has_str(part.get("image_url"), "url"):
        out.add(
            "part_invalid",
            f"{path}.image_url",
            i,
            "an image_url part needs `image_url: {url: string}`",
        )
    elif kind == "image_url" and _empty_url(part["image_url"]["url"]):
        out.add("media_empty", f"{path}.image_url.url", i, "the image has no data or address")
    elif kind == "input_audio" and not _valid_audio(part.get("input_audio")):
        out.add(
            "part_invalid",
            f"{path}.input_audio",
            i,
            "an input_audio part needs `input_audio: {data: string, format: wav|mp3}`",
        )
    elif kind == "file" and not is_obj(part.get("file")):
        out.add(
            "part_invalid",
            f"{path}.file",
            i,
            "a file part needs a `file` object with `file_id` or `file_data`",
        )


def _empty_url(url: str) -> bool:
    """An empty address, or a data URL with no data after its header."""
    return not url.strip() or (url.startswith("data:") and url.endswith(","))


def _valid_audio(obj: Any) -> bool:
    return has_str(obj, "data") and obj.get("format") in ("wav", "mp3")


# Signs of a Chat Completions body that the other formats do not use.
_CLUE_ROLES = frozenset({"system", "developer", "tool", "function"})
_CLUE_PARTS = frozenset({"image_url", "input_audio", "file", "refusal"})


def openai_clues(body: dict[Any, Any]) -> list[str]:
    """Signs of a Chat Completions body: its roles, `tool_calls`, part types and tools."""
    found: list[str] = []
    for message in objects_in(body.get("messages")):
        role = message.get("role")
        if isinstance(role, str) and role in _CLUE_ROLES:
            found.append(f"a message with role `{role}`")
        for key in ("tool_calls", "tool_call_id"):
            if key in message:
                found.append(f"a message with `{key}`")
        for part in objects_in(message.get("content")):
            kind = part.get("type")
            if isinstance(kind, str) and kind in _CLUE_PARTS:
                found.append(f"a content part of type `{kind}`")
    for tool in objects_in(body.get("tools")):
        if tool.get("type") == "function" and "function" in tool:
            found.append("a tool of type `function`")
    return found


class OpenAIChatValidator:
    """The OpenAI Chat Completions rules as a `ProviderValidator`."""

    format: Final = "openai"
    rules: Final = OPENAI_RULES
    check = staticmethod(validate_openai)
    clues = staticmethod(openai_clues)
    mixes = staticmethod(never)
    leans = staticmethod(never)


def _functions(tool: dict[Any, Any], path: str, out: Collector) -> Iterable[FunctionSite]:
    """Chat Completions nests each function: `{"type": "function", "function": {...}}`."""
    if tool.get("type") != "function":
        return ()
    function = tool.get("function")
    return (FunctionSite(function if is_obj(function) else {}, f"{path}.function", "parameters"),)
