"""Check request bodies against the official provider SDKs' request types.

pydantic's `TypeAdapter` on a TypedDict ignores keys it does not know, so a misspelled
field (`tool_call` for `tool_calls`) would pass it. This checker walks the TypedDict
annotations itself and reports unknown keys, missing required keys, wrong literals and
wrong JSON types, each with a JSON path. The SDKs are optional: they are imported only
when a body of their format is checked. The tests and the benchmarks use it beside
`context_graph.validate.request`; it is not part of the installed package (it needs the
SDKs, which the package does not depend on).
"""

from __future__ import annotations

import collections.abc
import functools
import types
import typing
from typing import Any, NotRequired, Required

from typing_extensions import is_typeddict

__all__ = ["sdk_problems", "type_problems"]

_SEQUENCES = {
    collections.abc.Iterable,
    collections.abc.Sequence,
    list,
    tuple,
}
_MAPPINGS = {collections.abc.Mapping, dict}


@functools.cache
def _fields(td: type) -> tuple[dict[str, Any], frozenset[str]]:
    """A TypedDict's field types (wrappers removed) and its required keys."""
    hints = typing.get_type_hints(td, include_extras=True)
    total = getattr(td, "__total__", True)
    fields: dict[str, Any] = {}
    required: set[str] = set()
    for key, hint in hints.items():
        origin = typing.get_origin(hint)
        if origin is Required or origin is typing.Required:
            required.add(key)
            hint = typing.get_args(hint)[0]
        elif origin is NotRequired or origin is typing.NotRequired:
            hint = typing.get_args(hint)[0]
        elif total:
            required.add(key)
        fields[key] = hint
    return fields, frozenset(required)


def type_problems(value: Any, tp: Any, path: str = "$") -> list[str]:
    """Every way the JSON `value` fails to be of type `tp`, as `path: problem` strings."""
    return _check(value, tp, path)


def _check(value: Any, tp: Any, path: str) -> list[str]:
    origin = typing.get_origin(tp)
    if origin is typing.Annotated or origin in (Required, NotRequired):
        return _check(value, typing.get_args(tp)[0], path)
    if hasattr(tp, "__value__"):  # a `type X = ...` alias
        return _check(value, tp.__value__, path)
    if tp is Any or tp is object:
        return []
    if tp is None or tp is type(None):
        return [] if value is None else [f"{path}: expected null, got {type(value).__name__}"]
    if origin is typing.Union or origin is types.UnionType:
        return _check_union(value, typing.get_args(tp), path)
    if origin is typing.Literal:
        allowed = typing.get_args(tp)
        if any(type(value) is type(a) and value == a for a in allowed):
            return []
        return [f"{path}: expected one of {list(allowed)}, got {value!r}"]
    if is_typeddict(tp):
        return _check_typeddict(value, tp, path)
    if origin in _SEQUENCES:
        if not isinstance(value, list):
            return [f"{path}: expected an array, got {type(value).__name__}"]
        (item,) = typing.get_args(tp)[:1] or (Any,)
        return [e for j, v in enumerate(value) for e in _check(v, item, f"{path}[{j}]")]
    if origin in _MAPPINGS or tp in _MAPPINGS:
        if not isinstance(value, dict):
            return [f"{path}: expected an object, got {type(value).__name__}"]
        args = typing.get_args(tp)
        item = args[1] if len(args) == 2 else Any
        return [e for k, v in value.items() for e in _check(v, item, f"{path}.{k}")]
    return _check_scalar(value, tp, path)


def _check_scalar(value: Any, tp: Any, path: str) -> list[str]:
    if tp is float:
        ok = isinstance(value, int | float) and not isinstance(value, bool)
    elif tp is int:
        ok = isinstance(value, int) and not isinstance(value, bool)
    elif isinstance(tp, type):
        ok = isinstance(value, tp)
    else:
        return [f"{path}: the checker cannot handle the type {tp!r}"]
    return [] if ok else [f"{path}: expected {tp.__name__}, got {type(value).__name__}"]


def _check_union(value: Any, arms: tuple[Any, ...], path: str) -> list[str]:
    """Pass if any arm passes; otherwise report the closest arm's problems."""
    best: list[str] | None = None
    for arm in _discriminated(arms, value):
        problems = _check(value, arm, path)
        if not problems:
            return []
        if best is None or len(problems) < len(best):
            best = problems
    return best or [f"{path}: no type of the union matches"]


def _discriminated(arms: tuple[Any, ...], value: Any) -> tuple[Any, ...]:
    """The arms of the value's JSON kind, narrowed by a matching `type` or `role` literal."""
    same_kind = tuple(arm for arm in arms if _same_kind(arm, value))
    arms = same_kind or arms
    if not isinstance(value, dict):
        return arms
    for key in ("type", "role"):
        tag = value.get(key)
        matching = tuple(
            arm
            for arm in arms
            if is_typeddict(arm) and tag in typing.get_args(_fields(arm)[0].get(key))
        )
        if matching:
            # A plain mapping arm takes any object (Anthropic's `InputSchema` is a typed
            # schema or any JSON Schema object, `additionalProperties` and all).
            return matching + tuple(arm for arm in arms if not is_typeddict(arm))
    return arms


def _same_kind(tp: Any, value: Any) -> bool:
    """Whether `tp` describes JSON of the same kind (array, object, scalar) as `value`."""
    while typing.get_origin(tp) is typing.Annotated:
        tp = typing.get_args(tp)[0]
    origin = typing.get_origin(tp)
    if isinstance(value, list):
        return origin in _SEQUENCES
    if isinstance(value, dict):
        return is_typeddict(tp) or origin in _MAPPINGS or tp in _MAPPINGS
    return not (origin in _SEQUENCES or origin in _MAPPINGS or is_typeddict(tp))


def _check_typeddict(value: Any, td: type, path: str) -> list[str]:
    if not isinstance(value, dict):
        return [f"{path}: expected an object ({td.__name__}), got {type(value).__name__}"]
    fields, required = _fields(td)
    problems = [f"{path}.{k}: unknown key for {td.__name__}" for k in value if k not in fields]
    problems += [f"{path}.{k}: missing required key" for k in sorted(required - set(value))]
    for key, hint in fields.items():
        if key in value:
            problems += _check(value[key], hint, f"{path}.{key}")
    return problems


def sdk_problems(payload: Any, format: str) -> list[str]:
    """Where a request body's messages, `system` and `tools` break the SDK types.

    Args:
        payload: A rendered request body (`RenderResult.payload`).
        format: `openai`, `anthropic`, `responses` or `gemini`; of a Gemini body only
            the `tools` field is checked (against `google.genai.types.Tool`).

    Raises:
        ValueError: an unknown format.
        ImportError: the provider's SDK is not installed.
    """
    if not isinstance(payload, dict):
        return [f"$: expected an object, got {type(payload).__name__}"]
    if format == "gemini":
        return _gemini_tool_problems(payload.get("tools"))
    if format == "responses":
        return _responses_problems(payload) + _tool_problems(payload, format)
    problems: list[str] = []
    messages = payload.get("messages")
    if not isinstance(messages, list):
        return ["messages: expected an array"]
    if format == "openai":
        from openai.types.chat import ChatCompletionMessageParam

        message_type: Any = ChatCompletionMessageParam
    elif format == "anthropic":
        from anthropic.types import MessageParam, message_create_params

        message_type = MessageParam
        if "system" in payload:
            base = message_create_params.MessageCreateParamsBase
            system = typing.get_type_hints(base, include_extras=True)["system"]
            problems += _check(payload["system"], system, "system")
    else:
        msg = f"unknown format {format!r}"
        raise ValueError(msg)
    for i, message in enumerate(messages):
        problems += _check(message, _beta_if_compacted(message, message_type), f"messages[{i}]")
    return problems + _tool_problems(payload, format)


def _beta_if_compacted(message: Any, message_type: Any) -> Any:
    """Anthropic's beta message type for a message holding a `compaction` block.

    Compaction blocks (the `compact_20260112` context-management edit) are typed only
    among the SDK's beta types, which the request carrying them uses.
    """
    content = message.get("content") if isinstance(message, dict) else None
    if not isinstance(content, list) or not any(
        isinstance(b, dict) and b.get("type") == "compaction" for b in content
    ):
        return message_type
    from anthropic.types.beta import BetaMessageParam

    return BetaMessageParam


def _tool_problems(payload: dict[str, Any], format: str) -> list[str]:
    """The `tools` field against the type the SDK's create params give it."""
    if "tools" not in payload:
        return []
    base: Any
    if format == "openai":
        from openai.types.chat import completion_create_params

        base = completion_create_params.CompletionCreateParamsBase
    elif format == "anthropic":
        from anthropic.types import message_create_params

        base = message_create_params.MessageCreateParamsBase
    else:
        from openai.types.responses import response_create_params

        base = response_create_params.ResponseCreateParamsBase
    hint = typing.get_type_hints(base, include_extras=True)["tools"]
    return _check(payload["tools"], hint, "tools")


def _gemini_tool_problems(tools: Any) -> list[str]:
    """Each Gemini tool against `google.genai.types.Tool` (which forbids unknown keys)."""
    if tools is None:
        return []
    if not isinstance(tools, list):
        return ["tools: expected an array"]
    from google.genai import types
    from pydantic import ValidationError

    problems: list[str] = []
    for i, tool in enumerate(tools):
        try:
            types.Tool.model_validate(tool)
        except ValidationError as exc:
            problems += [
                f"tools[{i}].{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()
            ]
    return problems


def _responses_problems(payload: dict[str, Any]) -> list[str]:
    """`instructions` and every `input` item against `openai.types.responses`.

    The SDK types an assistant message and a reasoning item as the API returns them,
    with the `id` (and a message's `status`) the API fills in; as input the API takes
    them without (Codex CLI sends both so, and an id it never issued would be wrong to
    make up). So those two keys may be absent there; anything else is checked as typed.
    The other way round, the SDK types a user, system or developer message without an
    `id`, and the API takes one (Codex CLI 0.171 sends each message it recorded with the
    `msg_...` id it gave it): a string id is allowed there.
    """
    from openai.types.responses import (
        ResponseInputItemParam,
        ResponseOutputMessageParam,
        ResponseReasoningItemParam,
        response_create_params,
    )

    hints = typing.get_type_hints(
        response_create_params.ResponseCreateParamsBase, include_extras=True
    )
    problems: list[str] = []
    if "instructions" in payload:
        problems += _check(payload["instructions"], hints["instructions"], "instructions")
    items = payload.get("input")
    if not isinstance(items, list):
        return [*problems, *_check(items, hints["input"], "input")]
    for i, item in enumerate(items):
        path = f"input[{i}]"
        kind = item.get("type") if isinstance(item, dict) else None
        if kind == "reasoning":
            found = _check(item, ResponseReasoningItemParam, path)
            problems += [p for p in found if p != f"{path}.id: missing required key"]
        elif kind == "message" and item.get("role") == "assistant" and "id" not in item:
            found = _check(item, ResponseOutputMessageParam, path)
            absent = {f"{path}.{key}: missing required key" for key in ("id", "status")}
            problems += [p for p in found if p not in absent]
        elif kind == "message" and item.get("role") != "assistant" and "id" in item:
            problems += _check(item["id"], str, f"{path}.id")
            problems += _check(
                {k: v for k, v in item.items() if k != "id"}, ResponseInputItemParam, path
            )
        else:
            problems += _check(item, ResponseInputItemParam, path)
    return problems
