"""Rules of the OpenAI Chat Completions request body (`{"messages": [...]}`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from context_graph.validate.common import (
    Collector,
    article,
    as_list,
    check_keys,
    is_obj,
    nonempty_str,
    show,
)

__all__ = ["OPENAI_RULES", "validate_openai"]

OPENAI_RULES: dict[str, str] = {
    "field_invalid": "A message field (`name`, `refusal`, `audio`, ...) has the wrong type.",
    "tool_calls_invalid": "An assistant's `tool_calls` is not a non-empty array.",
    "tool_call_invalid": "A tool call is not `{id, type: function, function: {name, arguments}}`.",
    "tool_call_id_invalid": "A `tool` message has no string `tool_call_id`.",
    "tool_result_misplaced": "A `tool` message is separated from its assistant by other messages.",
}

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


@dataclass
class _Call:
    """A tool call of an assistant message, waiting for its `tool` message."""

    path: str
    answers: int = 0


@dataclass
class _Turn:
    """The latest assistant message and the calls it made."""

    index: int
    calls: dict[str, _Call] = field(default_factory=dict)
    in_run: bool = True


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
    turn: _Turn | None = None
    for i, message in enumerate(messages):
        turn = _check_message(i, message, turn, out)
    _close_turn(turn, out)


def _check_message(i: int, message: Any, turn: _Turn | None, out: Collector) -> _Turn | None:
    """Check one message and advance the pairing state."""
    path = f"messages[{i}]"
    if not is_obj(message):
        out.add(
            "message_not_object",
            path,
            i,
            f"the message is {show(message)}; make it an object with `role` and `content`",
        )
        return _leave_run(turn)
    role = message.get("role")
    if not isinstance(role, str) or role not in _FIELDS:
        out.add(
            "unknown_role",
            f"{path}.role",
            i,
            f"the role is {show(role)}; use system, developer, user, assistant or tool",
        )
        return _leave_run(turn)
    check_keys(message, _FIELDS[role], path, i, out)
    _check_fields(i, role, message, out)
    if role == "assistant":
        _close_turn(turn, out)
        return _Turn(i, _check_tool_calls(i, message, out))
    if role == "tool":
        _pair_tool_message(i, message, turn, out)
        return turn
    return _leave_run(turn)


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
    ("audio", lambda v: _has_str(v, "id"), "an object with a string `id`"),
    (
        "function_call",
        lambda v: _has_str(v, "name") and _has_str(v, "arguments"),
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
    elif kind == "image_url" and not _has_str(part.get("image_url"), "url"):
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


def _has_str(obj: Any, key: str) -> bool:
    return is_obj(obj) and isinstance(obj.get(key), str)


def _valid_audio(obj: Any) -> bool:
    return _has_str(obj, "data") and obj.get("format") in ("wav", "mp3")


def _check_tool_calls(i: int, message: dict[Any, Any], out: Collector) -> dict[str, _Call]:
    """Check an assistant's `tool_calls`; return its calls by id."""
    path = f"messages[{i}].tool_calls"
    if message.get("tool_calls") is None:
        return {}
    calls = as_list(message["tool_calls"])
    if not calls:
        out.add(
            "tool_calls_invalid",
            path,
            i,
            "`tool_calls` must be a non-empty array; omit the key when the message makes no call",
        )
        return {}
    found: dict[str, _Call] = {}
    for j, call in enumerate(calls):
        call_id = _check_tool_call(i, f"{path}[{j}]", call, out)
        if call_id is None:
            continue
        if call_id in found:
            out.add(
                "duplicate_tool_call_id",
                f"{path}[{j}].id",
                i,
                f"tool call id {show(call_id)} is used twice in this message; give each call its "
                "own id",
            )
            continue
        found[call_id] = _Call(f"{path}[{j}]")
    return found


def _check_tool_call(i: int, path: str, call: Any, out: Collector) -> str | None:
    """Check the shape of one tool call; return its id when it has a usable one."""
    if is_obj(call) and call.get("type") == "function":
        fn = call.get("function")
        ok = _has_str(fn, "name") and _has_str(fn, "arguments")
        fix = "`function: {name: string, arguments: string}` (arguments is JSON text)"
    elif is_obj(call) and call.get("type") == "custom":
        ok = _has_str(call.get("custom"), "name") and _has_str(call.get("custom"), "input")
        fix = "`custom: {name: string, input: string}`"
    else:
        out.add(
            "tool_call_invalid",
            path,
            i,
            "the tool call must be an object with `type` function (or custom); fix its shape",
        )
        return None
    call_id = call.get("id")
    if not nonempty_str(call_id):
        out.add(
            "tool_call_invalid",
            f"{path}.id",
            i,
            f"tool call id is {show(call_id)}; give the call a non-empty string id",
        )
        return None
    if not ok:
        out.add("tool_call_invalid", path, i, f"tool call {show(call_id)} needs {fix}")
    return call_id


def _pair_tool_message(i: int, message: dict[Any, Any], turn: _Turn | None, out: Collector) -> None:
    """Match a `tool` message to a call of the nearest preceding assistant message."""
    call_id = message.get("tool_call_id")
    path = f"messages[{i}].tool_call_id"
    if not nonempty_str(call_id):
        out.add(
            "tool_call_id_invalid",
            path,
            i,
            f"`tool_call_id` is {show(call_id)}; set it to the id of the call this message answers",
        )
        return
    call = turn.calls.get(call_id) if turn is not None else None
    if turn is None or call is None:
        where = (
            "there is no assistant message before it"
            if turn is None
            else (f"messages[{turn.index}] made no call with that id")
        )
        out.add(
            "tool_result_orphan",
            path,
            i,
            f"tool message for {show(call_id)} answers no call: {where}; drop it or restore the "
            "call",
        )
        return
    call.answers += 1
    if call.answers > 1:
        out.add(
            "duplicate_tool_result",
            path,
            i,
            f"call {show(call_id)} of messages[{turn.index}] is already answered; keep one tool "
            "message per call",
        )
    elif not turn.in_run:
        out.add(
            "tool_result_misplaced",
            path,
            i,
            f"the answer to {show(call_id)} must come right after messages[{turn.index}], before "
            "any other message; move it there",
        )


def _leave_run(turn: _Turn | None) -> _Turn | None:
    """A non-tool message ends the run of tool messages after the assistant."""
    if turn is not None:
        turn.in_run = False
    return turn


def _close_turn(turn: _Turn | None, out: Collector) -> None:
    """Report the calls of the finished assistant turn that got no answer."""
    if turn is None:
        return
    for call_id, call in turn.calls.items():
        if call.answers == 0:
            out.add(
                "tool_call_unanswered",
                call.path,
                turn.index,
                f"tool call {show(call_id)} has no `tool` message answering it; add one right "
                "after this message",
            )
