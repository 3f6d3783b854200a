"""The counting shortcuts of the processors give what `counter.count` gives for the same text."""

from __future__ import annotations

from itertools import pairwise

from hypothesis import given, settings
from hypothesis import strategies as st

from context_graph.tokens.counting import TiktokenCounter
from processors.pieces import Deferred, PieceCounter
from processors.truncate.count import Blocks
from processors.truncate.fit import Budget, Layout
from processors.truncate.units import split_units

COUNTER = TiktokenCounter()
COUNT = COUNTER.count

# Line pieces that tokenize across line ends: indentation, blank and whitespace-only
# lines, CRLF, Unicode spaces, contractions, digit runs, combining marks, joiners, CJK.
_WORDS = st.sampled_from(
    ["word", "x", "'s", "1234567", "3.14", "e\u0301", "👩\u200d💻", "日本語", "\u00a0",
     "\u3000", ":", "{}", "[", "error:", "/a/b.py", " ", "  ", "\t", "\r", "=" * 20]
)  # fmt: skip
_LINE = st.lists(_WORDS, max_size=10).map("".join)
_LINES = st.lists(_LINE.map(lambda line: line + "\n"), min_size=1, max_size=30)
_TEXT = st.lists(_LINE, min_size=1, max_size=80).map("\n".join)
_WAYS = st.sampled_from(["tokens", "pending", "block"])


class _Parts:
    """A deferred piece made of lines, `known` of them counted up front."""

    def __init__(self, parts: list[str], known: int) -> None:
        self.text = "".join(parts)
        self._parts = parts
        self._known = min(known, len(parts))
        self._next = self._known

    def tokens(self) -> int:
        return COUNT(self.text)

    def lower(self) -> int:
        self._next = self._known
        return COUNT("".join(self._parts[: self._known]))

    def more(self) -> int | None:
        if self._next == len(self._parts):
            return None
        self._next += 1
        return COUNT(self._parts[self._next - 1])


def _cut_at_seams(lines: list[str]) -> list[str]:
    """`lines` joined into runs that meet at seams (no seam inside a run is needed)."""
    runs = [lines[0]]
    for previous, line in pairwise(lines):
        if COUNTER.is_seam(previous, line):
            runs.append(line)
        else:
            runs[-1] += line
    return runs


class TestDeferredPieces:
    @given(
        head=_LINE,
        lines=_LINES,
        tail=_LINE,
        known=st.integers(0, 30),
        seen=st.booleans(),
        slack=st.one_of(st.none(), st.integers(-3, 3)),
    )
    def test_a_total_within_a_limit_is_exact_and_one_above_it_is_a_lower_bound(
        self,
        head: str,
        lines: list[str],
        tail: str,
        known: int,
        seen: bool,
        slack: int | None,
    ) -> None:
        """Exact when within `limit` (or no limit); otherwise above `limit` and at most exact."""
        parts = _cut_at_seams(lines)
        counter = PieceCounter(COUNT, COUNTER.is_seam)
        if seen:  # some runs are known before, and are added up first
            counter.count([head, "\n"])
        text = head + "\n" + "".join(parts) + tail
        exact = COUNT(text)
        limit = None if slack is None else max(0, exact + slack)  # near it, off-by-ones show
        tokens = counter.count([head, "\n", _Parts(parts, known), tail], limit)
        if limit is None or exact <= limit:
            assert tokens == exact
        else:
            assert limit < tokens <= exact

    def test_a_total_right_at_the_limit_is_counted_to_the_end(self) -> None:
        """Known runs, new runs and deferred parts that reach the limit exactly are all counted."""
        counter = PieceCounter(COUNT, COUNTER.is_seam)
        counter.count(["known line\n"])
        parts = ["first part\n", "second part\n"]
        pieces: list[str | Deferred] = ["known line\n", _Parts(parts, 1), "new line\n"]
        exact = COUNT("known line\nfirst part\nsecond part\nnew line\n")
        assert counter.count(pieces, exact) == exact
        for limit in (COUNT("known line\n"), COUNT("known line\nfirst part\nnew line\n")):
            assert limit < counter.count(pieces, limit) <= exact

    @given(lines=_LINES, known=st.integers(0, 30))
    def test_a_deferred_piece_not_between_seams_counts_as_text(
        self, lines: list[str], known: int
    ) -> None:
        """Joined with a neighbour it is no seam with, its text is counted with that neighbour."""
        parts = _cut_at_seams(lines)
        counter = PieceCounter(COUNT, COUNTER.is_seam)
        text = "  x" + "".join(parts) + "  y"
        assert counter.count(["  x", _Parts(parts, known), "  y"], 10**6) == COUNT(text)


class TestBlocksCountedOneByOne:
    @given(
        lines=_LINES,
        queries=st.lists(st.tuples(_WAYS, st.integers(0), st.integers(0)), max_size=12),
        total_known=st.booleans(),
    )
    def test_every_way_to_a_run_gives_its_text_count(
        self, lines: list[str], queries: list[tuple[str, int, int]], total_known: bool
    ) -> None:
        """Whole runs, one block at a time, or by subtraction: each run counts as its text."""
        text = "".join(lines)
        edges = [0]
        for run in _cut_at_seams(lines):
            edges.append(edges[-1] + len(run))
        blocks = Blocks(text, edges, COUNT, COUNT(text) if total_known else None)
        for kind, a, b in queries:
            low, high = sorted((a % len(edges), b % len(edges)))
            expected = COUNT(text[edges[low] : edges[high]])
            if kind == "tokens":
                assert blocks.tokens(low, high) == expected
            elif kind == "block" and low < blocks.size:
                assert blocks.block(low) == COUNT(text[edges[low] : edges[low + 1]])
            elif kind == "pending":
                pending = blocks.pending(low, high)
                if pending is None:
                    assert blocks.subtracted(low, high) == expected
                else:
                    later = sum(blocks.block(block) for block in pending)
                    assert blocks.known(low, high) == expected
                    assert later <= expected


class TestLayoutFitsWithinALimit:
    @settings(max_examples=80, deadline=None)
    @given(
        text=_TEXT,
        kept_sets=st.lists(st.sets(st.integers(0, 200)), min_size=1, max_size=6),
        slack=st.lists(st.integers(-2, 2), min_size=1, max_size=3),
        max_bytes=st.one_of(st.none(), st.integers(0, 400)),
        exact=st.booleans(),
    )
    def test_fits_answers_as_the_budget_does_for_the_rendered_text(
        self,
        text: str,
        kept_sets: list[set[int]],
        slack: list[int],
        max_bytes: int | None,
        exact: bool,
    ) -> None:
        """One layout, asked again and again: fits is the budget's verdict on the rendered text."""
        units = split_units(text, "text", chunk_chars=16)
        layout = Layout(text, units, COUNT, COUNTER.is_seam, COUNT(text))
        for kept in kept_sets:
            chosen = {index % len(units) for index in kept} if units else set()
            rendered = layout.render(chosen, exact=exact)
            tokens = COUNT(rendered)
            for delta in slack:  # limits right at the count, where an off-by-one shows
                budget = Budget(max_tokens=max(0, tokens + delta), max_bytes=max_bytes, count=COUNT)
                assert layout.fits(chosen, budget, exact=exact) == budget.fits(rendered)
