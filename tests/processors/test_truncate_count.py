"""The seam-aware counting of truncation candidates gives exactly the generic results."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from context_graph.testing import WordCounter
from context_graph.tokens.counting import TiktokenCounter
from processors.pieces import Counted, PieceCounter
from processors.truncate import POLICIES, truncate_text
from processors.truncate.count import Blocks

COUNTER = TiktokenCounter()
COUNT = COUNTER.count

# Line pieces that tokenize across line ends, across unit cuts and across markers:
# indentation, blank and whitespace-only lines, CRLF, Unicode spaces, contractions, digit
# runs, combining marks, emoji with joiners, CJK, error words, a marker look-alike.
_WORDS = st.sampled_from(
    ["word", "x", "'s", "'ll", "1234567", "3.14", "é", "e\u0301", "👩\u200d💻", "日本語",
     "\u00a0", "\u3000", "\x85", "\x1c", ":", "{}", "]", "[", "error:", "Traceback", "/a/b.py",
     " ", "  ", "\t", "\r", "[... 2 lines / 9 tokens omitted ...]", "=" * 40]
)  # fmt: skip
_LINE = st.lists(_WORDS, max_size=12).map("".join)
_LONG_LINE = st.lists(_WORDS, min_size=80, max_size=400).map(" ".join)
_TEXT = st.lists(st.one_of(_LINE, _LINE, _LINE, _LONG_LINE), max_size=120).map(
    lambda lines: "\n".join(lines)
)


class TestPieceCounter:
    @given(pieces=st.lists(st.one_of(_LINE, _LINE.map(lambda line: line + "\n")), max_size=30))
    def test_pieces_count_as_their_joined_text(self, pieces: list[str]) -> None:
        """With seams, the count of the pieces is the count of their joined text."""
        counter = PieceCounter(COUNT, COUNTER.is_seam)
        assert counter.count(pieces) == COUNT("".join(pieces))
        assert counter.count(pieces) == COUNT("".join(pieces))  # from its cache

    @given(pieces=st.lists(_LINE.map(lambda line: line + "\n"), max_size=20), cut=st.integers(0))
    def test_a_counted_piece_is_used_only_between_seams(self, pieces: list[str], cut: int) -> None:
        """A piece with a known count stands for its text; where no seam bounds it, it is joined."""
        counter = PieceCounter(COUNT, COUNTER.is_seam)
        middle = "".join(pieces[: cut % (len(pieces) + 1)])
        items: list[str | Counted] = ["head", Counted(middle, COUNT(middle)), "tail\n", "  x"]
        assert counter.count(items) == COUNT("head" + middle + "tail\n  x")

    def test_without_seams_the_joined_text_is_counted(self) -> None:
        """A counter without seams counts the whole joined text, once per distinct text."""
        calls: list[str] = []

        def count(text: str) -> int:
            calls.append(text)
            return WordCounter().count(text)

        counter = PieceCounter(count, None)
        assert counter.count(["one two\n", Counted("three\n", 1), "four"]) == 4
        assert counter.count(["one two\n", "three\n", "four"]) == 4
        assert calls == ["one two\nthree\nfour"]


class TestBlocks:
    @given(
        lines=st.lists(_LINE.map(lambda line: line + "\n"), min_size=1, max_size=40),
        queries=st.lists(st.tuples(st.integers(0), st.integers(0)), max_size=12),
        total_known=st.booleans(),
    )
    def test_runs_of_blocks_count_as_their_text(
        self, lines: list[str], queries: list[tuple[int, int]], total_known: bool
    ) -> None:
        """Any run of blocks cut at seams counts as its text, whichever runs came before."""
        text = "".join(lines)
        cuts = [0]
        for index in range(1, len(lines)):
            if COUNTER.is_seam(lines[index - 1], lines[index]):
                cuts.append(len("".join(lines[:index])))
        edges = [*cuts, len(text)]
        blocks = Blocks(text, edges, COUNT, COUNT(text) if total_known else None)
        for a, b in queries:
            low, high = sorted((a % len(edges), b % len(edges)))
            assert blocks.tokens(low, high) == COUNT(text[edges[low] : edges[high]])


class TestSameCutsAsTheGenericSearch:
    @settings(max_examples=80, deadline=None)
    @given(
        text=_TEXT,
        max_tokens=st.integers(32, 400),
        policy=st.sampled_from(POLICIES),
        max_bytes=st.one_of(st.none(), st.integers(128, 3_000)),
    )
    def test_seams_change_nothing(
        self, text: str, max_tokens: int, policy: str, max_bytes: int | None
    ) -> None:
        """Counting by pieces picks the very cut the generic search picks, within the limit."""
        options = {"max_tokens": max_tokens, "max_bytes": max_bytes, "policy": policy}
        generic = truncate_text(text, count=COUNT, **options)  # type: ignore[arg-type]
        fast = truncate_text(
            text, count=COUNT, seams=COUNTER.is_seam, tokens=COUNT(text), **options
        )  # type: ignore[arg-type]
        assert fast == generic
        if fast is not None:
            assert COUNT(fast.text) <= max_tokens

    @settings(max_examples=30, deadline=None)
    @given(text=_TEXT, max_tokens=st.integers(32, 200))
    def test_markup_and_error_lines_too(self, text: str, max_tokens: int) -> None:
        """Markup units and error-first ordering give the same cut with and without seams."""
        markup = "<root>\n" + text.replace("word", "<b>word</b>") + "\n</root>\n"
        for policy in ("head_tail", "errors_first"):
            generic = truncate_text(markup, count=COUNT, max_tokens=max_tokens, policy=policy)  # type: ignore[arg-type]
            fast = truncate_text(
                markup,
                count=COUNT,
                max_tokens=max_tokens,
                policy=policy,  # type: ignore[arg-type]
                seams=COUNTER.is_seam,
            )
            assert fast == generic
