"""Reading one agent tool call as a provider SDK hands it over, or saying what is wrong.

The model makes the call, so its mistakes (an unknown tool, arguments that are not
JSON, a missing or oversized `id`) are answered with a `Refusal`: text the model reads
as the tool's result, naming what was wrong and what to pass. What only the host can
get wrong (a name or arguments of a Python type no SDK uses) raises
`ConfigurationError`.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any, Final

from context_graph.errors import ConfigurationError
from orchestrator.agent_tools.specs import (
    COMPACT_TOOL,
    EXPAND_TOOL,
    MAX_ID_CHARS,
    MAX_INSTRUCTIONS_CHARS,
)

__all__ = ["AgentCall", "Refusal", "read_call", "shown"]

#: Longest arguments text read at all (a hostile model can send megabytes).
MAX_ARGUMENTS_CHARS: Final = 16_000
_SHOWN_CHARS = 60

_FIELDS: Final[dict[str, tuple[str, ...]]] = {
    EXPAND_TOOL: ("id",),
    COMPACT_TOOL: ("instructions",),
}
_REQUIRED: Final[dict[str, tuple[str, ...]]] = {EXPAND_TOOL: ("id",), COMPACT_TOOL: ()}
_LIMITS: Final[dict[str, int]] = {"id": MAX_ID_CHARS, "instructions": MAX_INSTRUCTIONS_CHARS}
_EXAMPLES: Final[dict[str, str]] = {
    EXPAND_TOOL: '{"id": "<the id a placeholder names>"}',
    COMPACT_TOOL: '{"instructions": "<what to keep>"} or {}',
}


@dataclass(frozen=True, slots=True)
class AgentCall:
    """One agent tool call whose arguments read."""

    name: str
    """`context_expand` or `context_compact`."""
    arguments: Mapping[str, str]
    """The arguments, each a string within its limit."""


@dataclass(frozen=True, slots=True)
class Refusal:
    """A call refused: `text` is the tool result the model reads; nothing changed."""

    text: str


def shown(value: object) -> str:
    """`value` as the model may see it back: `repr`, cut short."""
    text = repr(value)
    return text if len(text) <= _SHOWN_CHARS else f"{text[: _SHOWN_CHARS - 3]}..."


def read_call(name: object, arguments: object, enabled: Collection[str]) -> AgentCall | Refusal:
    """The call `name(arguments)` to one of the `enabled` tools, or why it is refused.

    Args:
        name: The tool name the model called.
        arguments: Its arguments: a JSON text (OpenAI), a mapping (Anthropic, Gemini),
            or `None` for none.
        enabled: The agent tools the manager has.

    Raises:
        ConfigurationError: `name` is not a string, or `arguments` is not a string,
            bytes, a mapping or `None` (the host passed something no SDK gives).
    """
    if not isinstance(name, str):
        msg = f"handle_tool_call: the tool name must be a str, got {type(name).__name__}"
        raise ConfigurationError(msg)
    if name not in enabled:
        tools = ", ".join(enabled)
        return Refusal(f"{shown(name)} is not a context tool; the context tools are {tools}")
    read = _object(name, arguments)
    if isinstance(read, Refusal):
        return read
    return _fields(name, read)


def _object(name: str, arguments: object) -> Mapping[Any, Any] | Refusal:
    if arguments is None:
        return {}
    if isinstance(arguments, Mapping):
        return arguments
    if isinstance(arguments, bytes):
        try:
            arguments = arguments.decode("utf-8")
        except UnicodeDecodeError:
            return _refuse(name, "the arguments are not UTF-8 text")
    if not isinstance(arguments, str):
        msg = (
            "handle_tool_call: `arguments` must be the call's JSON text or a mapping, "
            f"got {type(arguments).__name__}"
        )
        raise ConfigurationError(msg)
    if len(arguments) > MAX_ARGUMENTS_CHARS:
        return _refuse(name, f"the arguments are {len(arguments):,} characters long")
    if not arguments.strip():
        return {}
    try:
        value = json.loads(arguments)
    except (ValueError, RecursionError) as exc:
        where = (
            f" ({exc.msg} at character {exc.pos})" if isinstance(exc, json.JSONDecodeError) else ""
        )
        return _refuse(name, f"the arguments are not JSON{where}")
    if not isinstance(value, dict):
        return _refuse(name, f"the arguments are a JSON {type(value).__name__}, not an object")
    return value


def _fields(name: str, value: Mapping[Any, Any]) -> AgentCall | Refusal:
    allowed = _FIELDS[name]
    extra = [key for key in value if key not in allowed]
    if extra:
        listed = ", ".join(shown(key) for key in extra[:3])
        return _refuse(name, f"it takes no argument {listed}")
    for key in _REQUIRED[name]:
        if key not in value:
            return _refuse(name, f"the argument {key!r} is missing")
    read: dict[str, str] = {}
    for key in allowed:
        if key not in value:
            continue
        item = value[key]
        if not isinstance(item, str):
            return _refuse(name, f"{key!r} must be a string, got {shown(item)}")
        if len(item) > _LIMITS[key]:
            return _refuse(name, f"{key!r} is {len(item):,} characters; at most {_LIMITS[key]:,}")
        if key == "id" and not item.strip():
            return _refuse(name, "'id' is empty")
        read[key] = item.strip() if key == "id" else item
    return AgentCall(name, read)


def _refuse(name: str, problem: str) -> Refusal:
    return Refusal(f"{name} refused: {problem}; pass {_EXAMPLES[name]}")
