"""Counting a text line by line, or paragraph by paragraph, between seams: the counter's count."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from context_graph import ContextGraph
from context_graph.graph.node_tokens import NodeTokenCache
from context_graph.graph.nodes import Node
from context_graph.testing import WordCounter
from context_graph.tokens.counting import TiktokenCounter
from processors.pieces import counting_by_lines, counting_by_paragraphs
from processors.summarize.extractive import ExtractiveSummarizer

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


class TestCountingByLinesOnly:
    @given(lines=_LINES)
    def test_counts_as_the_counter_does(self, lines: list[str]) -> None:
        """Counted line by line, any text counts as `counter.count` counts it."""
        count = counting_by_lines(COUNTER)
        text = "\n".join(lines)
        assert count(text) == COUNTER.count(text)
        assert count(text + "\n") == COUNTER.count(text + "\n")

    def test_a_counter_without_seams_counts_whole_texts(self) -> None:
        """Without the capability the counter's own `count` is used as it is."""
        counter = WordCounter()
        assert counting_by_lines(counter) == counter.count


class _Encoding(TiktokenCounter):
    """Counts as tiktoken does, and adds up the characters it encoded."""

    def __init__(self) -> None:
        super().__init__()
        self.chars = 0

    def count(self, text: str) -> int:
        self.chars += len(text)
        return super().count(text)


def _long_session() -> list[Node]:
    graph = ContextGraph(counter=WordCounter())
    graph.add_user("Make the test suite pass.")
    for k in range(80):
        arguments = {"command": f"pytest tests/test_module_{k}.py -x -q"}
        graph.add_assistant(
            f"Running part {k}.",
            tool_calls=[{"id": f"c{k}", "name": "bash", "arguments": arguments}],
        )
        graph.add_tool_result(f"c{k}", f"{k} passed in 0.5s")
    return [graph[node_id] for unit in graph.units() for node_id in unit.node_ids]


class TestBriefBound:
    def test_dropping_items_encodes_each_line_once(self) -> None:
        """Shortened item by item, a brief is not re-encoded section by section."""
        counter = _Encoding()
        cache = NodeTokenCache(counter)
        summarizer = ExtractiveSummarizer(max_tokens=200, max_items=80, counter=counter)
        whole = ExtractiveSummarizer(max_tokens=100_000, max_items=80).brief(
            _long_session(), previous=None, instructions=None
        )
        counter.chars = 0
        text = summarizer.brief(_long_session(), previous=None, instructions=None, tokens=cache)
        assert cache.count_text(text) == COUNTER.count(text) <= 200
        # Each line of the whole brief is encoded about once; by sections, many times over.
        assert counter.chars < 2 * len(whole)
