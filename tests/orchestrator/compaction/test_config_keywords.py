"""`GuardConfig(...)` and `TriggerConfig(...)`: typed keywords, kept in step with the fields."""

from __future__ import annotations

import pytest
from pydantic import BaseModel

from context_graph._keywords import accepted_keywords
from context_graph.errors import ConfigurationError
from orchestrator.compaction.guards import GuardConfig, GuardFields
from orchestrator.compaction.trigger_config import TriggerConfig, TriggerFields

CONFIGS: list[tuple[type[BaseModel], type]] = [
    (GuardConfig, GuardFields),
    (TriggerConfig, TriggerFields),
]


class TestConfigKeywords:
    @pytest.mark.parametrize(("model", "fields"), CONFIGS, ids=lambda v: v.__name__)
    def test_the_keywords_are_the_fields(self, model: type[BaseModel], fields: type) -> None:
        """The `TypedDict` of a config lists exactly the model's fields."""
        assert accepted_keywords(fields) == set(model.model_fields)

    @pytest.mark.parametrize(("model", "fields"), CONFIGS, ids=lambda v: v.__name__)
    def test_a_misspelled_keyword_is_a_type_error(
        self, model: type[BaseModel], fields: type
    ) -> None:
        """`hard_ration=` raises a `TypeError` naming it and every accepted keyword."""
        with pytest.raises(TypeError) as caught:
            model(hard_ration=0.9)
        message = str(caught.value)
        assert f"{model.__name__}() got an unexpected keyword argument 'hard_ration'" in message
        assert ", ".join(sorted(model.model_fields)) in message

    def test_a_bad_value_is_still_a_configuration_error(self) -> None:
        """A known keyword with a wrong value keeps its `ConfigurationError`, naming the field."""
        with pytest.raises(ConfigurationError, match="`stall_runs`"):
            GuardConfig(stall_runs=0)
        with pytest.raises(ConfigurationError, match=r"soft_ratio 0\.9 must be below hard_ratio"):
            TriggerConfig(soft_ratio=0.9, hard_ratio=0.8)

    def test_the_keywords_reach_the_fields(self) -> None:
        """Keywords given are the config's values, as before."""
        assert GuardConfig(floor_tokens=0, cost_aware=True).floor_tokens == 0
        assert TriggerConfig(soft_ratio=None, hard_ratio=0.95).hard_ratio == 0.95
