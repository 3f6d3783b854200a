"""Framework integrations, each an optional extra in its own module.

- `orchestrator.integrations.langchain`: `ContextMiddleware`, a LangChain v1 / LangGraph
  `AgentMiddleware` (the `langchain` extra).
- `orchestrator.integrations.pydantic_ai`: `ContextHistory`, a pydantic-ai history
  processor (the `pydantic-ai` extra).
- `orchestrator.integrations.openai_agents`: `ContextSession`, an OpenAI Agents SDK
  `Session` with its model-input filter (the `openai-agents` extra).
- `orchestrator.integrations.clients`: what `ContextManager.wrap(client)` returns, for the
  OpenAI, Anthropic and google-genai SDK clients (no extra: the SDK is the user's own).

This package imports no framework: each module imports its own when it is imported,
and says which extra to install when the framework is missing.
"""

from __future__ import annotations

__all__: list[str] = []
