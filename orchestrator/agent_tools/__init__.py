"""Tools the model can call: `context_expand` and `context_compact`.

`ContextManager(agent_tools=True)` adds them to every request (`specs`) and runs them
(`ContextManager.handle_tool_call`): a call is read (`calls`) and a `context_expand`
restores the compacted piece it names (`expander`), within the budget, as a checked
and audited edit. (`Expander` lives in `orchestrator.agent_tools.expander`, which the
manager imports: the options read the specs, so this package imports nothing of theirs.)
"""

from __future__ import annotations

from orchestrator.agent_tools.calls import AgentCall, Refusal, read_call
from orchestrator.agent_tools.specs import (
    AGENT_TOOLS,
    COMPACT_TOOL,
    EXPAND_TOOL,
    AgentToolName,
    agent_tool_specs,
    check_pin_turns,
)

__all__ = [
    "AGENT_TOOLS",
    "COMPACT_TOOL",
    "EXPAND_TOOL",
    "AgentCall",
    "AgentToolName",
    "Refusal",
    "agent_tool_specs",
    "check_pin_turns",
    "read_call",
]
