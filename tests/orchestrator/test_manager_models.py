"""`ContextManager(model=...)`: the budget a model sets, and the warnings when there is none."""

from __future__ import annotations

import uuid
import warnings
from typing import Any

import pytest

from context_graph import models
from context_graph.errors import ConfigurationError
from context_graph.models import UNKNOWN_MODEL_BUDGET, NoBudgetWarning, UnknownModelWarning
from orchestrator import ContextManager
from orchestrator.policy import Policy


@pytest.fixture(autouse=True, name="fresh_warnings")
def fixture_fresh_warnings(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test starts with nothing warned about yet in this process."""
    monkeypatch.setattr(models, "_warned", set())


class TestModelBudget:
    def test_a_known_model_sets_the_budget(self) -> None:
        """The budget is the model's window less its output reservation."""
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            manager = ContextManager(
                format="anthropic", model="claude-haiku-4-5-20251001", policy=Policy()
            )
            manager.add_user("hi")
            result = manager.render_sync()
        assert (manager.budget, result.budget) == (180_000, 180_000)

    def test_an_explicit_budget_wins(self) -> None:
        """`budget=` is kept when a model is given too."""
        assert ContextManager(model="gpt-5", budget=5_000, policy=Policy()).budget == 5_000

    def test_an_unknown_model_gets_the_default_and_one_warning(self) -> None:
        """An unknown model: the safe default budget, and one warning per model name."""
        name = f"in-house-{uuid.uuid4().hex}"
        with pytest.warns(UnknownModelWarning, match=name):
            manager = ContextManager(model=name, policy=Policy())
        assert manager.budget == UNKNOWN_MODEL_BUDGET
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert ContextManager(model=name, policy=Policy()).budget == UNKNOWN_MODEL_BUDGET

    @pytest.mark.parametrize("model", ["", "  ", 5, ["gpt-5"]])
    def test_a_bad_model_is_refused(self, model: Any) -> None:
        """A model that is not a non-empty string is a configuration error."""
        with pytest.raises(ConfigurationError, match="`model`"):
            ContextManager(model=model, policy=Policy())

    def test_the_call_model_sets_a_budget_the_manager_lacks(self) -> None:
        """`render(model=...)` budgets by the model when neither call nor manager has one."""
        manager = ContextManager(policy=Policy())
        manager.add_user("hi")
        assert manager.render_sync(model="models/gemini-2.5-pro").budget == 1_028_576
        assert ContextManager(budget=900, policy=Policy()).render_sync(model="gpt-5").budget == 900


class TestNoBudget:
    def test_a_render_without_budget_or_model_warns_once(self) -> None:
        """No budget and no model: the first render says nothing will be cut to fit."""
        manager = ContextManager(policy=Policy())
        manager.add_user("hi")
        with pytest.warns(NoBudgetWarning, match="no budget and no model"):
            assert manager.render_sync().budget is None
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            ContextManager(policy=Policy()).render_sync()

    async def test_the_async_render_warns_too(self) -> None:
        """`await render()` with no budget at all warns the same way."""
        with pytest.warns(NoBudgetWarning):
            await ContextManager(policy=Policy()).render()
