"""The `RunHooks` of `ContextSession.hooks()`: each response's input tokens, reported."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agents import Agent, RunContextWrapper, RunHooks
    from agents.items import ModelResponse

    from orchestrator.manager import ContextManager

__all__ = ["usage_hooks"]


def usage_hooks(manager: ContextManager) -> RunHooks[Any]:
    """Hooks that report each model response's input tokens to `manager`.

    The SDK is imported here, when hooks are asked for, like everywhere in the integration.
    """
    from agents import RunHooks

    class UsageHooks(RunHooks[Any]):
        """Reports each response's input tokens to the manager that rendered its request."""

        async def on_llm_end(
            self, context: RunContextWrapper[Any], agent: Agent[Any], response: ModelResponse
        ) -> None:
            """Report `response.usage.input_tokens` (nothing without usage or a render)."""
            tokens = response.usage.input_tokens
            if tokens > 0 and manager.stats().last_render_tokens is not None:
                manager.report_usage(tokens)

    return UsageHooks()
