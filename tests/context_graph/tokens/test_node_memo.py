"""`NodeTokenCache.count_node` remembers the count of a node object it counted before."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from context_graph import TiktokenCounter
from context_graph.graph import node_tokens
from context_graph.graph.content import TextPart
from context_graph.graph.node_tokens import NodeTokenCache, countable_text
from context_graph.graph.nodes import AssistantNode, FileNode, Node, ToolCallNode

_TEXT = st.text(alphabet=st.sampled_from(list("ab Z09{}\":\n\t\u00e9's")), max_size=30)
_NODE = st.one_of(
    st.builds(
        lambda i, text: AssistantNode(id=f"n{i}", turn=0, content=(TextPart(text=text),)),
        st.integers(0, 3),
        _TEXT,
    ),
    st.builds(
        lambda i, name, arguments: ToolCallNode(
            id=f"n{i}",
            turn=0,
            assistant_id="a",
            tool_call_id="c",
            name=name or "x",
            arguments=arguments,
        ),
        st.integers(0, 3),
        _TEXT,
        _TEXT,
    ),
    st.builds(
        lambda i, path, text: FileNode(
            id=f"n{i}", turn=0, path=path or "p", content=(TextPart(text=text),)
        ),
        st.integers(0, 3),
        _TEXT,
        _TEXT,
    ),
)
COUNTER = TiktokenCounter()


@pytest.fixture(name="pieces_read")
def fixture_pieces_read(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many times a node's countable pieces were read (once per count worked out)."""
    read = [0]
    real = node_tokens.countable_pieces

    def counted(node: Node) -> tuple[list[str], int]:
        read[0] += 1
        return real(node)

    monkeypatch.setattr(node_tokens, "countable_pieces", counted)
    return read


class TestNodeMemo:
    def test_the_same_node_is_worked_out_once(self, pieces_read: list[int]) -> None:
        """Asked three times for one node object, the cache reads its pieces once."""
        cache = NodeTokenCache(COUNTER)
        node = AssistantNode(id="a", turn=0, content=(TextPart(text="hello\nworld"),))
        counts = {cache.count_node(node) for _ in range(3)}
        assert counts == {COUNTER.count("hello\nworld")}
        assert pieces_read[0] == 1

    def test_another_object_with_the_same_id_is_counted_afresh(self) -> None:
        """An edited copy under the same id gets its own count, not the remembered one."""
        cache = NodeTokenCache(COUNTER)
        short = AssistantNode(id="a", turn=0, content=(TextPart(text="one"),))
        long = short.model_copy(update={"content": (TextPart(text="one two three four"),)})
        assert cache.count_node(short) == COUNTER.count("one")
        assert cache.count_node(long) == COUNTER.count("one two three four")
        assert cache.count_node(short) == COUNTER.count("one")

    def test_the_memo_starts_over_past_its_size(self, pieces_read: list[int]) -> None:
        """Past `NODE_MEMO` nodes the memo is emptied, and counts stay right."""
        cache = NodeTokenCache(COUNTER)
        cache.NODE_MEMO = 2
        nodes = [
            AssistantNode(id=f"a{i}", turn=0, content=(TextPart(text=f"t {i}"),)) for i in range(3)
        ]
        assert [cache.count_node(n) for n in nodes] == [COUNTER.count(f"t {i}") for i in range(3)]
        assert cache.count_node(nodes[0]) == COUNTER.count("t 0")
        assert pieces_read[0] == 4  # the first node was forgotten when the third came

    @settings(max_examples=80, deadline=None)
    @given(nodes=st.lists(_NODE, max_size=12), memo=st.integers(1, 4))
    def test_a_remembered_count_is_the_count(self, nodes: list[Node], memo: int) -> None:
        """Whatever the order, repeats and size of the memo, each count is the node's own."""
        cache = NodeTokenCache(COUNTER)
        cache.NODE_MEMO = memo
        for node in [*nodes, *reversed(nodes)]:
            text, flat = countable_text(node)
            assert cache.count_node(node) == COUNTER.count(text) + flat
