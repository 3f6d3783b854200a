"""Reading a tool call in the shape each provider SDK gives it, into `ToolCall`'s fields.

The shared shapes: our flat `{id, name, arguments}`; a `function` call (`{id, type:
"function", function: {name, arguments}}`, OpenAI chat's); a `tool_use` block (`{type:
"tool_use", id, name, input}`, Anthropic's). A format whose SDK has a shape of its own
says how to read it in its `Wire.call_shape` (`context_graph.formats.wire.CallShape`):
a call in a part that wraps it is read before the shared shapes, a bare one after. The
SDKs' own objects are pydantic models and are read through `model_dump`, so no SDK is
imported here.

Errors are raised as pydantic errors whose `ctx["path"]` says where inside the call the
problem is (`function.name`); `coerce_events` joins it to pydantic's own location.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from pydantic import BaseModel
from pydantic_core import PydanticCustomError, PydanticSerializationError

from context_graph.formats.wire import CallProblem, CallShape, Places
from context_graph.formats.wires import WIRES

__all__ = ["call_fields", "number_calls", "plain", "shape_error"]

#: The formats' own call shapes, in the order of `FORMAT_NAMES`.
_OWN_SHAPES: tuple[CallShape, ...] = tuple(
    wire.call_shape for wire in WIRES.values() if wire.call_shape is not None
)


def shape_error(reason: str, path: str) -> PydanticCustomError:
    """A validation error whose `ctx["path"]` goes deeper than pydantic's own location."""
    return PydanticCustomError("tool_call", "{reason}", {"reason": reason, "path": path})


def plain(value: Any, own: type[BaseModel] | tuple[type[BaseModel], ...]) -> Any:
    """An SDK object (a pydantic model that is not an `own`) as the plain data it holds."""
    if isinstance(value, BaseModel) and not isinstance(value, own):
        try:
            return value.model_dump(mode="json", exclude_none=True, warnings=False)
        except PydanticSerializationError as exc:
            raise shape_error(f"{type(value).__name__} cannot be read: {exc}", "") from None
    return value


def call_fields(value: Mapping[str, Any], k: int = 0) -> tuple[dict[str, Any], Places]:
    """The `ToolCall` fields of one call in any accepted shape, and where each was read.

    `k` is the call's rank among the same-named calls of its turn (for a format whose
    calls without an id are named by rank). No places means the flat shape, to be
    validated as it is (unknown keys refused).
    """
    with _as_shape_error():
        for shape in _OWN_SHAPES:
            key = shape.wrapper(value)
            if key is not None:
                return shape.read_wrapped(value, key, k)
    kind = value.get("type")
    if kind == "tool_use":
        fields = {"id": value.get("id"), "name": value.get("name"), "arguments": value.get("input")}
        return fields, {"id": "id", "name": "name", "arguments": "input"}
    if kind == "function" and "function" not in value:  # flat, with OpenAI's `type`
        return {k: v for k, v in value.items() if k != "type"}, {}
    if "function" in value or kind is not None:
        return _openai(value, kind)
    with _as_shape_error():
        for shape in _OWN_SHAPES:
            if shape.is_bare(value):
                return shape.read_bare(value, k)
    return dict(value), {}


@contextmanager
def _as_shape_error() -> Iterator[None]:
    """A format's `CallProblem` as the pydantic error the validators raise."""
    try:
        yield
    except CallProblem as exc:
        raise shape_error(str(exc), exc.path) from None


def _openai(value: Mapping[str, Any], kind: Any) -> tuple[dict[str, Any], Places]:
    if kind not in (None, "function"):
        reason = (
            f"unsupported tool call type {kind!r}; expected an OpenAI `function` call, an "
            "Anthropic `tool_use` block, a Gemini `functionCall` part or `{id, name, arguments}`"
        )
        raise shape_error(reason, "type")
    function = value.get("function")
    if not isinstance(function, Mapping):
        reason = f"`function` must be an object with `name` and `arguments`, got {function!r}"
        raise shape_error(reason, "function")
    fields = {
        "id": value.get("id"),
        "name": function.get("name"),
        "arguments": function.get("arguments"),
    }
    return fields, {"id": "id", "name": "function.name", "arguments": "function.arguments"}


def number_calls(value: Any, own: type[BaseModel]) -> Any:
    """One turn's calls, each without an id given one from its rank among same-named calls.

    Only a format's own shape names its calls by rank (`CallShape.name_of`; Gemini's is
    the one). A call's id needs the calls before it, which a single call does not see: so
    the turn's list is read here.
    """
    if not isinstance(value, list | tuple) or all(isinstance(v, own) for v in value):
        return value
    seen: dict[str, int] = {}
    out: list[Any] = []
    for index, raw in enumerate(value):
        try:
            out.append(_numbered(plain(raw, own), seen))
        except PydanticCustomError as exc:
            # Raised for the whole list: put the call's index in front of its path.
            context = exc.context or {}
            path = ".".join(p for p in (str(index), context.get("path", "")) if p)
            raise shape_error(str(context.get("reason", exc.message())), path) from None
    return out


def _numbered(item: Any, seen: dict[str, int]) -> Any:
    name = next((n for shape in _OWN_SHAPES if (n := shape.name_of(item)) is not None), None)
    if name is None:
        return item
    k = seen.get(name, 0)
    seen[name] = k + 1
    fields, places = call_fields(item, k)
    return _with_id(item, fields["id"], places["id"])


def _with_id(item: Mapping[str, Any], call_id: Any, path: str) -> dict[str, Any]:
    """`item` with its call id set at `path` (`functionCall.id`, or `id` for a bare call)."""
    head, _, tail = path.rpartition(".")
    if not head:
        return {**item, tail: call_id}
    return {**item, head: {**item[head], tail: call_id}}
