"""`context_graph.models`: the limits table, its lookup and the unknown-model warning."""

from __future__ import annotations

import uuid
import warnings

import pytest

from context_graph import models
from context_graph.models import (
    MODEL_LIMITS,
    OUTPUT_RESERVE_CAP,
    UNKNOWN_MODEL_BUDGET,
    UnknownModelWarning,
    model_budget,
    model_limits,
)


@pytest.fixture(autouse=True, name="fresh_warnings")
def fixture_fresh_warnings(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test starts with no model warned about yet in this process."""
    monkeypatch.setattr(models, "_warned", set())


class TestLookup:
    @pytest.mark.parametrize(
        ("name", "model"),
        [
            ("claude-haiku-4-5", "claude-haiku-4-5"),
            ("claude-haiku-4-5-20251001", "claude-haiku-4-5"),
            ("CLAUDE-OPUS-5", "claude-opus-5"),
            ("anthropic/claude-sonnet-5", "claude-sonnet-5"),
            ("anthropic.claude-haiku-4-5-20251001-v1:0", "claude-haiku-4-5"),
            ("us.anthropic.claude-haiku-4-5-20251001-v1:0", "claude-haiku-4-5"),
            ("global.anthropic.claude-opus-5", "claude-opus-5"),
            ("claude-haiku-4-5@20251001", "claude-haiku-4-5"),
            ("gpt-5", "gpt-5"),
            ("gpt-5-2025-08-07", "gpt-5"),
            ("openai/gpt-5", "gpt-5"),
            ("models/gemini-2.5-pro", "gemini-2.5-pro"),
            ("publishers/google/models/gemini-2.5-pro", "gemini-2.5-pro"),
            ("gemini-2.5-pro-001", "gemini-2.5-pro"),
            ("claude-haiku-5-5", "claude-haiku-5-5"),
        ],
    )
    def test_ids_aliases_and_prefixes(self, name: str, model: str) -> None:
        """An id, a snapshot of it, or it behind a platform prefix finds the model."""
        found = model_limits(name)
        assert found is not None
        assert found.model == model

    @pytest.mark.parametrize(
        "name", ["gpt-5-mini", "gpt-5.9", "claude-opus-4", "gemini-2.5", "m", "", None, 5]
    )
    def test_unknown_is_none(self, name: object) -> None:
        """A model the table lacks, another of the same family, or no string: None."""
        assert model_limits(name) is None

    def test_every_entry_names_its_source(self) -> None:
        """Every figure comes with the page it was taken from."""
        assert all(limits.source.startswith("https://") for limits in MODEL_LIMITS.values())


class TestUsable:
    def test_window_less_the_capped_output(self) -> None:
        """The usable window is the window less min(max output, the cap)."""
        haiku = MODEL_LIMITS["claude-haiku-4-5"]
        assert haiku.usable == 200_000 - OUTPUT_RESERVE_CAP == 180_000
        assert MODEL_LIMITS["gemini-2.5-pro"].usable == 1_048_576 - 20_000

    def test_known_model_budget_does_not_warn(self) -> None:
        """A known model's budget is its usable window, without a warning."""
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert model_budget("models/gemini-2.5-pro") == 1_028_576


class TestUnknownModel:
    def test_default_budget_and_one_warning(self) -> None:
        """An unknown model gets the default budget and one warning per process."""
        name = f"made-up-{uuid.uuid4().hex}"
        with pytest.warns(UnknownModelWarning, match=name):
            assert model_budget(name) == UNKNOWN_MODEL_BUDGET
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert model_budget(name) == UNKNOWN_MODEL_BUDGET
        with pytest.warns(UnknownModelWarning, match="other"):
            model_budget(f"other-{name}")
