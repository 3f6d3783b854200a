"""`read_usage`: the providers' usage objects, as their SDKs build them, read into `Usage`."""

from __future__ import annotations

from typing import Any

import pytest
from anthropic.types import MessageDeltaUsage
from anthropic.types import Usage as AnthropicUsage
from google.genai import types as genai
from hypothesis import given, settings
from hypothesis import strategies as st
from openai.types import CompletionUsage
from openai.types.completion_usage import PromptTokensDetails
from openai.types.responses import ResponseUsage
from openai.types.responses.response_usage import InputTokensDetails, OutputTokensDetails

from context_graph.errors import IngestError, SourceLocation
from context_graph.tokens.usage import Usage, UsageShape, UsageTotals, read_usage


class TestReadUsage:
    def test_openai_chat_cached_tokens_are_part_of_the_prompt(self) -> None:
        """`prompt_tokens_details.cached_tokens` is the cached share of `prompt_tokens`."""
        usage = CompletionUsage(
            prompt_tokens=1_200,
            completion_tokens=80,
            total_tokens=1_280,
            prompt_tokens_details=PromptTokensDetails(cached_tokens=1_024, cache_write_tokens=64),
        )
        expected = Usage(
            prompt_tokens=1_200, completion_tokens=80, cached_tokens=1_024, cache_creation_tokens=64
        )
        assert read_usage(usage, "openai") == expected
        assert read_usage(usage.model_dump(), "openai") == expected
        assert expected.total_tokens == usage.total_tokens
        assert expected.cache_hit_rate == pytest.approx(1_024 / 1_200)

    def test_openai_chat_without_details_has_no_cached_tokens(self) -> None:
        """A usage without `prompt_tokens_details` reads with 0 cached tokens."""
        usage = CompletionUsage(prompt_tokens=50, completion_tokens=5, total_tokens=55)
        assert read_usage(usage, "openai") == Usage(prompt_tokens=50, completion_tokens=5)

    def test_responses_usage(self) -> None:
        """`input_tokens_details.cached_tokens` and `.cache_write_tokens` of a Responses usage."""
        usage = ResponseUsage(
            input_tokens=3_000,
            input_tokens_details=InputTokensDetails(cached_tokens=2_048, cache_write_tokens=512),
            output_tokens=100,
            output_tokens_details=OutputTokensDetails(reasoning_tokens=60),
            total_tokens=3_100,
        )
        expected = Usage(
            prompt_tokens=3_000,
            completion_tokens=100,
            cached_tokens=2_048,
            cache_creation_tokens=512,
        )
        assert read_usage(usage, "responses") == expected
        assert read_usage(usage.model_dump(mode="json"), "responses") == expected
        assert expected.total_tokens == usage.total_tokens

    def test_anthropic_prompt_is_input_plus_cache_reads_and_writes(self) -> None:
        """Anthropic's `input_tokens` leaves the cache out; the prompt adds it back."""
        usage = AnthropicUsage(
            input_tokens=20,
            cache_read_input_tokens=4_000,
            cache_creation_input_tokens=300,
            output_tokens=90,
        )
        expected = Usage(
            prompt_tokens=4_320,
            completion_tokens=90,
            cached_tokens=4_000,
            cache_creation_tokens=300,
        )
        assert read_usage(usage, "anthropic") == expected
        assert read_usage(usage.model_dump(), "anthropic") == expected
        bare = AnthropicUsage(input_tokens=20, output_tokens=90)
        assert read_usage(bare, "anthropic") == Usage(prompt_tokens=20, completion_tokens=90)

    def test_anthropic_message_delta_usage(self) -> None:
        """A stream's `message_delta` usage reads the same way (its input counts optional)."""
        delta = MessageDeltaUsage(input_tokens=10, cache_read_input_tokens=30, output_tokens=7)
        expected = Usage(prompt_tokens=40, completion_tokens=7, cached_tokens=30)
        assert read_usage(delta, "anthropic") == expected
        assert read_usage(MessageDeltaUsage(output_tokens=7), "anthropic") is None

    def test_gemini_usage_metadata_in_both_spellings(self) -> None:
        """`cached_content_token_count`, and the thoughts counted as completion."""
        metadata = genai.GenerateContentResponseUsageMetadata(
            prompt_token_count=5_000,
            cached_content_token_count=4_096,
            candidates_token_count=40,
            thoughts_token_count=200,
            total_token_count=5_240,
        )
        expected = Usage(prompt_tokens=5_000, completion_tokens=240, cached_tokens=4_096)
        assert read_usage(metadata, "gemini") == expected
        camel = metadata.model_dump(by_alias=True, exclude_none=True)
        assert "promptTokenCount" in camel
        assert read_usage(camel, "gemini") == expected
        assert expected.total_tokens == metadata.total_token_count

    def test_no_usage_or_no_prompt_count_reads_as_none(self) -> None:
        """No usage, or only output counted: nothing about the call's input to record."""
        assert read_usage(None, "openai") is None
        assert read_usage({"completion_tokens": 5}, "openai") is None
        assert read_usage({"candidatesTokenCount": 5}, "gemini") is None

    @pytest.mark.parametrize(
        ("shape", "usage", "field"),
        [
            ("openai", {"prompt_tokens": -1}, "usage.prompt_tokens"),
            ("openai", {"prompt_tokens": "many"}, "usage.prompt_tokens"),
            ("openai", {"prompt_tokens": True}, "usage.prompt_tokens"),
            ("openai", {"prompt_tokens": 3.5}, "usage.prompt_tokens"),
            ("openai", {"prompt_tokens": 10, "completion_tokens": -2}, "usage.completion_tokens"),
            (
                "openai",
                {"prompt_tokens": 10, "prompt_tokens_details": {"cached_tokens": "x"}},
                "usage.prompt_tokens_details.cached_tokens",
            ),
            (
                "openai",
                {"prompt_tokens": 10, "prompt_tokens_details": []},
                "usage.prompt_tokens_details",
            ),
            (
                "responses",
                {"input_tokens": 10, "input_tokens_details": {"cache_write_tokens": False}},
                "usage.input_tokens_details.cache_write_tokens",
            ),
            (
                "anthropic",
                {"input_tokens": 1, "cache_read_input_tokens": -5},
                "usage.cache_read_input_tokens",
            ),
            ("gemini", {"promptTokenCount": "12"}, "usage.promptTokenCount"),
        ],
    )
    def test_a_malformed_count_is_an_ingest_error_naming_it(
        self, shape: UsageShape, usage: dict[str, Any], field: str
    ) -> None:
        """Negative, non-int or misshapen counts are refused, with the field's path."""
        with pytest.raises(IngestError) as raised:
            read_usage(usage, shape, where=SourceLocation(path="usage"))
        assert raised.value.location.path == field
        assert str(raised.value).startswith(f"{field}: ")

    @pytest.mark.parametrize(
        ("shape", "usage"),
        [
            ("openai", {"prompt_tokens": 10, "prompt_tokens_details": {"cached_tokens": 11}}),
            (
                "responses",
                {
                    "input_tokens": 10,
                    "input_tokens_details": {"cached_tokens": 6, "cache_write_tokens": 5},
                },
            ),
            ("gemini", {"prompt_token_count": 10, "cached_content_token_count": 11}),
        ],
    )
    def test_cached_beyond_the_prompt_is_refused(
        self, shape: UsageShape, usage: dict[str, Any]
    ) -> None:
        """Cached tokens above the prompt would make a hit rate above 1: refused."""
        with pytest.raises(IngestError, match="does not add up"):
            read_usage(usage, shape)

    def test_something_not_an_object_is_refused(self) -> None:
        """A usage that is neither an SDK object nor a dict: an error naming its type."""
        with pytest.raises(IngestError, match="got int"):
            read_usage(5, "anthropic")


_COUNTS = st.integers(min_value=0, max_value=10**9)
_ANY_COUNT = st.one_of(
    _COUNTS,
    st.integers(max_value=-1),
    st.booleans(),
    st.floats(allow_nan=False),
    st.text(max_size=3),
    st.none(),
)


def _is_count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


class TestProperties:
    @settings(max_examples=200, deadline=None)
    @given(
        shape=st.sampled_from(["openai", "responses", "anthropic", "gemini"]),
        values=st.tuples(_ANY_COUNT, _ANY_COUNT, _ANY_COUNT, _ANY_COUNT),
    )
    def test_a_read_usage_has_its_cache_within_its_prompt(
        self, shape: UsageShape, values: tuple[Any, ...]
    ) -> None:
        """Any counts read as their sum, as `None` without a prompt, or are refused whole."""
        prompt, completion, cached, written = values
        usage = {
            "openai": {
                "prompt_tokens": prompt,
                "completion_tokens": completion,
                "prompt_tokens_details": {"cached_tokens": cached, "cache_write_tokens": written},
            },
            "responses": {
                "input_tokens": prompt,
                "output_tokens": completion,
                "input_tokens_details": {"cached_tokens": cached, "cache_write_tokens": written},
            },
            "anthropic": {
                "input_tokens": prompt,
                "output_tokens": completion,
                "cache_read_input_tokens": cached,
                "cache_creation_input_tokens": written,
            },
            "gemini": {
                "promptTokenCount": prompt,
                "candidatesTokenCount": completion,
                "cachedContentTokenCount": cached,
            },
        }[shape]
        present = values[:3] if shape == "gemini" else values  # Gemini writes no cache
        if any(v is not None and not _is_count(v) for v in present):
            with pytest.raises(IngestError):
                read_usage(usage, shape)
            return
        if prompt is None:
            assert read_usage(usage, shape) is None
            return
        cached, written = cached or 0, 0 if shape == "gemini" else written or 0
        if shape != "anthropic" and cached + written > prompt:
            with pytest.raises(IngestError, match="does not add up"):
                read_usage(usage, shape)
            return
        read = read_usage(usage, shape)
        assert read is not None
        whole = prompt + cached + written if shape == "anthropic" else prompt
        assert read == Usage(
            prompt_tokens=whole,
            completion_tokens=completion or 0,
            cached_tokens=cached,
            cache_creation_tokens=written,
        )
        rate = read.cache_hit_rate
        assert rate is None or 0.0 <= rate <= 1.0

    @settings(max_examples=60, deadline=None)
    @given(st.lists(st.tuples(_COUNTS, _COUNTS, _COUNTS, _COUNTS), max_size=12))
    def test_totals_are_the_sums_and_the_rate_stays_within_0_and_1(
        self, calls: list[tuple[int, int, int, int]]
    ) -> None:
        """Adding calls sums every count; the hit rate is cached over prompt, in [0, 1]."""
        totals = UsageTotals()
        usages = []
        for prompt, completion, cached, written in calls:
            cached = min(cached, prompt)
            usage = Usage(
                prompt_tokens=prompt,
                completion_tokens=completion,
                cached_tokens=cached,
                cache_creation_tokens=min(written, prompt - cached),
            )
            usages.append(usage)
            totals = totals.add(usage)
        assert totals.calls == len(usages)
        assert totals.prompt_tokens == sum(u.prompt_tokens for u in usages)
        assert totals.completion_tokens == sum(u.completion_tokens for u in usages)
        assert totals.cached_tokens == sum(u.cached_tokens for u in usages)
        assert totals.cache_creation_tokens == sum(u.cache_creation_tokens for u in usages)
        assert totals.total_tokens == sum(u.total_tokens for u in usages)
        rate = totals.cache_hit_rate
        if totals.prompt_tokens == 0:
            assert rate is None
        else:
            assert rate is not None
            assert 0.0 <= rate <= 1.0


class TestUsage:
    @pytest.mark.parametrize(
        "bad",
        [{"prompt_tokens": -1}, {"prompt_tokens": True}, {"prompt_tokens": 5, "cached_tokens": 6}],
    )
    def test_a_usage_is_checked_when_made(self, bad: dict[str, Any]) -> None:
        """A negative count, a bool or cached tokens beyond the prompt is a ValueError."""
        with pytest.raises(ValueError, match=r"prompt|cached|integer"):
            Usage(**bad)

    def test_no_prompt_no_rate(self) -> None:
        """A usage without input has no hit rate (not a division by zero)."""
        assert Usage(completion_tokens=3).cache_hit_rate is None
        assert UsageTotals().cache_hit_rate is None
