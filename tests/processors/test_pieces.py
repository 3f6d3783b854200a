"""Counting a text paragraph by paragraph between seams gives the counter's own count."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from context_graph.testing import WordCounter
from context_graph.tokens.counting import TiktokenCounter
from processors.pieces import counting_by_paragraphs

COUNTER = TiktokenCounter()
_LINES = st.lists(
    st.one_of(
        st.text(max_size=40),
        st.sampled_from(["", "", " ", "  - item", "\t", "## Heading", "\r", "'s", "\u3000x", "\n"]),
    ),
    max_size=30,
)


class TestCountingByLines:
    @given(lines=_LINES)
    def test_counts_as_the_counter_does(self, lines: list[str]) -> None:
        """Any text, blank lines and Unicode included, counts as `counter.count` counts it."""
        count = counting_by_paragraphs(COUNTER)
        text = "\n".join(lines)
        assert count(text) == COUNTER.count(text)
        assert count(text + "\n") == COUNTER.count(text + "\n")

    def test_a_counter_without_seams_counts_whole_texts(self) -> None:
        """Without the capability the counter's own `count` is used as it is."""
        counter = WordCounter()
        assert counting_by_paragraphs(counter) == counter.count
