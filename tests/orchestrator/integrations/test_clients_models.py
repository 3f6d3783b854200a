"""A wrapped client's request model sets the budget of a manager that has none."""

from __future__ import annotations

from typing import Any

import openai

from orchestrator import ContextManager
from orchestrator.policy import Policy


def _budgets(manager: ContextManager) -> list[int | None]:
    seen: list[int | None] = []
    manager.bus.connect("render_done", lambda sender, **kw: seen.append(kw["budget"]))
    return seen


class TestWrappedClient:
    def test_the_requests_model_sets_the_budget(self, provider_server: Any) -> None:
        """A wrapped client's call renders under its model's window when the manager has none."""
        server = provider_server("openai")
        manager = ContextManager(format="openai", policy=Policy())
        budgets = _budgets(manager)
        client = manager.wrap(
            openai.OpenAI(base_url=f"{server.url}/v1", api_key="test", max_retries=0)
        )
        hi: list[Any] = [{"role": "user", "content": "hi"}]
        client.chat.completions.create(model="gpt-5-2025-08-07", messages=hi)
        assert budgets == [400_000 - 20_000]

    def test_the_managers_budget_is_kept(self, provider_server: Any) -> None:
        """A manager with a budget of its own keeps it whatever the call's model."""
        server = provider_server("openai")
        manager = ContextManager(format="openai", budget=7_000, policy=Policy())
        budgets = _budgets(manager)
        client = manager.wrap(
            openai.OpenAI(base_url=f"{server.url}/v1", api_key="test", max_retries=0)
        )
        client.chat.completions.create(model="gpt-5", messages=[{"role": "user", "content": "hi"}])
        assert budgets == [7_000]
