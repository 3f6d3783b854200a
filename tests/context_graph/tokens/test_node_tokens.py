"""NodeTokenCache.count_node: a node's pieces summed where that is exact, the same number."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from context_graph import ContextGraph, TiktokenCounter
from context_graph.graph.content import ImagePart, TextPart, ThinkingPart
from context_graph.graph.events import AssistantTurn, ToolCall
from context_graph.graph.node_tokens import NodeTokenCache, countable_text
from context_graph.graph.nodes import AssistantNode, FileNode, Node, ToolCallNode
from context_graph.testing import WordCounter

_NAME = st.text(
    alphabet=st.sampled_from(list("abZ09_-. :\n\t\u00e9\u4e2d'")), min_size=0, max_size=12
)
_ARGUMENTS = st.text(
    alphabet=st.sampled_from(list("ab Z09{}[]\":,\n\t \u00a0\u00e9's")), min_size=0, max_size=40
)


def _ingested(name: str, arguments: str) -> tuple[ContextGraph, ToolCallNode]:
    graph = ContextGraph()
    graph.ingest([AssistantTurn(tool_calls=(ToolCall(id="c1", name=name, arguments=arguments),))])
    node = graph[graph.by_kind("tool_call")[0]]
    assert isinstance(node, ToolCallNode)
    return graph, node


_PART = st.one_of(
    _ARGUMENTS.map(lambda text: TextPart(text=text)),
    _ARGUMENTS.map(lambda text: ThinkingPart(thinking=text)),
    st.just(ImagePart(url="https://example.com/a.png")),
)


def _exact(node: Node) -> None:
    counter = TiktokenCounter()
    text, flat = countable_text(node)
    assert NodeTokenCache(counter).count_node(node) == counter.count(text) + flat


class TestNodeTokens:
    @given(path=_NAME, parts=st.lists(_PART, max_size=3))
    def test_a_file_counts_as_its_joined_text(self, path: str, parts: list[TextPart]) -> None:
        """A file's path and parts, summed piece by piece, give the joined count."""
        _exact(FileNode.model_construct(id="f", path=path, content=tuple(parts), tool_call_id=None))

    @given(parts=st.lists(_PART, max_size=4))
    def test_an_assistant_counts_as_its_joined_text(self, parts: list[TextPart]) -> None:
        """Thinking, text and media in any order give the joined count."""
        _exact(AssistantNode.model_construct(id="a", content=tuple(parts)))

    def test_a_file_leaves_its_text_for_the_renderer(self) -> None:
        """A file's text alone, as a tool message carries it, is in the cache."""
        cache = NodeTokenCache(TiktokenCounter())
        node = FileNode.model_construct(
            id="f", path="src/app.py", content=(TextPart(text="import os\n"),)
        )
        cache.count_node(node)
        assert cache.count_text("import os\n") == TiktokenCounter().count("import os\n")
        assert len(cache) == 2  # the path and the text, not the joined text


class TestCallTokens:
    @given(name=_NAME, arguments=_ARGUMENTS)
    def test_equals_the_count_of_the_joined_text(self, name: str, arguments: str) -> None:
        """Whatever the name and arguments, the count is the joined text's count."""
        counter = TiktokenCounter()
        node = ToolCallNode.model_construct(
            id="x", tool_call_id="c", name=name, arguments=arguments, assistant_id="a"
        )
        text, flat = countable_text(node)
        assert NodeTokenCache(counter).count_node(node) == counter.count(text) + flat

    @pytest.mark.parametrize(
        ("name", "arguments"),
        [
            ("bash", '{"cmd": "ls -la"}'),
            ("read_file", "  indented"),
            ("run2", "x"),
            ("tool_", '{"a": 1}'),  # `_` would take the newline: counted joined
            ("edit", '\n{"a": 1}'),  # a blank start: counted joined
            ("edit", " \n"),
            ("edit", ""),
        ],
    )
    def test_the_graph_stores_the_joined_count(self, name: str, arguments: str) -> None:
        """The count an ingest stores is the count of the call's countable text."""
        graph, node = _ingested(name, arguments)
        text, _ = countable_text(node)
        assert graph.tokens(node.id) == TiktokenCounter().count(text)

    def test_the_pieces_are_left_in_the_cache_for_the_renderer(self) -> None:
        """Where the pieces are summed, the renderer finds each piece counted."""
        cache = NodeTokenCache(TiktokenCounter())
        _, node = _ingested("bash", '{"cmd": "ls"}')
        cache.count_node(node)
        assert len(cache) == 2  # the name and the arguments, not the joined text

    def test_a_counter_without_seams_counts_the_joined_text(self) -> None:
        """A counter that cannot say where it splits gets the joined text to count."""
        counter = WordCounter()
        cache = NodeTokenCache(counter)
        _, node = _ingested("bash", '{"cmd": "ls"}')
        assert cache.count_node(node) == counter.count('bash\n{"cmd": "ls"}')
        assert len(cache) == 1
