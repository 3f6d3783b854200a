"""Check OpenAI request messages against the official `openai` SDK's request types.

pydantic's `TypeAdapter` on a TypedDict ignores keys it does not know, so a misspelled
field would pass it. This walks the SDK's TypedDict annotations directly (the idea of
tests/context_graph/render/conftest.py) and reports unknown keys, missing required keys,
wrong literals and wrong JSON types, each with a JSON path.
"""

from __future__ import annotations

import collections.abc
import functools
import types
import typing
from typing import Any

from typing_extensions import is_typeddict

_SEQUENCES = {collections.abc.Iterable, collections.abc.Sequence, list, tuple}
_MAPPINGS = {collections.abc.Mapping, dict}
_WRAPPERS = {typing.Required, typing.NotRequired, typing.Annotated}


@functools.cache
def _message_type() -> Any:
    from openai.types.chat import ChatCompletionMessageParam

    return ChatCompletionMessageParam


@functools.cache
def _fields(td: type) -> tuple[dict[str, Any], frozenset[str]]:
    hints = typing.get_type_hints(td, include_extras=True)
    total = getattr(td, "__total__", True)
    fields: dict[str, Any] = {}
    required: set[str] = set()
    for key, hint in hints.items():
        origin = typing.get_origin(hint)
        if origin is typing.Required or (total and origin is not typing.NotRequired):
            required.add(key)
        if origin in (typing.Required, typing.NotRequired):
            hint = typing.get_args(hint)[0]
        fields[key] = hint
    return fields, frozenset(required)


def _unwrap(tp: Any) -> Any:
    while typing.get_origin(tp) in _WRAPPERS:
        tp = typing.get_args(tp)[0]
    return tp.__value__ if hasattr(tp, "__value__") else tp


def _check(value: Any, tp: Any, path: str) -> list[str]:
    tp = _unwrap(tp)
    origin = typing.get_origin(tp)
    if tp is Any or tp is object:
        return []
    if tp is None or tp is type(None):
        return [] if value is None else [f"{path}: expected null"]
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
            return [f"{path}: expected an array"]
        (item,) = typing.get_args(tp)[:1] or (Any,)
        return [p for i, v in enumerate(value) for p in _check(v, item, f"{path}[{i}]")]
    if origin in _MAPPINGS or tp in _MAPPINGS:
        return [] if isinstance(value, dict) else [f"{path}: expected an object"]
    if tp is float:
        ok = isinstance(value, int | float) and not isinstance(value, bool)
    elif tp is int:
        ok = isinstance(value, int) and not isinstance(value, bool)
    else:
        ok = isinstance(tp, type) and isinstance(value, tp)
    return [] if ok else [f"{path}: expected {getattr(tp, '__name__', tp)}"]


def _check_union(value: Any, arms: tuple[Any, ...], path: str) -> list[str]:
    """Pass if any arm passes; otherwise report the arm with the fewest problems."""
    if isinstance(value, dict):
        for key in ("role", "type"):
            tagged = tuple(
                arm
                for arm in arms
                if is_typeddict(_unwrap(arm))
                and value.get(key) in typing.get_args(_fields(_unwrap(arm))[0].get(key))
            )
            if tagged:
                arms = tagged
                break
    best: list[str] | None = None
    for arm in arms:
        problems = _check(value, arm, path)
        if not problems:
            return []
        if best is None or len(problems) < len(best):
            best = problems
    return best or [f"{path}: no type of the union matches"]


def _check_typeddict(value: Any, td: type, path: str) -> list[str]:
    if not isinstance(value, dict):
        return [f"{path}: expected an object ({td.__name__})"]
    fields, required = _fields(td)
    problems = [f"{path}.{k}: unknown key for {td.__name__}" for k in value if k not in fields]
    problems += [f"{path}.{k}: missing required key" for k in sorted(required - set(value))]
    for key, hint in fields.items():
        if key in value:
            problems += _check(value[key], hint, f"{path}.{key}")
    return problems


def message_problems(message: Any) -> list[str]:
    """Where one message breaks `ChatCompletionMessageParam` (empty when it conforms).

    Paths start at `message` so that the answer can be cached whatever its position.
    """
    return _check(message, _message_type(), "message")


def payload_shape_problems(payload: Any) -> list[str]:
    """Problems of the body around the messages: `messages` must be a non-empty array."""
    if not isinstance(payload, dict):
        return ["$: expected an object"]
    messages = payload.get("messages")
    if not isinstance(messages, list):
        return ["messages: expected an array"]
    # The SDK's type allows an empty list; the API rejects it, so it is reported too.
    return [] if messages else ["messages: empty (the API requires at least one message)"]
