"""The `tools` field of a request body: function tools in each format's own shape.

Chat Completions nests each function (`{"type": "function", "function": {...}}`),
Responses keeps it flat (`{"type": "function", "name": ...}`), Anthropic gives it an
`input_schema`, and Gemini lists `functionDeclarations` inside tool objects. Built-in
tools (web search, code execution, ...) are the providers' own and left to them: only
their being objects is checked. Tool names are unique across the field.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from context_graph.validate.common import Collector, as_list, is_obj, show

__all__ = ["TOOL_RULES", "check_tools"]

#: The rules of the `tools` field, shared by every format.
TOOL_RULES: Mapping[str, str] = MappingProxyType(
    {
        "tools_invalid": "The `tools` field is not an array, or an entry of it is not an object.",
        "tool_name_invalid": "A function tool's name is missing, or not 1-64 letters, digits, "
        "`_` or `-` (Gemini also allows `.` and `:`).",
        "tool_schema_invalid": "A function tool's parameter schema is not a JSON object of "
        "`type` `object`.",
        "duplicate_tool_name": "Two function tools share a name.",
    }
)

_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
_GEMINI_NAME = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_.:-]{0,63}$")


def check_tools(payload: dict[Any, Any], format: str, out: Collector) -> None:
    """Add every violation of `payload`'s `tools` field (if it has one) to `out`."""
    if "tools" not in payload:
        return
    tools = as_list(payload["tools"])
    if tools is None:
        out.add("tools_invalid", "tools", None, "`tools` must be an array of tool objects")
        return
    seen: dict[str, str] = {}
    for k, tool in enumerate(tools):
        path = f"tools[{k}]"
        if not is_obj(tool):
            out.add("tools_invalid", path, None, f"a tool is {show(tool)}; send an object")
        elif format == "gemini":
            _gemini_tool(tool, path, seen, out)
        else:
            function = _function_of(tool, format, path)
            if function is not None:
                _function(*function, _NAME, seen, out)


def _function_of(
    tool: dict[Any, Any], format: str, path: str
) -> tuple[dict[Any, Any], str, str] | None:
    """The function object of a tool, its path, and its schema key; None: a built-in."""
    if format == "openai":
        if tool.get("type") != "function":
            return None
        function = tool.get("function")
        return (function if is_obj(function) else {}), f"{path}.function", "parameters"
    if format == "responses":
        return (tool, path, "parameters") if tool.get("type") == "function" else None
    # Anthropic: a custom tool has no type, or type "custom"; the rest are built-ins.
    if tool.get("type") not in (None, "custom"):
        return None
    return tool, path, "input_schema"


def _gemini_tool(tool: dict[Any, Any], path: str, seen: dict[str, str], out: Collector) -> None:
    if "functionDeclarations" not in tool:
        return
    declarations = as_list(tool["functionDeclarations"])
    if declarations is None:
        text = "`functionDeclarations` must be an array of function declarations"
        out.add("tools_invalid", f"{path}.functionDeclarations", None, text)
        return
    for n, declaration in enumerate(declarations):
        where = f"{path}.functionDeclarations[{n}]"
        if not is_obj(declaration):
            out.add("tools_invalid", where, None, f"a declaration is {show(declaration)}")
            continue
        key = "parametersJsonSchema" if "parametersJsonSchema" in declaration else "parameters"
        _function(declaration, where, key, _GEMINI_NAME, seen, out, gemini=True)


def _function(
    function: dict[Any, Any],
    path: str,
    schema_key: str,
    pattern: re.Pattern[str],
    seen: dict[str, str],
    out: Collector,
    *,
    gemini: bool = False,
) -> None:
    name = function.get("name")
    if not isinstance(name, str) or not pattern.match(name):
        text = f"the tool's name is {show(name)}; use 1-64 letters, digits, `_` or `-`"
        out.add("tool_name_invalid", f"{path}.name", None, text)
    elif name in seen:
        text = f"tool `{name}` is already defined at {seen[name]}; give each tool its own name"
        out.add("duplicate_tool_name", f"{path}.name", None, text)
    else:
        seen[name] = path
    if schema_key not in function:
        return
    schema = function[schema_key]
    kind = schema.get("type") if is_obj(schema) else None
    if gemini and isinstance(kind, str) and schema_key == "parameters":
        kind = kind.lower()  # Gemini's Schema spells types in capitals
    if not is_obj(schema) or kind not in ("object", None):
        text = f"the schema is {show(schema)}; send a JSON schema object of type `object`"
        out.add("tool_schema_invalid", f"{path}.{schema_key}", None, text)
