"""`NodeTokenCache.count_pieces`: the count of joined pieces, exact, from cached runs.

And its users: the truncator's cut and the extractive brief are counted from the pieces
their searches counted through the cache, so that counting them whole again is a hit.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from context_graph.graph.content import TextPart
from context_graph.graph.node_tokens import NodeTokenCache
from context_graph.graph.nodes import AssistantNode, UserNode
from context_graph.testing import WordCounter
from context_graph.tokens.counting import TiktokenCounter
from processors.summarize.extractive import ExtractiveSummarizer
from processors.truncate import truncate_text

COUNTER = TiktokenCounter()


class RecordingCounter:
    """The tiktoken counter, seams included, recording every text it encodes."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    @property
    def name(self) -> str:
        return COUNTER.name

    def count(self, text: str) -> int:
        self.seen.append(text)
        return COUNTER.count(text)

    def is_seam(self, left: str, right: str) -> bool:
        return COUNTER.is_seam(left, right)


# Pieces that often meet at seams (a line's end, then a line with a visible start) and
# often do not (words, spaces, digits and newlines that merge across the junction).
_PIECES = st.lists(
    st.one_of(
        st.text(max_size=12),
        st.sampled_from(
            ["", "\n", "a", "b\n", "  x\n", "\tdef f():\n", "12", "34\n", " ", "  ", "'s", "\n\n"]
        ),
        st.builds(lambda text: text + "\n", st.text(max_size=12)),
    ),
    max_size=12,
)


class TestCountPieces:
    @given(pieces=_PIECES, warm=st.lists(st.booleans(), max_size=12))
    def test_exact_whatever_was_counted_before(self, pieces: list[str], warm: list[bool]) -> None:
        """The count is the joined text's, whichever pieces the cache knew before."""
        cache = NodeTokenCache(RecordingCounter())
        for piece, counted in zip(pieces, warm, strict=False):
            if counted:
                cache.count_text(piece)
        text = "".join(pieces)
        assert cache.count_pieces(pieces) == COUNTER.count(text)
        assert cache.count_pieces(pieces) == COUNTER.count(text)  # from the cache too
        assert cache.count_text(text) == COUNTER.count(text)

    @given(pieces=_PIECES)
    def test_remembers_the_joined_text(self, pieces: list[str]) -> None:
        """Counting the joined text afterwards encodes nothing."""
        counter = RecordingCounter()
        cache = NodeTokenCache(counter)
        expected = COUNTER.count("".join(pieces))
        assert cache.count_pieces(pieces) == expected
        counter.seen.clear()
        assert cache.count_text("".join(pieces)) == expected
        assert counter.seen == []

    @given(lines=st.lists(st.text(min_size=1, max_size=20), min_size=2, max_size=10))
    def test_lines_counted_before_are_added_up(self, lines: list[str]) -> None:
        """Lines that start with a visible character, each counted once, are not encoded again."""
        pieces = [f"x{line}\n".replace("\r", "") for line in lines]
        counter = RecordingCounter()
        cache = NodeTokenCache(counter)
        for piece in pieces:
            cache.count_text(piece)
        counter.seen.clear()
        assert cache.count_pieces(pieces) == COUNTER.count("".join(pieces))
        assert counter.seen == []

    def test_not_a_seam_is_counted_whole(self) -> None:
        """Pieces that merge across their junction are not added up."""
        counter = RecordingCounter()
        cache = NodeTokenCache(counter)
        cache.count_text("hello")
        cache.count_text("world")
        assert cache.count_pieces(["hello", "world"]) == COUNTER.count("helloworld")
        assert counter.seen[-1] == "helloworld"

    @given(pieces=_PIECES)
    def test_without_seams_counts_the_joined_text(self, pieces: list[str]) -> None:
        """A counter that proves no seams has the joined text counted whole."""
        counter = WordCounter()
        cache = NodeTokenCache(counter)
        assert cache.count_pieces(pieces) == counter.count("".join(pieces))

    def test_counts_like(self) -> None:
        """Only the same counter, or tiktoken counters of one encoding, count alike."""
        cache = NodeTokenCache(COUNTER)
        assert cache.counts_like(COUNTER)
        assert cache.counts_like(TiktokenCounter("cl100k_base"))
        assert not cache.counts_like(WordCounter())
        assert not cache.counts_like(RecordingCounter())
        assert not NodeTokenCache(WordCounter()).counts_like(COUNTER)


_LINE = st.one_of(
    st.sampled_from(["", "  indented", "error: boom", "ok", "12345", "\t- item", "<b>x</b>"]),
    st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=30),
)


class TestTruncatorPieces:
    @settings(max_examples=60, deadline=None)
    @given(
        lines=st.lists(_LINE, min_size=5, max_size=120),
        max_tokens=st.integers(32, 200),
        policy=st.sampled_from(["head", "tail", "head_tail", "errors_first"]),
    )
    def test_cut_joins_and_counts_exactly(
        self, lines: list[str], max_tokens: int, policy: str
    ) -> None:
        """The cut's pieces join to its text, and the cache counts them as the text."""
        text = "\n".join(lines) + "\n"
        cache = NodeTokenCache(COUNTER)
        plain = truncate_text(
            text,
            count=COUNTER.count,
            max_tokens=max_tokens,
            policy=policy,  # type: ignore[arg-type]
            seams=COUNTER.is_seam,
        )
        cut = truncate_text(
            text,
            count=COUNTER.count,
            max_tokens=max_tokens,
            policy=policy,  # type: ignore[arg-type]
            seams=COUNTER.is_seam,
            piece_count=cache.count_text,
        )
        assert cut == plain
        if cut is not None and cut.format != "json":
            assert "".join(cut.pieces) == cut.text
            assert cache.count_pieces(cut.pieces) == COUNTER.count(cut.text)

    def test_cut_is_mostly_known_to_the_cache(self) -> None:
        """Counting a long cut from its pieces encodes only a little of it."""
        text = "".join(f"line {index}: some output here\n" for index in range(2_000))
        counter = RecordingCounter()
        cache = NodeTokenCache(counter)
        cut = truncate_text(
            text,
            count=counter.count,
            max_tokens=300,
            seams=counter.is_seam,
            piece_count=cache.count_text,
        )
        assert cut is not None
        counter.seen.clear()
        assert cache.count_pieces(cut.pieces) == COUNTER.count(cut.text)
        assert sum(map(len, counter.seen)) < len(cut.text) // 4


class TestBriefPieces:
    @settings(max_examples=20, deadline=None)
    @given(
        words=st.lists(
            st.sampled_from(["alpha", "beta\n", "src/app.py", "fix", "Error"]), max_size=60
        ),
        max_tokens=st.integers(64, 400),
    )
    def test_same_brief_and_its_count_is_a_hit(self, words: list[str], max_tokens: int) -> None:
        """With the caller's cache the brief is the same, and counting it encodes nothing."""
        nodes = [
            UserNode(id="u1", content=(TextPart(text="Please " + " ".join(words)),)),
            AssistantNode(id="a1", content=(TextPart(text=" ".join(reversed(words)) + "."),)),
        ]
        summarizer = ExtractiveSummarizer(max_tokens=max_tokens)
        plain = summarizer.brief(nodes)
        counter = RecordingCounter()
        cache = NodeTokenCache(counter)
        unshared = summarizer.brief(nodes, tokens=cache)  # counters differ: not shared
        assert unshared == plain
        shared_cache = NodeTokenCache(TiktokenCounter())
        shared = summarizer.brief(nodes, tokens=shared_cache)
        assert shared == plain
        before = len(shared_cache)
        assert shared_cache.count_text(shared) == COUNTER.count(shared)
        assert len(shared_cache) == before  # already known: nothing encoded
