"""Framework integrations, each an optional extra in its own module.

- `orchestrator.integrations.langchain`: `ContextMiddleware`, a LangChain v1 / LangGraph
  `AgentMiddleware` (the `langchain` extra).
- `orchestrator.integrations.pydantic_ai`: `ContextHistory`, a pydantic-ai history
  processor (the `pydantic-ai` extra).

This package imports no framework: each module imports its own when it is imported,
and says which extra to install when the framework is missing.
"""

from __future__ import annotations

__all__: list[str] = []
