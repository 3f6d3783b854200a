from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from context_graph import ContextGraph
from context_graph.graph.nodes import AssistantNode, ToolCallNode
from context_graph.testing import WordCounter
from processors.base import GraphView
from processors.distill.references import LaterReferences, _named, _tails

# Words that name the same things in several spellings: paths and their tails, names.
_WORDS = st.sampled_from(
    [
        "src/app.py",
        "/repo/src/app.py",
        "app.py",
        "./src/app.py",
        "parse_rows",
        "load_rows",
        "ValueError",
        "ABC-12",
        "https://x.org/issues/123",
        "123",
    ]
)
_SAID = st.lists(_WORDS, max_size=3).map(" ".join)
# A turn: ("user" | "assistant" | "call", what it says)
_TURNS = st.lists(
    st.tuples(st.sampled_from(["user", "assistant", "call"]), _SAID), min_size=2, max_size=8
)


def _build(turns: list[tuple[str, str]]) -> ContextGraph:
    graph = ContextGraph(counter=WordCounter())
    for index, (kind, said) in enumerate(turns):
        if kind == "user":
            graph.add_user(said or "hi")
        elif kind == "assistant":
            graph.add_assistant(said or "ok")
        else:
            call = {"id": f"c{index}", "name": "edit", "arguments": {"path": said, "n": index}}
            graph.add_assistant(tool_calls=[call])
            graph.add_tool_result(f"c{index}", said or "done")
    return graph


def _named_after_from_scratch(view: GraphView, entity: str, position: int) -> bool:
    """The contract read off every turn after `position`, one at a time."""
    entity = entity.removeprefix("./")
    wanted = [t for t in _tails(entity) if "/" in t]
    for node_id in view.transcript()[position + 1 :]:
        node = view[node_id]
        if isinstance(node, AssistantNode):
            named = _named(node.text, call=False)
        elif isinstance(node, ToolCallNode):
            named = _named(node.arguments, call=True)
        else:
            continue
        for found, tails in named:
            if entity == found or entity in tails or found in wanted:
                return True
    return False


class TestLaterReferences:
    @given(_TURNS, st.lists(st.tuples(st.integers(0, 12), _WORDS), min_size=2, max_size=12))
    def test_read_on_demand_same_as_every_turn_read(
        self, turns: list[tuple[str, str]], asked: list[tuple[int, str]]
    ) -> None:
        """Questions in any order, about any node, answer as a reading of every later turn."""
        view = GraphView(_build(turns))
        order = view.transcript()
        references = LaterReferences(view)
        for pick, entity in asked:
            node_id = order[pick] if pick < len(order) else "no-such-node"
            position = order.index(node_id) if node_id in order else len(order)
            expected = _named_after_from_scratch(view, entity, position)
            assert (entity in references.after(node_id)) == expected, (node_id, entity)
