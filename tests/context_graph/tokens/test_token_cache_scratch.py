"""NodeTokenCache keeps node texts for good and transient texts in two bounded generations."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from context_graph import ConfigurationError, ContextGraph, TiktokenCounter
from context_graph.graph.node_tokens import NodeTokenCache
from context_graph.testing import WordCounter


class Recording(WordCounter):
    """Counts words and remembers every text it was asked to count."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    def count(self, text: str) -> int:
        self.seen.append(text)
        return super().count(text)


def _probe(i: int) -> str:
    return f"candidate cut number {i} " + "word " * (i % 7)


def test_transient_texts_cost_bounded_memory() -> None:
    cache = NodeTokenCache(WordCounter(), scratch_chars=1_000)
    longest = 0
    for i in range(5_000):
        text = _probe(i)
        longest = max(longest, len(text))
        cache.count_text(text)
        assert cache.transient_chars <= 2 * (1_000 + longest)
    assert len(cache) < 200


def test_node_texts_are_kept_for_good() -> None:
    counter = Recording()
    cache = NodeTokenCache(counter, scratch_chars=10)  # transient texts turn over at once
    graph = ContextGraph(counter=WordCounter())
    graph.add_user("fix the parser in src/parser.py")
    node = graph[graph.transcript()[0]]
    assert cache.count_node(node) == 5
    for i in range(500):
        cache.count_text(_probe(i))
    counter.seen.clear()
    assert cache.count_node(node) == 5
    assert cache.count_text(node.text) == 5
    assert counter.seen == []


def test_a_text_asked_for_again_and_again_stays() -> None:
    counter = Recording()
    cache = NodeTokenCache(counter, scratch_chars=200)
    hot = "the request's message text, at every render"
    for i in range(300):
        cache.count_text(hot)
        cache.count_text(_probe(i))
    assert counter.seen.count(hot) == 1


def test_a_transient_count_seen_before_becomes_a_nodes() -> None:
    """A truncator's chosen cut, counted as a candidate, is not encoded again as a node."""
    counter = Recording()
    graph = ContextGraph(counter=counter)
    cut = "line one\n[... 40 lines omitted ...]\nline forty two"
    assert graph.token_cache.count_pieces(
        ("line one\n", "[... 40 lines omitted ...]\n", "line forty two")
    ) == graph.token_cache.count_text(cut)
    before = len(counter.seen)
    graph.add_user(cut)
    assert len(counter.seen) == before


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.booleans(), st.lists(st.sampled_from(["a b", "c\n", "d e f", "\n", ""]), max_size=4)
        ),
        max_size=60,
    ),
    st.integers(0, 30),
)
def test_counts_never_change_whatever_is_forgotten(
    operations: list[tuple[bool, list[str]]], limit: int
) -> None:
    counter = TiktokenCounter()
    cache = NodeTokenCache(counter, scratch_chars=limit)
    for as_pieces, pieces in operations:
        text = "".join(pieces)
        got = cache.count_pieces(pieces) if as_pieces else cache.count_text(text)
        assert got == counter.count(text)


@pytest.mark.parametrize("bad", [-1, 1.5, "big", True])
def test_bad_scratch_sizes_are_refused(bad: object) -> None:
    with pytest.raises(ConfigurationError, match="scratch_chars"):
        NodeTokenCache(WordCounter(), scratch_chars=bad)  # type: ignore[arg-type]
