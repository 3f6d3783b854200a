"""The tools the engine adds to a request for the model to call, as `ToolSpec`s.

`context_expand` brings a compacted piece back (the id a placeholder names);
`context_compact` asks for a compaction now. `agent_tool_specs` reads the
`ContextManager(agent_tools=...)` option into the specs a request carries, after the
user's own tools.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Final, Literal, TypeAlias

from context_graph.errors import ConfigurationError
from context_graph.render.tools import ToolSpec

__all__ = [
    "AGENT_TOOLS",
    "COMPACT_TOOL",
    "EXPAND_TOOL",
    "AgentToolName",
    "agent_tool_specs",
    "check_pin_turns",
]

AgentToolName: TypeAlias = Literal["context_expand", "context_compact"]

EXPAND_TOOL: Final = "context_expand"
COMPACT_TOOL: Final = "context_compact"

#: Longest id the model may pass (derived ids are far shorter; a longer one is refused).
MAX_ID_CHARS: Final = 512
#: Longest instructions the model may pass to `context_compact`.
MAX_INSTRUCTIONS_CHARS: Final = 4_000

#: Every agent tool by name, as the request carries it.
AGENT_TOOLS: Final[Mapping[str, ToolSpec]] = MappingProxyType(
    {
        EXPAND_TOOL: ToolSpec(
            name=EXPAND_TOOL,
            # Every request carries it, inside the budget: each word costs history.
            description="Restore a compacted piece of the context by the id it names.",
            parameters={
                "type": "object",
                "properties": {"id": {"type": "string"}},
                "required": ["id"],
            },
        ),
        COMPACT_TOOL: ToolSpec(
            name=COMPACT_TOOL,
            description=(
                "Compact the context window now (old tool outputs masked, earlier turns "
                "summarized) to make room; everything compacted can be restored with "
                "context_expand."
            ),
            parameters={
                "type": "object",
                "properties": {
                    "instructions": {
                        "type": "string",
                        "description": "What the summary must keep, e.g. 'the DB schema'.",
                        "maxLength": MAX_INSTRUCTIONS_CHARS,
                    }
                },
            },
        ),
    }
)

_SHORT = {"expand": EXPAND_TOOL, "compact": COMPACT_TOOL}


def agent_tool_specs(value: object, user_tools: Sequence[ToolSpec]) -> tuple[ToolSpec, ...]:
    """The agent tools `value` (the `agent_tools` option) asks for, in a fixed order.

    `False` or `None`: none. `True`: `context_expand`. A list of names (`"expand"`,
    `"compact"`, or the tools' own names): those.

    Raises:
        ConfigurationError: an unknown name or value, or a name the user's own tools
            take already.
    """
    if value is None or value is False:
        return ()
    if value is True:
        names: set[str] = {EXPAND_TOOL}
    elif isinstance(value, str | bytes) or not isinstance(value, Sequence | frozenset | set):
        msg = (
            "ContextManager: `agent_tools` must be True, False or a list of names such as "
            f"('expand', 'compact'), got {value!r}"
        )
        raise ConfigurationError(msg)
    else:
        names = set()
        for item in value:
            name = _SHORT.get(item, item) if isinstance(item, str) else None
            if name is None or name not in AGENT_TOOLS:
                known = ", ".join(repr(n) for n in (*_SHORT, *AGENT_TOOLS))
                msg = f"ContextManager: `agent_tools` names {item!r}; use some of {known}"
                raise ConfigurationError(msg)
            names.add(name)
        if not names:
            msg = "ContextManager: `agent_tools` is an empty list; pass False for none"
            raise ConfigurationError(msg)
    for spec in user_tools:
        if spec.name in names:
            msg = (
                f"ContextManager: the tools define `{spec.name}`, which `agent_tools` adds "
                "and runs itself; rename that tool, or leave it out of `agent_tools`"
            )
            raise ConfigurationError(msg)
    return tuple(AGENT_TOOLS[name] for name in AGENT_TOOLS if name in names)


def check_pin_turns(value: object) -> int:
    """`expand_pin_turns`: a whole number of user turns, 0 or more.

    Raises:
        ConfigurationError: anything else.
    """
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        msg = f"ContextManager: `expand_pin_turns` must be an int >= 0, got {value!r}"
        raise ConfigurationError(msg)
    return value
