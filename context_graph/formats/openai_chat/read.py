"""OpenAI Chat Completions: a bare message list, or a request body with `messages`.

Roles map to events: `system` and `developer` to `SystemPrompt`, `user` to `UserTurn` (a
notice when it is all an agent harness's text, `context_graph.formats.harness`),
`assistant` to `AssistantTurn` (its `tool_calls`, a legacy `function_call`, and
`reasoning_content` as a thinking part without signature), `tool` and the legacy
`function` role to `ToolResult`. Tool-call arguments are JSON text and are kept exactly.

The wrapper formats (tau-bench, OpenHands, mini-swe-agent, SWE-agent) hold OpenAI-style
messages too; they convert them with `messages_to_events` / `message_to_events`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import BaseModel, JsonValue, ValidationError

from context_graph.errors import IngestError, SourceLocation
from context_graph.formats.harness import is_harness_message
from context_graph.graph.content import ContentPart, ImagePart, TextPart, ThinkingPart
from context_graph.graph.events import (
    AgentEvent,
    AssistantTurn,
    SystemPrompt,
    ToolCall,
    ToolResult,
    UserTurn,
)
from context_graph.importers._base import (
    ImportedSession,
    Names,
    RawInput,
    expect_list,
    expect_mapping,
    expect_str,
)

__all__ = [
    "ROLES",
    "ConversionState",
    "looks_like_chat",
    "message_to_events",
    "messages_to_events",
    "sniff",
    "to_sessions",
]

#: The roles of Chat Completions messages, the legacy `function` role included.
ROLES: frozenset[str] = Names({"system", "developer", "user", "assistant", "tool", "function"})

# Keys that mark a payload as another format's (Anthropic, Gemini, the agent logs).
_FOREIGN_KEYS = frozenset(
    {"system", "contents", "response", "history", "trajectory_format", "simulations"}
)
# Content blocks of the Anthropic Messages API, which OpenAI never uses.
_FOREIGN_BLOCKS = Names(
    {"tool_use", "tool_result", "thinking", "redacted_thinking", "image", "document"}
)

_E = TypeVar("_E", bound=BaseModel)


@dataclass
class ConversionState:
    """What converting one conversation remembers from message to message.

    Attributes:
        pending_function: The id made up for the last legacy `function_call` that has
            no `function` result yet.
    """

    pending_function: str | None = None


# --- detection ------------------------------------------------------------------------------


def sniff(raw: RawInput) -> bool:
    """Whether `raw` is an OpenAI message list or a request body holding one."""
    data = raw.data
    if isinstance(data, Mapping):
        if not _FOREIGN_KEYS.isdisjoint(data.keys()):
            return False
        return looks_like_chat(data.get("messages"))
    return looks_like_chat(data)


def looks_like_chat(messages: Any) -> bool:
    """Whether `messages` is a non-empty list of Chat Completions messages."""
    if not isinstance(messages, list) or not messages:
        return False
    return all(_looks_like_message(m) for m in messages)


def _looks_like_message(message: Any) -> bool:
    if not isinstance(message, Mapping) or message.get("role") not in ROLES:
        return False
    if "parts" in message or "tool_call_ids" in message:
        return False
    content = message.get("content")
    if isinstance(content, list):
        return not any(isinstance(b, Mapping) and b.get("type") in _FOREIGN_BLOCKS for b in content)
    return True


# --- sessions -------------------------------------------------------------------------------


def to_sessions(raw: RawInput) -> list[ImportedSession]:
    """Convert a message list or a request body to one session.

    Raises:
        IngestError: the payload or a message is malformed (names the message and field).
    """
    data = raw.data
    meta: dict[str, JsonValue] = {"format": "openai"}
    if isinstance(data, Mapping):
        messages = expect_list(data.get("messages"), raw.at(None, "messages"), "`messages`")
        base_path = "messages"
        if isinstance(data.get("model"), str):
            meta["model"] = data["model"]
    else:
        messages = expect_list(data, raw.at(), "an OpenAI payload")
        base_path = ""
    events = messages_to_events(messages, raw, base_path=base_path)
    return [ImportedSession(name="openai", events=events, meta=meta)]


def messages_to_events(
    messages: Sequence[Any],
    raw: RawInput,
    *,
    base_path: str = "messages",
    state: ConversionState | None = None,
) -> list[AgentEvent]:
    """Convert a list of Chat Completions messages to events.

    Args:
        messages: The messages, in order.
        raw: The input they were read from (for error places).
        base_path: The JSON path of the list inside the input (`[3].traj` for the
            fourth tau-bench run; empty for a bare list).
        state: State carried over from earlier messages of the same conversation.

    Raises:
        IngestError: a message is malformed; names its index and JSON path.
    """
    state = state if state is not None else ConversionState()
    events: list[AgentEvent] = []
    for index, message in enumerate(messages):
        where = raw.at(index, f"{base_path}[{index}]")
        events.extend(message_to_events(message, where, state))
    return events


def message_to_events(
    message: Any, where: SourceLocation, state: ConversionState
) -> list[AgentEvent]:
    """Convert one message (at `where`) to its events; every event's `source` is `where`.

    Raises:
        IngestError: the message is malformed.
    """
    body = expect_mapping(message, where, "message")
    role = body.get("role")
    if role not in ROLES:
        expected = ", ".join(sorted(ROLES))
        msg = f"unknown role {role!r}; expected one of {expected}"
        raise IngestError(msg, where.with_path("role"))
    meta = _meta(body, where)
    if role in ("system", "developer"):
        if role == "developer":
            meta["role"] = "developer"
        content = _content(body, where, required=True)
        return [_event(SystemPrompt, where, content=content, meta=meta)]
    if role == "user":
        content = _content(body, where, required=True)
        # A message an agent's harness wrote (`context_graph.formats.harness`: a reminder,
        # the gateway's reading of a system message mid-conversation) is a notice. Not
        # split by parts: rendered again, each turn is a message of its own.
        notice = is_harness_message(content)
        return [_event(UserTurn, where, content=content, notice=notice, meta=meta)]
    if role == "assistant":
        return [_assistant(body, where, meta, state)]
    return [_result(body, where, meta, state, legacy=role == "function")]


def _meta(body: Mapping[str, Any], where: SourceLocation) -> dict[str, JsonValue]:
    name = body.get("name")
    if name is None:
        return {}
    return {"name": expect_str(name, where.with_path("name"), "`name`")}


def _assistant(
    body: Mapping[str, Any],
    where: SourceLocation,
    meta: dict[str, JsonValue],
    state: ConversionState,
) -> AgentEvent:
    parts: list[ContentPart] = []
    reasoning = body.get("reasoning_content")
    if reasoning is not None:
        text = expect_str(reasoning, where.with_path("reasoning_content"), "`reasoning_content`")
        if text:
            parts.append(ThinkingPart(thinking=text, signature=None))
    content = _content(body, where, required=False)
    parts.extend(p for p in content if not (isinstance(p, TextPart) and not p.text))
    calls = [*_tool_calls(body.get("tool_calls"), where)]
    legacy = body.get("function_call")
    if legacy is not None:
        call_id = f"fn_{_position(where)}"
        calls.append(_function(legacy, call_id, where.with_path("function_call")))
        state.pending_function = call_id
    if isinstance(body.get("refusal"), str):
        meta["refusal"] = body["refusal"]
    return _event(AssistantTurn, where, content=tuple(parts), tool_calls=tuple(calls), meta=meta)


def _tool_calls(value: Any, where: SourceLocation) -> list[ToolCall]:
    if value is None:
        return []
    items = expect_list(value, where.with_path("tool_calls"), "`tool_calls`")
    calls = []
    for i, item in enumerate(items):
        here = where.with_path(f"tool_calls[{i}]")
        call = expect_mapping(item, here, "tool call")
        kind = call.get("type", "function")
        if kind != "function":
            msg = f"unsupported tool call type {kind!r}; expected 'function'"
            raise IngestError(msg, here.with_path("type"))
        call_id = _nonempty(call.get("id"), here.with_path("id"), "tool call `id`")
        calls.append(_function(call.get("function"), call_id, here.with_path("function")))
    return calls


def _function(value: Any, call_id: str, where: SourceLocation) -> ToolCall:
    function = expect_mapping(value, where, "`function`")
    name = _nonempty(function.get("name"), where.with_path("name"), "function `name`")
    arguments = _arguments(function.get("arguments"), where.with_path("arguments"))
    return _build(ToolCall, where, id=call_id, name=name, arguments=arguments)


def _arguments(value: Any, where: SourceLocation) -> str:
    """Arguments as JSON text: text is kept byte for byte, an object is encoded."""
    if value is None:
        return "{}"
    if isinstance(value, str):
        return value
    if isinstance(value, dict | list):
        try:
            return json.dumps(value, ensure_ascii=False)
        except (RecursionError, ValueError, TypeError):
            msg = "tool call arguments cannot be encoded as JSON"
            raise IngestError(msg, where) from None
    msg = f"tool call arguments must be JSON text, got {type(value).__name__}"
    raise IngestError(msg, where)


def _result(
    body: Mapping[str, Any],
    where: SourceLocation,
    meta: dict[str, JsonValue],
    state: ConversionState,
    *,
    legacy: bool,
) -> AgentEvent:
    if legacy:
        if state.pending_function is None:
            msg = "`function` result has no `function_call` before it"
            raise IngestError(msg, where)
        call_id, state.pending_function = state.pending_function, None
    else:
        call_id = _nonempty(
            body.get("tool_call_id"), where.with_path("tool_call_id"), "`tool_call_id`"
        )
    content = _content(body, where, required=False)
    return _event(ToolResult, where, call_id=call_id, content=content, meta=meta)


# --- content --------------------------------------------------------------------------------


def _content(
    body: Mapping[str, Any], where: SourceLocation, *, required: bool
) -> tuple[ContentPart, ...]:
    if "content" not in body and required:
        raise IngestError("message has no `content`", where)
    value = body.get("content")
    if value is None:
        if required:
            raise IngestError("`content` must not be null", where.with_path("content"))
        return ()
    if isinstance(value, str):
        return (TextPart(text=value),)
    items = expect_list(value, where.with_path("content"), "`content`")
    parts = []
    for i, item in enumerate(items):
        here = where.with_path(f"content[{i}]")
        parts.append(_part(expect_mapping(item, here, "content part"), here))
    return tuple(parts)


def _part(block: Mapping[str, Any], where: SourceLocation) -> ContentPart:
    kind = block.get("type")
    if kind in ("text", "refusal"):
        key = str(kind)
        return TextPart(text=expect_str(block.get(key), where.with_path(key), f"`{key}`"))
    if kind == "image_url":
        return _image(block.get("image_url"), where.with_path("image_url"))
    if kind == "input_audio":
        audio = block.get("input_audio")
        fmt = audio.get("format") if isinstance(audio, Mapping) else None
        return TextPart(text=f"[input_audio: {fmt}]" if isinstance(fmt, str) else "[input_audio]")
    if kind == "file":
        file = block.get("file")
        name = file.get("filename") if isinstance(file, Mapping) else None
        return TextPart(text=f"[file: {name}]" if isinstance(name, str) else "[file]")
    msg = f"unknown content part type {kind!r}"
    raise IngestError(msg, where.with_path("type"))


def _image(value: Any, where: SourceLocation) -> ImagePart:
    url = (
        value if isinstance(value, str) else expect_mapping(value, where, "`image_url`").get("url")
    )
    url = expect_str(url, where.with_path("url"), "image `url`")
    head, sep, data = url.partition(",")
    if url.startswith("data:") and sep and head.endswith(";base64"):
        media_type = head.removeprefix("data:").removesuffix(";base64") or None
        return ImagePart(media_type=media_type, data=data)
    return ImagePart(url=url)


# --- helpers shared with the wrapper formats ----------------------------------------------


def _position(where: SourceLocation) -> int:
    """The message's index, or its line in a JSONL file."""
    if where.index is not None:
        return where.index
    return where.line if where.line is not None else 0


def _nonempty(value: Any, where: SourceLocation, what: str) -> str:
    text = expect_str(value, where, what)
    if not text:
        raise IngestError(f"{what} must not be empty", where)
    return text


def _build(cls: type[_E], where: SourceLocation, **fields: Any) -> _E:
    """Build a model, naming `where` if a field is out of range."""
    try:
        return cls(**fields)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(p) for p in first["loc"])
        msg = f"invalid {field or 'value'}: {first['msg']}"
        raise IngestError(msg, where) from None


def _event(cls: type[_E], where: SourceLocation, **fields: Any) -> _E:
    """Build an event whose `source` is `where`."""
    return _build(cls, where, source=where, **fields)
