"""The `RunHooks` of `ContextSession.hooks()`; imports the Agents SDK (only imported lazily)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agents import Agent, RunContextWrapper, RunHooks
from agents.items import ModelResponse

if TYPE_CHECKING:
    from orchestrator.manager import ContextManager

__all__ = ["usage_hooks"]


class _UsageHooks(RunHooks[Any]):
    """Reports each response's input tokens to the manager that rendered its request."""

    def __init__(self, manager: ContextManager) -> None:
        self._manager = manager

    async def on_llm_end(
        self, context: RunContextWrapper[Any], agent: Agent[Any], response: ModelResponse
    ) -> None:
        """Report `response.usage.input_tokens` (a response without usage reports nothing)."""
        tokens = response.usage.input_tokens
        if tokens > 0 and self._manager.stats().last_render_tokens is not None:
            self._manager.report_usage(tokens)


def usage_hooks(manager: ContextManager) -> RunHooks[Any]:
    """Hooks that report each model response's input tokens to `manager`."""
    return _UsageHooks(manager)
