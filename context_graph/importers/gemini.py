"""Importer for Gemini `generateContent` request bodies.

Accepted shapes: `{"systemInstruction": {"parts": [...]}, "contents": [...]}` (snake_case
keys such as `system_instruction`, `function_call` or `inline_data` too), or a bare
`contents` list. Roles are `user`, `model` and `function` (an older role for function
responses); a content without a role is a user turn, as the API reads it.

Parts become content parts: `text`; `thought: true` text (a `ThinkingPart`, its
`thoughtSignature` kept as the signature); `inlineData` (an `ImagePart` for `image/*`, a
`DocumentPart` otherwise); `fileData` (the same split, by URI); `executableCode` and
`codeExecutionResult` (as text). A `functionCall` becomes a tool call of the model turn,
a `functionResponse` a `ToolResult` emitted before the rest of its turn. A function call's
signature becomes the call's `signature` (sent back with it); one on a plain text part
has no field of its own, so it is kept in the assistant turn's
`meta["thought_signatures"]`, keyed `content:<n>`.

Calls without an id get a deterministic one, `gemini_<name>_<i>_<k>`: `contents[i]` is
the model turn and `k` counts the earlier calls with the same name in that turn (a
content that stands alone, read by `model_turn`, has no `i`: `gemini_<name>_<k>`). A
response without an id answers the earliest still unanswered call with the same name in
the most recent model turn, so the k-th response named N pairs with the k-th call named
N, the order in which Gemini expects them. A response with an id answers that id.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import JsonValue

from context_graph.errors import IngestError, SourceLocation
from context_graph.graph.content import (
    ContentPart,
    DocumentPart,
    ImagePart,
    ProviderSignature,
    TextPart,
    ThinkingPart,
)
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
    RawInput,
    check_base64,
    expect_list,
    expect_mapping,
    expect_str,
)

__all__ = ["model_turn", "sniff", "to_sessions"]

_ROLES = frozenset({"user", "model", "function"})
#: The part fields of which a part holds exactly one.
_DATA_KEYS = (
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


def _get(obj: Mapping[str, Any], key: str) -> Any:
    """Read a field by its camelCase name or its snake_case twin."""
    value = obj.get(key)
    if value is None and key in _SNAKE:
        value = obj.get(_SNAKE[key])
    return value


# --- detection ------------------------------------------------------------------------------


def sniff(raw: RawInput) -> bool:
    """Whether `raw` looks like a Gemini request body or `contents` list (never raises)."""
    data = raw.data
    if isinstance(data, Mapping):
        contents = data.get("contents")
        if "messages" in data or not isinstance(contents, list):
            return False
        if not contents:
            return _get(data, "systemInstruction") is not None
        return _looks_like_content(contents[0])
    if isinstance(data, list) and data:
        return _looks_like_content(data[0])
    return False


def _looks_like_content(item: Any) -> bool:
    if not isinstance(item, Mapping) or not isinstance(item.get("parts"), list):
        return False
    role = item.get("role", "user")
    return "content" not in item and "type" not in item and isinstance(role, str) and role in _ROLES


# --- conversion -----------------------------------------------------------------------------


@dataclass
class _Walk:
    """Per-import state: where we are, and the calls still waiting for a response."""

    raw: RawInput
    prefix: str
    model: str | None
    events: list[AgentEvent] = field(default_factory=list)
    pending: list[tuple[str, str]] = field(default_factory=list)
    """(name, call id) of the latest model turn's calls that have no response yet."""

    def at(self, index: int, path: str = "") -> SourceLocation:
        return self.raw.at(index, f"{self.prefix}[{index}]{path}")


def to_sessions(raw: RawInput) -> list[ImportedSession]:
    """Convert a Gemini request body (or bare `contents` list) to one session.

    Raises:
        IngestError: the payload is malformed; names the content index and JSON path.
    """
    data = raw.data
    model: str | None = None
    system: Any = None
    if isinstance(data, Mapping):
        contents = expect_list(data.get("contents", []), raw.at(None, "contents"), "`contents`")
        system = _get(data, "systemInstruction")
        model = data.get("model") if isinstance(data.get("model"), str) else None
        prefix = "contents"
    else:
        contents = expect_list(data, raw.at(), "a Gemini payload (object or `contents` array)")
        prefix = ""
    walk = _Walk(raw, prefix, model)
    if system is not None:
        _system(system, walk)
    for index, item in enumerate(contents):
        _content(index, item, walk)
    name = raw.path.stem if raw.path is not None else "gemini"
    meta: dict[str, JsonValue] = {"format": "gemini"}
    if model is not None:
        meta["model"] = model
    return [ImportedSession(name=name, events=walk.events, meta=meta)]


def _system(value: Any, walk: _Walk) -> None:
    key = "systemInstruction" if "systemInstruction" in walk.raw.data else "system_instruction"
    where = walk.raw.at(None, key)
    if isinstance(value, str):
        parts: list[ContentPart] = [TextPart(text=value)]
    else:
        body = expect_mapping(value, where, f"`{key}`")
        raw_parts = expect_list(body.get("parts", []), where.with_path("parts"), "`parts`")
        parts = [
            _plain_part(p, where.with_path(f"parts[{k}]"), "system")
            for k, p in enumerate(raw_parts)
        ]
    if parts:
        walk.events.append(SystemPrompt(content=tuple(parts), source=where))


def _content(index: int, item: Any, walk: _Walk) -> None:
    body = expect_mapping(item, walk.at(index), "a content")
    role = body.get("role", "user")
    if not isinstance(role, str) or role not in _ROLES:
        msg = f"unknown role {role!r}; expected one of user, model, function"
        raise IngestError(msg, walk.at(index, ".role"))
    parts = expect_list(body.get("parts"), walk.at(index, ".parts"), "`parts`")
    if role == "model":
        _model_turn(index, parts, walk)
    else:
        _user_turn(index, parts, walk)


def _model_turn(index: int, parts: Sequence[Any], walk: _Walk) -> None:
    turn = _model_event(
        parts, lambda k: walk.at(index, f".parts[{k}]"), f"{index}_", walk.model, walk.at(index)
    )
    walk.pending = [(c.name, c.id) for c in turn.tool_calls]
    walk.events.append(turn)


def model_turn(content: Any, where: SourceLocation) -> AssistantTurn:
    """Convert one `model` content that stands alone (a reply's `candidates[0].content`).

    Calls without an id get `gemini_<name>_<k>`: there is no content index.

    Raises:
        IngestError: the content is malformed or not the model's; names the JSON path.
    """
    body = expect_mapping(content, where, "a content")
    role = body.get("role", "model")
    if role != "model":
        msg = f"expected the model's content, got role {role!r}"
        raise IngestError(msg, where.with_path("role"))
    parts = expect_list(body.get("parts"), where.with_path("parts"), "`parts`")
    return _model_event(parts, lambda k: where.with_path(f"parts[{k}]"), "", None, where)


def _model_event(
    parts: Sequence[Any],
    at: Callable[[int], SourceLocation],
    prefix: str,
    model: str | None,
    source: SourceLocation,
) -> AssistantTurn:
    """A model turn's parts (each at `at(k)`) as one turn; `prefix` goes into made-up ids."""
    content: list[ContentPart] = []
    calls: list[ToolCall] = []
    signatures: dict[str, JsonValue] = {}
    seen: dict[str, int] = {}
    for k, value in enumerate(parts):
        where = at(k)
        part = expect_mapping(value, where, "a part")
        signature = _signature(part, where)
        if _data_key(part, where) == "functionCall":
            inner = where.with_path(_key(part, "functionCall"))
            calls.append(_call(_get(part, "functionCall"), inner, prefix, seen, signature))
            continue
        converted = _plain_part(part, where, "model")
        if signature is not None and not isinstance(converted, ThinkingPart):
            signatures[f"content:{len(content)}"] = signature
        content.append(converted)
    meta: dict[str, JsonValue] = {"thought_signatures": signatures} if signatures else {}
    return AssistantTurn(
        content=tuple(content), tool_calls=tuple(calls), model=model, meta=meta, source=source
    )


def _call(
    value: Any, where: SourceLocation, prefix: str, seen: dict[str, int], signature: str | None
) -> ToolCall:
    body = expect_mapping(value, where, "`functionCall`")
    name = _name(body, where, "functionCall")
    k = seen.get(name, 0)
    seen[name] = k + 1
    call_id = _optional_id(body, where) or f"gemini_{name}_{prefix}{k}"
    args = body.get("args")
    if args is not None:
        expect_mapping(args, where.with_path("args"), "functionCall `args`")
    signed = None if signature is None else ProviderSignature(provider="gemini", value=signature)
    arguments = _dump(args or {}, where.with_path("args"))
    return ToolCall(id=call_id, name=name, arguments=arguments, signature=signed)


def _user_turn(index: int, parts: Sequence[Any], walk: _Walk) -> None:
    content: list[ContentPart] = []
    results: list[ToolResult] = []
    for k, value in enumerate(parts):
        where = walk.at(index, f".parts[{k}]")
        part = expect_mapping(value, where, "a part")
        if _data_key(part, where) == "functionResponse":
            inner = where.with_path(_key(part, "functionResponse"))
            results.append(_result(_get(part, "functionResponse"), inner, walk))
            continue
        if part.get("thought") is True:
            raise IngestError("a thought part can only be in a model turn", where)
        content.append(_plain_part(part, where, "user"))
    walk.events.extend(results)
    if content:
        walk.events.append(UserTurn(content=tuple(content), source=walk.at(index)))


def _result(value: Any, where: SourceLocation, walk: _Walk) -> ToolResult:
    body = expect_mapping(value, where, "`functionResponse`")
    name = _name(body, where, "functionResponse")
    response = expect_mapping(
        body.get("response", {}), where.with_path("response"), "functionResponse `response`"
    )
    call_id = _answer(name, _optional_id(body, where), where, walk)
    return ToolResult(
        call_id=call_id,
        name=name,
        content=_response_text(response, where.with_path("response")),
        is_error="error" in response,
        source=where,
    )


def _answer(name: str, call_id: str | None, where: SourceLocation, walk: _Walk) -> str:
    """Return the id a response answers, taking its call off the pending list."""
    for k, (pending_name, pending_id) in enumerate(walk.pending):
        if pending_id == call_id or (call_id is None and pending_name == name):
            del walk.pending[k]
            return pending_id
    if call_id is not None:
        # An answer to an older turn's call: the graph pairs it or names the orphan.
        return call_id
    msg = (
        f"functionResponse `{name}` has no id and no unanswered functionCall `{name}` in "
        f"the model turn before it; add the call or give the response the call's `id`"
    )
    raise IngestError(msg, where)


def _response_text(response: Mapping[str, Any], where: SourceLocation) -> str:
    """The output as text: a lone `output` / `content` / `error` string, else the JSON."""
    if len(response) == 1:
        ((key, value),) = response.items()
        if key in ("output", "content", "error") and isinstance(value, str):
            return value
    return _dump(response, where)


# --- parts ----------------------------------------------------------------------------------


def _plain_part(value: Any, where: SourceLocation, role: str) -> ContentPart:
    """Convert a part that is content (not a call or a response) to a content part."""
    part = expect_mapping(value, where, "a part")
    kind = _data_key(part, where)
    if kind in ("functionCall", "functionResponse"):
        msg = f"a `{kind}` part cannot be in a {role} turn"
        raise IngestError(msg, where)
    thought = part.get("thought")
    if thought is not None and not isinstance(thought, bool):
        raise IngestError("part `thought` must be a boolean", where.with_path("thought"))
    if kind is None or (thought and kind == "text"):
        text = "" if kind is None else expect_str(part["text"], where, "part `text`")
        return ThinkingPart(thinking=text, signature=_signature(part, where), provider="gemini")
    body = _get(part, kind)
    inner = where.with_path(_key(part, kind))
    if kind == "text":
        return TextPart(text=expect_str(body, where.with_path("text"), "part `text`"))
    if kind == "inlineData":
        return _inline(body, inner)
    if kind == "fileData":
        return _file(body, inner)
    return _code(kind, body, inner)


def _data_key(part: Mapping[str, Any], where: SourceLocation) -> str | None:
    """The one data field a part holds; `None` for a thought or signature-only part."""
    found = [k for k in _DATA_KEYS if _get(part, k) is not None]
    if len(found) > 1:
        msg = f"a part holds exactly one of {', '.join(_DATA_KEYS)}; got {', '.join(found)}"
        raise IngestError(msg, where)
    if found:
        return found[0]
    if part.get("thought") is True or _signature(part, where) is not None:
        return None
    keys = ", ".join(sorted(str(k) for k in part)) or "none"
    msg = f"unknown part (keys: {keys}); expected one of {', '.join(_DATA_KEYS)}"
    raise IngestError(msg, where)


def _inline(value: Any, where: SourceLocation) -> ContentPart:
    body = expect_mapping(value, where, "`inlineData`")
    mime = expect_str(_get(body, "mimeType"), where.with_path("mimeType"), "`mimeType`")
    data = expect_str(body.get("data"), where.with_path("data"), "inlineData `data`")
    check_base64(data, where.with_path("data"), "inlineData")
    if mime.startswith("image/"):
        return ImagePart(media_type=mime, data=data)
    return DocumentPart(media_type=mime, data=data)


def _file(value: Any, where: SourceLocation) -> ContentPart:
    body = expect_mapping(value, where, "`fileData`")
    uri = expect_str(_get(body, "fileUri"), where.with_path("fileUri"), "`fileUri`")
    mime = _get(body, "mimeType")
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


def _key(part: Mapping[str, Any], key: str) -> str:
    """The spelling of `key` this part uses, for error paths."""
    return key if key in part else _SNAKE.get(key, key)


def _name(body: Mapping[str, Any], where: SourceLocation, what: str) -> str:
    name = expect_str(body.get("name"), where.with_path("name"), f"{what} `name`")
    if not name:
        raise IngestError(f"{what} `name` must not be empty", where.with_path("name"))
    return name


def _optional_id(body: Mapping[str, Any], where: SourceLocation) -> str | None:
    value = body.get("id")
    if value is None or value == "":
        return None
    return expect_str(value, where.with_path("id"), "`id`")


def _signature(part: Mapping[str, Any], where: SourceLocation) -> str | None:
    value = _get(part, "thoughtSignature")
    if value is None:
        return None
    return expect_str(value, where.with_path(_key(part, "thoughtSignature")), "`thoughtSignature`")


def _dump(value: Any, where: SourceLocation) -> str:
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError) as exc:
        msg = f"value is not JSON-serializable: {exc}"
        raise IngestError(msg, where) from None
