"""What each format's `Wire` tells the generic code of its bodies and usage objects."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from context_graph.formats.wires import FORMAT_NAMES, WIRES

# Keys the four providers' usage objects (and Codex CLI's running totals) are told by.
_USAGE_KEYS = (
    "prompt_tokens",
    "completion_tokens",
    "prompt_token_count",
    "promptTokenCount",
    "input_tokens",
    "input_tokens_details",
    "cached_input_tokens",
    "output_tokens",
    "cache_read_input_tokens",
)


def _first_claim(usage: Mapping[str, Any]) -> str | None:
    """The documented precedence: chat's prompt, Gemini's, Responses' details, Anthropic."""
    if "prompt_tokens" in usage:
        return "openai"
    if "promptTokenCount" in usage or "prompt_token_count" in usage:
        return "gemini"
    if "input_tokens_details" in usage:
        return "responses"
    if "input_tokens" in usage and "cached_input_tokens" not in usage:
        return "anthropic"
    return None


class TestOwnsUsage:
    @given(st.sets(st.sampled_from(_USAGE_KEYS)))
    def test_at_most_one_format_claims_a_usage_object(self, keys: set[str]) -> None:
        """The claims are exclusive, so no order of asking decides whose a usage is."""
        usage = dict.fromkeys(keys, 1)
        claims = [name for name, wire in WIRES.items() if wire.owns_usage(usage)]
        assert claims == ([] if _first_claim(usage) is None else [_first_claim(usage)])

    @pytest.mark.parametrize(
        ("usage", "owner"),
        [
            ({"prompt_tokens": 1, "completion_tokens": 2}, "openai"),
            ({"input_tokens": 1, "cache_read_input_tokens": 9}, "anthropic"),
            ({"prompt_token_count": 1}, "gemini"),
            ({"input_tokens": 1, "input_tokens_details": {"cached_tokens": 0}}, "responses"),
        ],
    )
    def test_each_provider_claims_its_own(self, usage: dict[str, Any], owner: str) -> None:
        """A provider's usage object as its SDK returns it is claimed by its format."""
        assert [name for name, wire in WIRES.items() if wire.owns_usage(usage)] == [owner]


class TestBodies:
    @pytest.mark.parametrize("name", FORMAT_NAMES)
    def test_a_system_body_holds_an_empty_conversation(self, name: str) -> None:
        """The system-only body keeps the conversation under the format's history key, empty."""
        wire = WIRES[name]
        assert wire.system_body("Be brief.")[wire.history_key] in ([], [_system("Be brief.")])

    @given(st.sampled_from(FORMAT_NAMES), st.text(min_size=1))
    def test_a_system_body_reads_back_as_one_system_message(self, name: str, text: str) -> None:
        """Every format's reader finds the prompt its own system body holds, and nothing else."""
        wire = WIRES[name]
        assert wire.as_chat(wire.system_body(text), lambda sent: sent) == [_system(text)]


def _system(text: str) -> dict[str, Any]:
    return {"role": "system", "content": text}
