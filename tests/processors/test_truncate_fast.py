"""The truncation search's shortcuts pick what a plain search over joined texts picks."""

from __future__ import annotations

from collections.abc import Callable
from itertools import pairwise

from hypothesis import example, given, settings
from hypothesis import strategies as st

from context_graph.tokens.counting import TiktokenCounter
from processors.truncate import POLICIES, Policy
from processors.truncate.count import Blocks
from processors.truncate.fit import (
    Budget,
    Layout,
    _prefixes,
    fit_layout,
    largest,
    priority,
    runs_of,
)
from processors.truncate.markup import balance, depths, detect_markup
from processors.truncate.units import describe_gap, marker, split_units

COUNTER = TiktokenCounter()
COUNT = COUNTER.count

# Lines that tokenize across line ends, error lines, markup and over-long lines (chunked).
_WORDS = st.sampled_from(
    ["word", "x", "'s", "1234567", "e\u0301", "👩\u200d💻", "日本語", "\u00a0", ":", "{}",
     "error:", "FAILED", "warning", "<b>", "</b>", "<br/>", " ", "  ", "\t", "\r", "=" * 20]
)  # fmt: skip
_LINE = st.lists(_WORDS, max_size=10).map("".join)
_LONG_LINE = st.lists(_WORDS, min_size=60, max_size=200).map(" ".join)
_LINES = st.lists(st.one_of(_LINE, _LINE, _LINE, _LONG_LINE), min_size=1, max_size=90)
_PLAIN = _LINES.map("\n".join)
_QUERIES = st.sampled_from(["pending", "block", "tokens"])
_TEXT = st.one_of(_PLAIN, _PLAIN.map(lambda text: f"<root>\n{text}\n</root>\n"))


def _render(layout: Layout, kept: set[int], exact: bool) -> str:
    """The truncated text, joined the plain way: kept units, a marker line per omitted run."""
    units, text, starts = layout.units, layout.text, layout.starts
    out: list[str] = []
    previous = -1
    for index in [*sorted(kept), len(units)]:
        if index > previous + 1:
            start, end = starts[previous + 1], starts[index]
            tokens = COUNT(text[start:end]) if exact else max(1, (end - start) // 4)
            if out and not out[-1].endswith("\n"):
                out.append("\n")
            out.append(marker(text, start, end, tokens))
            if index < len(units):
                out.append("\n")
        if index < len(units):
            out.append(units[index])
        previous = index
    return "".join(out)


def _plain_fit(
    layout: Layout,
    policy: Policy,
    budget: Budget,
    context: int,
    adjust: Callable[[set[int]], set[int]] | None,
) -> set[int] | None:
    """The search `fit_layout` makes, on sets and joined texts counted whole."""
    total = len(layout.units)
    order = priority(layout.units, policy, context)

    def fits(kept: set[int], exact: bool) -> bool:
        return budget.fits(_render(layout, kept, exact))

    def grow(kept: list[int], exact: bool) -> list[int]:
        kept = list(kept)
        grew = True
        while grew:
            grew = False
            omitted = [index for index in range(total) if index not in kept]
            if not omitted:
                break
            first, last = omitted[0], omitted[-1]
            edges = {"head": [first], "tail": [last]}.get(policy, sorted({first, last}))
            for edge in edges if first != last else [first]:
                if fits({*kept, edge}, exact):
                    kept.append(edge)
                    grew = True
        return kept

    kept = order[: largest(lambda size: fits(set(order[:size]), False), 0, total - 1)]
    kept = grow(kept, False)
    while kept and not fits(set(kept), True):
        kept.pop()
    if not kept and not fits(set(), True):
        return None
    kept = grow(kept, True)
    if adjust is not None and fits(adjust(set(kept)), True):
        return adjust(set(kept))
    return set(kept)


def _plain_pieces(layout: Layout, kept: set[int]) -> list[str]:
    """Kept runs cut at every seam the counter proves between units; a marker line per gap."""
    units, text, starts = layout.units, layout.text, layout.starts
    total = len(units)
    bounds = [0, *(i for i in range(1, total) if COUNTER.is_seam(units[i - 1], units[i])), total]
    pieces: list[str] = []
    position = 0
    for start, stop in [*runs_of(kept), (total, total)]:
        if start > position:  # the omitted units `position` to `start`
            if position > 0 and not units[position - 1].endswith("\n"):
                pieces.append("\n")
            gap = text[starts[position] : starts[start]]
            pieces.append(marker(text, starts[position], starts[start], COUNT(gap)))
            if start < total:
                pieces.append("\n")
        if start < stop:
            inner = [bound for bound in bounds if start <= bound <= stop]
            cuts = [start, *inner, stop] if inner else [start, stop]
            pieces.extend("".join(units[a:b]) for a, b in pairwise(cuts))
        position = stop
    return pieces


class TestRuns:
    @given(kept=st.sets(st.integers(0, 60)) | st.lists(st.integers(0, 60)).map(set))
    def test_runs_cover_exactly_the_kept_indices(self, kept: set[int]) -> None:
        """Runs are sorted, disjoint, not touching, and hold every kept index once."""
        runs = runs_of(kept)
        assert {index for start, stop in runs for index in range(start, stop)} == kept
        assert all(a[1] < b[0] for a, b in pairwise(runs))
        assert all(start < stop for start, stop in runs)

    @given(lines=_LINES, policy=st.sampled_from(POLICIES), context=st.integers(0, 3))
    @example(lines=[""], policy="head_tail", context=0)  # no units: no run, not an empty one
    def test_prefix_runs_are_the_runs_of_the_prefix(
        self, lines: list[str], policy: Policy, context: int
    ) -> None:
        """The priority order's prefix of every size has the runs its index set has."""
        units = split_units("\n".join(lines), "text", chunk_chars=16)
        order = priority(units, policy, context)
        prefix = _prefixes(order, policy, len(order))
        for size in range(len(order) + 1):
            assert prefix(size) == runs_of(set(order[:size]))


class TestBlocksPending:
    @given(
        count=st.integers(1, 40),
        queries=st.lists(
            st.tuples(_QUERIES, st.integers(0), st.integers(0)),
            max_size=16,
        ),
        total_known=st.booleans(),
    )
    def test_pending_is_every_uncounted_block_of_the_run(
        self, count: int, queries: list[tuple[str, int, int]], total_known: bool
    ) -> None:
        """Whatever was counted before, and in what order, pending lists the rest in order."""
        lines = [f"line {index} of the text\n" for index in range(count)]
        text = "".join(lines)
        edges = [0]
        for line in lines:
            edges.append(edges[-1] + len(line))
        counted: set[int] = set()

        def recording(piece: str) -> int:
            counted.add(lines.index(piece))
            return COUNT(piece)

        blocks = Blocks(text, edges, recording, COUNT(text) if total_known else None)
        for kind, a, b in queries:
            low, high = sorted((a % (count + 1), b % (count + 1)))
            if kind == "block" and low < count:
                assert blocks.block(low) == COUNT(lines[low])
            elif kind == "tokens":
                assert blocks.tokens(low, high) == COUNT("".join(lines[low:high]))
            else:
                before = set(counted)
                pending = blocks.pending(low, high)
                if pending is None:
                    assert counted >= {*range(low), *range(high, count)}
                    assert blocks.subtracted(low, high) == COUNT("".join(lines[low:high]))
                else:
                    assert counted == before
                    assert list(pending) == [i for i in range(low, high) if i not in counted]
                    known = sum(COUNT(lines[i]) for i in before if low <= i < high)
                    assert blocks.known(low, high) == known


class TestSameSearchAsThePlainOne:
    @settings(max_examples=120, deadline=None)
    @given(
        text=_TEXT,
        max_tokens=st.integers(8, 400),
        max_bytes=st.one_of(st.none(), st.none(), st.integers(64, 2_000)),
        policy=st.sampled_from(POLICIES),
        context=st.integers(0, 3),
    )
    def test_kept_units_text_and_pieces_are_the_plain_search_ones(
        self, text: str, max_tokens: int, max_bytes: int | None, policy: Policy, context: int
    ) -> None:
        """The same units are kept as by joining and counting every candidate whole."""
        fmt = "markup" if detect_markup(text) else "text"
        budget = Budget(max_tokens=max_tokens, max_bytes=max_bytes, count=COUNT)
        units = split_units(text, fmt, chunk_chars=max(8, budget.chars // 32))
        adjust = None
        if fmt == "markup":
            levels = depths(units)

            def adjust(kept: set[int]) -> set[int]:
                return balance(kept, levels=levels)

        expected = _plain_fit(Layout(text, units, COUNT), policy, budget, context, adjust)
        layout = Layout(text, units, COUNT, COUNTER.is_seam, COUNT(text))
        kept = fit_layout(layout, policy, budget, context=context, adjust=adjust)
        assert kept == expected
        if kept is not None:
            rendered = _render(layout, kept, True)
            assert layout.render(kept, exact=True) == rendered
            assert layout.render_pieces(kept, exact=True) == _plain_pieces(layout, kept)
            assert budget.fits(rendered)


class TestMarkers:
    @given(text=_TEXT, a=st.integers(0), b=st.integers(0))
    def test_known_line_ends_describe_a_gap_as_scanning_does(
        self, text: str, a: int, b: int
    ) -> None:
        """A gap described from its known line-end count reads as one described by scanning."""
        start, end = sorted((a % (len(text) + 1), b % (len(text) + 1)))
        breaks = text[start:end].count("\n")
        assert describe_gap(text, start, end, breaks) == describe_gap(text, start, end)
