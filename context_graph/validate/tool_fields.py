"""The `tools` field of a request body: function tools in each format's own shape.

Each format nests its function tools its own way; its validator says where they are
(`FunctionsOf`, beside the validator in its folder) and this module checks the rest:
the field is an array of objects, names are well formed and unique across the field, a
parameter schema is an object. Built-in tools (web search, code execution, ...) are the
providers' own and left to them: only their being objects is checked.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, TypeAlias

from context_graph.validate.common import Collector, as_list, is_obj, show

__all__ = ["TOOL_NAME", "TOOL_RULES", "FunctionSite", "FunctionsOf", "check_tools"]

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

#: What most formats accept as a function tool's name.
TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


@dataclass(frozen=True)
class FunctionSite:
    """One function tool in a `tools` field, as its format nests it."""

    function: dict[Any, Any]
    """The object holding the function's `name` and its parameter schema."""
    path: str
    """Where `function` sits in the body."""
    schema_key: str
    """The key of its parameter schema (`parameters`, `input_schema`, ...)."""
    name_pattern: re.Pattern[str] = TOOL_NAME
    """What the format accepts as a name."""
    capital_types: bool = False
    """Whether the schema may spell its `type` in capitals (`OBJECT`)."""


#: A format's reading of one tool object at a path: its function tools (none for a
#: built-in tool), adding to the collector what is wrong with the tool's own shape.
FunctionsOf: TypeAlias = Callable[[dict[Any, Any], str, Collector], Iterable[FunctionSite]]


def check_tools(payload: dict[Any, Any], functions_of: FunctionsOf, out: Collector) -> None:
    """Add every violation of `payload`'s `tools` field (if it has one) to `out`.

    `functions_of` is the format's own reading of a tool object (its validator's).
    """
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
            continue
        for site in functions_of(tool, path, out):
            _function(site, seen, out)


def _function(site: FunctionSite, seen: dict[str, str], out: Collector) -> None:
    function, path, schema_key = site.function, site.path, site.schema_key
    name = function.get("name")
    if not isinstance(name, str) or not site.name_pattern.match(name):
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
    if site.capital_types and isinstance(kind, str):
        kind = kind.lower()
    if not is_obj(schema) or kind not in ("object", None):
        text = f"the schema is {show(schema)}; send a JSON schema object of type `object`"
        out.add("tool_schema_invalid", f"{path}.{schema_key}", None, text)
