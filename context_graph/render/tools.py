"""Tool definitions: one neutral spec, read from any provider's shape, written to each.

A request's tool definitions are part of what the provider counts, so the `Renderer`
renders them into the format's own field and counts them inside the budget. Callers
hand them over in the shape they already have: OpenAI Chat Completions function tools
(`{"type": "function", "function": {...}}`), OpenAI Responses function tools
(`{"type": "function", "name": ...}`), Anthropic tools (`{"name", "input_schema"}`),
Gemini function declarations (a `{"functionDeclarations": [...]}` tool or bare
declarations), or `ToolSpec`; as dicts or as the SDKs' own objects.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from context_graph.errors import ConfigurationError
from context_graph.formats.wire import FormatOverhead
from context_graph.graph.node_tokens import NodeTokenCache

__all__ = [
    "ToolSpec",
    "count_tools",
    "read_tools",
    "tool_names",
    "tools_key",
]

#: Names every provider accepts (Anthropic and OpenAI allow exactly these; Gemini more).
_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
_EMPTY_SCHEMA: Mapping[str, Any] = {"type": "object", "properties": {}}


@dataclass(frozen=True, eq=True)
class ToolSpec:
    """One function tool, in no provider's shape.

    Attributes:
        name: The name the model calls it by (letters, digits, `_` and `-`, at most 64).
        description: What it does, for the model ("" for none).
        parameters: Its arguments as a JSON schema of `"type": "object"`.
        strict: OpenAI's strict schema adherence (None: not said, left out).
    """

    name: str
    description: str = ""
    parameters: Mapping[str, Any] = field(default_factory=lambda: dict(_EMPTY_SCHEMA))
    strict: bool | None = None

    __hash__ = None  # type: ignore[assignment]  # the schema is a dict: not hashable


def read_tools(tools: Iterable[Any] | None) -> tuple[ToolSpec, ...]:
    """The tools as neutral specs, in the caller's order.

    Args:
        tools: Tool definitions in any of the shapes the module docstring lists, dicts
            or SDK objects (anything with pydantic's `model_dump`); None for none.

    Raises:
        ConfigurationError: not a list of tools; a tool of no known shape, or not a
            function tool; a missing or bad name, description or schema; two tools of
            one name. The message names the tool and the field.
    """
    if tools is None:
        return ()
    if isinstance(tools, str | bytes | Mapping) or not isinstance(tools, Iterable):
        msg = f"tools must be a list of tool definitions, got {type(tools).__name__}"
        raise ConfigurationError(msg)
    specs: list[ToolSpec] = []
    seen: dict[str, str] = {}
    for index, tool in enumerate(tools):
        where = f"tools[{index}]"
        for offset, spec in enumerate(_read_one(tool, where)):
            place = where if offset == 0 and not _is_gemini_tool(tool) else f"{where}.{offset}"
            if spec.name in seen:
                msg = f"{place}: tool `{spec.name}` is defined twice (first at {seen[spec.name]})"
                raise ConfigurationError(msg)
            seen[spec.name] = place
            specs.append(spec)
    return tuple(specs)


def tool_names(specs: Sequence[ToolSpec]) -> tuple[str, ...]:
    """The names of `specs`, in order."""
    return tuple(spec.name for spec in specs)


def tools_key(specs: Sequence[ToolSpec]) -> str:
    """A canonical text of `specs`: equal exactly when the tool sets render the same."""
    return json.dumps(
        [[s.name, s.description, s.parameters, s.strict] for s in specs],
        sort_keys=True,
        ensure_ascii=False,
        separators=(",", ":"),
    )


def _plain(tool: Any) -> Any:
    """An SDK object (pydantic) as the dict of its JSON shape; anything else as it is."""
    dump = getattr(tool, "model_dump", None)
    if isinstance(tool, ToolSpec) or not callable(dump):
        return tool
    return dump(by_alias=True, exclude_none=True, mode="json")


def _is_gemini_tool(tool: Any) -> bool:
    plain = _plain(tool)
    return isinstance(plain, Mapping) and (
        "functionDeclarations" in plain or "function_declarations" in plain
    )


def _read_one(tool: Any, where: str) -> list[ToolSpec]:
    tool = _plain(tool)
    if isinstance(tool, ToolSpec):
        return [_checked(tool.name, tool.description, tool.parameters, tool.strict, where)]
    if not isinstance(tool, Mapping):
        msg = f"{where}: a tool definition must be an object, got {type(tool).__name__}"
        raise ConfigurationError(msg)
    declarations = tool.get("functionDeclarations", tool.get("function_declarations"))
    if declarations is not None:
        if not isinstance(declarations, list):
            msg = f"{where}.functionDeclarations: expected a list of function declarations"
            raise ConfigurationError(msg)
        return [
            _gemini(d, f"{where}.functionDeclarations[{i}]") for i, d in enumerate(declarations)
        ]
    kind = tool.get("type")
    if kind == "function" and "function" in tool:
        function = _plain(tool["function"])
        if not isinstance(function, Mapping):
            msg = f"{where}.function: expected an object with the function's name"
            raise ConfigurationError(msg)
        return [_from(function, "parameters", f"{where}.function")]
    if kind == "function":
        return [_from(tool, "parameters", where)]
    if kind is not None and kind != "custom":
        name = tool.get("name", "?")
        msg = (
            f"{where} (`{name}`): type {kind!r} is not a function tool; only function "
            "tools (with a name, a description and a JSON schema) can be rendered"
        )
        raise ConfigurationError(msg)
    if "input_schema" in tool:
        return [_from(tool, "input_schema", where)]
    if "name" in tool:
        return [_gemini(tool, where)]
    msg = (
        f"{where}: not a tool definition of a known shape (expected an OpenAI, Anthropic "
        "or Gemini function tool, or a name with a description and parameters)"
    )
    raise ConfigurationError(msg)


def _gemini(declaration: Any, where: str) -> ToolSpec:
    """A Gemini declaration (or a neutral dict): `parametersJsonSchema` or `parameters`."""
    declaration = _plain(declaration)
    if not isinstance(declaration, Mapping):
        msg = f"{where}: a function declaration must be an object"
        raise ConfigurationError(msg)
    for key in ("parametersJsonSchema", "parameters_json_schema"):
        if key in declaration:
            return _from(declaration, key, where)
    if "parameters" in declaration:
        # Gemini's own Schema spells types in capitals (OBJECT, STRING): JSON schema does not.
        declaration = {**declaration, "parameters": _lower_types(declaration["parameters"])}
    return _from(declaration, "parameters", where)


def _lower_types(schema: Any) -> Any:
    if isinstance(schema, Mapping):
        return {
            k: (v.lower() if k == "type" and isinstance(v, str) else _lower_types(v))
            for k, v in schema.items()
        }
    if isinstance(schema, list):
        return [_lower_types(v) for v in schema]
    return schema


def _from(tool: Mapping[str, Any], schema_key: str, where: str) -> ToolSpec:
    parameters = tool.get(schema_key, _EMPTY_SCHEMA)
    return _checked(
        tool.get("name"), tool.get("description", ""), parameters, tool.get("strict"), where
    )


def _checked(name: Any, description: Any, parameters: Any, strict: Any, where: str) -> ToolSpec:
    if not isinstance(name, str) or not _NAME.match(name):
        msg = f"{where}: `name` must be 1 to 64 letters, digits, `_` or `-`, got {name!r}"
        raise ConfigurationError(msg)
    label = f"{where} (`{name}`)"
    if description is None:
        description = ""
    if not isinstance(description, str):
        msg = f"{label}: `description` must be text, got {type(description).__name__}"
        raise ConfigurationError(msg)
    if not isinstance(parameters, Mapping):
        msg = (
            f"{label}: the parameters must be a JSON schema object, got {type(parameters).__name__}"
        )
        raise ConfigurationError(msg)
    if parameters.get("type", "object") != "object":
        msg = f"{label}: the parameters schema must have type 'object', got {parameters['type']!r}"
        raise ConfigurationError(msg)
    try:
        schema = json.loads(json.dumps(parameters))
    except (TypeError, ValueError) as exc:
        msg = f"{label}: the parameters schema is not JSON ({exc})"
        raise ConfigurationError(msg) from exc
    if strict is not None and not isinstance(strict, bool):
        msg = f"{label}: `strict` must be true, false or absent, got {strict!r}"
        raise ConfigurationError(msg)
    return ToolSpec(name, description, schema, strict)


# --- counting -----------------------------------------------------------------------------


def count_tools(
    field_value: Any,
    overhead: FormatOverhead,
    cache: NodeTokenCache,
    *,
    nested_in: str | None = None,
) -> int:
    """Tokens of a format's rendered tools field, with the format's tool overheads.

    Each tool costs its JSON text (a `cache_control` mark costs nothing) plus
    `per_tool`; a request with tools adds `per_tools` once (the tool-use preamble the
    provider puts before them). A format that lists its functions inside tool objects
    names the key (`nested_in`): each function there is counted as a tool.
    """
    if not field_value or not isinstance(field_value, list):
        return 0
    tools: list[Any] = []
    for tool in field_value:
        inner = tool.get(nested_in) if nested_in and isinstance(tool, dict) else None
        tools.extend(inner if isinstance(inner, list) else [tool])
    total = overhead.per_tools
    for tool in tools:
        # A body from elsewhere may hold anything here: count what JSON can carry.
        plain = (
            {k: v for k, v in tool.items() if k != "cache_control"}
            if isinstance(tool, dict)
            else tool
        )
        text = json.dumps(plain, ensure_ascii=False, separators=(",", ":"), default=str)
        total += overhead.per_tool + cache.count_text(text)
    return total
