"""Reading a tool call in the shape each provider SDK gives it, into `ToolCall`'s fields.

The shapes: our flat `{id, name, arguments}`; an OpenAI chat tool call (`{id, type:
"function", function: {name, arguments}}`); an Anthropic `tool_use` block (`{type:
"tool_use", id, name, input}`); a Gemini `functionCall` part (`{functionCall: {id?, name,
args}, thoughtSignature?}`, camelCase or snake_case) or a bare Gemini `FunctionCall`. The
SDKs' own objects are pydantic models and are read through `model_dump`, so no SDK is
imported here.

Errors are raised as pydantic errors whose `ctx["path"]` says where inside the call the
problem is (`function.name`); `coerce_events` joins it to pydantic's own location.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel
from pydantic_core import PydanticCustomError, PydanticSerializationError

from context_graph.graph.content import ProviderSignature

__all__ = ["call_fields", "number_gemini_calls", "plain", "shape_error"]

_GEMINI_KEYS = ("functionCall", "function_call")
_SIGNATURE_KEYS = ("thoughtSignature", "thought_signature")

Places = dict[str, str]
"""Where each `ToolCall` field was read, as the caller spelled it (`name` -> `function.name`)."""


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

    `k` is the call's rank among the same-named calls of its turn (for a Gemini id).
    No places means the flat shape, to be validated as it is (unknown keys refused).
    """
    gemini = next((key for key in _GEMINI_KEYS if value.get(key) is not None), None)
    kind = value.get("type")
    if gemini is not None:
        return _gemini_part(value, gemini, k)
    if kind == "tool_use":
        fields = {"id": value.get("id"), "name": value.get("name"), "arguments": value.get("input")}
        return fields, {"id": "id", "name": "name", "arguments": "input"}
    if kind == "function" and "function" not in value:  # flat, with OpenAI's `type`
        return {k: v for k, v in value.items() if k != "type"}, {}
    if "function" in value or kind is not None:
        return _openai(value, kind)
    if "args" in value and "arguments" not in value:  # a bare Gemini `FunctionCall`
        return _gemini_call(value, k), {"id": "id", "name": "name", "arguments": "args"}
    return dict(value), {}


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


def _gemini_part(part: Mapping[str, Any], key: str, k: int) -> tuple[dict[str, Any], Places]:
    call = part[key]
    if not isinstance(call, Mapping):
        raise shape_error(f"`{key}` must be an object, got {call!r}", key)
    fields = _gemini_call(call, k)
    places = {"id": f"{key}.id", "name": f"{key}.name", "arguments": f"{key}.args"}
    for sig_key in _SIGNATURE_KEYS:
        signature = part.get(sig_key)
        if signature is None:
            continue
        if not isinstance(signature, str):
            reason = f"`{sig_key}` must be the base64 text the API returned, got {signature!r}"
            raise shape_error(reason, sig_key)
        fields["signature"] = ProviderSignature(provider="gemini", value=signature)
        break
    return fields, places


def _gemini_call(call: Mapping[str, Any], k: int) -> dict[str, Any]:
    name, call_id = call.get("name"), call.get("id")
    if call_id in (None, "") and isinstance(name, str) and name:
        # The Gemini importer's rule for a content that stands alone.
        call_id = f"gemini_{name}_{k}"
    return {"id": call_id, "name": name, "arguments": call.get("args")}


def _gemini_name(value: Any) -> str | None:
    """The name of a Gemini call (a part or a bare `FunctionCall`), else `None`."""
    if not isinstance(value, Mapping):
        return None
    call = next((value[key] for key in _GEMINI_KEYS if value.get(key) is not None), None)
    if call is None and "args" in value and "arguments" not in value:
        call = value
    name = call.get("name") if isinstance(call, Mapping) else None
    return name if isinstance(name, str) else None


def number_gemini_calls(value: Any, own: type[BaseModel]) -> Any:
    """One turn's calls, each Gemini call with its rank among same-named calls as its id.

    A call's id needs the calls before it, which a single call does not see: so the
    turn's list is read here, and each Gemini call without an id gets one.
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
    name = _gemini_name(item)
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
