"""`ProcessorContext.for_graph`: typed keywords, kept in step with the context's fields."""

from __future__ import annotations

import dataclasses

import pytest

from context_graph import ContextGraph
from context_graph._keywords import accepted_keywords
from context_graph.testing import WordCounter
from processors.base import ContextFields, ProcessorContext


class TestForGraph:
    def test_the_keywords_are_the_fields_it_does_not_fill(self) -> None:
        """`ContextFields` lists every field of the context but `graph` and `tokens`."""
        names = {f.name for f in dataclasses.fields(ProcessorContext)}
        assert accepted_keywords(ContextFields) == names - {"graph", "tokens"}

    def test_a_misspelled_keyword_is_a_type_error(self) -> None:
        """`budjet=` raises a `TypeError` naming it and the accepted keywords."""
        graph = ContextGraph(counter=WordCounter())
        with pytest.raises(TypeError) as caught:
            ProcessorContext.for_graph(graph, budjet=100)  # type: ignore[call-arg]
        message = str(caught.value)
        assert "for_graph() got an unexpected keyword argument 'budjet'" in message
        assert "budget, clock, expand_hints, graph, instructions, summarizer, target" in message

    def test_the_keywords_reach_the_context(self) -> None:
        """Keywords given are the context's values, over the graph's own token cache."""
        graph = ContextGraph(counter=WordCounter())
        ctx = ProcessorContext.for_graph(graph, budget=100, expand_hints=True)
        assert (ctx.budget, ctx.expand_hints, ctx.tokens) == (100, True, graph.token_cache)
