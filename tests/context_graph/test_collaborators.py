"""The parts a `ContextGraph` holds, through their own interfaces: `EdgeSet`, `UnitIndex`."""

from __future__ import annotations

from context_graph.graph.content import TextPart
from context_graph.graph.edges import EdgeSet
from context_graph.graph.nodes import AssistantNode, ToolCallNode, ToolResultNode, UserNode
from context_graph.graph.units import Unit, UnitIndex


def _edges(*node_ids: str) -> EdgeSet:
    edges = EdgeSet()
    edges.add_nodes(list(node_ids))
    return edges


class TestEdgeSet:
    def test_ranks_follow_insertion(self) -> None:
        """Each node's rank is its place in the order nodes were added, across calls."""
        edges = _edges("a", "b")
        edges.add_nodes(["c"])
        assert dict(edges.rank) == {"a": 0, "b": 1, "c": 2}

    def test_backward_edges_never_close_a_cycle(self) -> None:
        """Edges from newer to older nodes are acyclic; a self-edge is not."""
        edges = _edges("a", "b", "c")
        edges.link("c", "b", "follows")
        edges.link("b", "a", "follows")
        assert not edges.closes_cycle("c", "a")
        assert edges.closes_cycle("b", "b")

    def test_a_forward_edge_makes_cycles_searched(self) -> None:
        """Once an edge points forward, an edge back along a path is found to close a cycle."""
        edges = _edges("a", "b", "c")
        edges.link("a", "c", "derived_from")  # forward: older -> newer
        edges.link("c", "b", "follows")
        assert edges.closes_cycle("b", "a")  # a -> c -> b
        assert edges.closes_cycle("c", "a")
        assert not edges.closes_cycle("a", "b")  # forward too, but nothing leads from b

    def test_kinds_of_one_pair_are_merged_in_order(self) -> None:
        """Two kinds between the same pair are one networkx edge; each is listed once."""
        edges = _edges("a", "b")
        edges.link_new([("b", "a", "answers"), ("b", "a", "spawned_by"), ("b", "a", "answers")])
        edges.link("b", "a", "answers")
        assert list(edges.edges()) == [("b", "a", "answers"), ("b", "a", "spawned_by")]
        assert edges.targets("b", "spawned_by") == ("a",)
        assert edges.sources("a", "answers") == ("b",)
        assert edges.view().number_of_edges() == 1


def _text(value: str) -> tuple[TextPart, ...]:
    return (TextPart(text=value),)


class TestUnitIndex:
    def test_a_turn_grows_across_batches_and_others_stay_the_same_objects(self) -> None:
        """Adding a result to an earlier turn remakes that unit only; the others are kept."""
        user = UserNode(id="u", content=_text("hi"))
        turn = AssistantNode(id="a")
        call = ToolCallNode(id="c", tool_call_id="c1", name="ls", assistant_id="a")
        index = UnitIndex()
        index.extend([user, turn, call], {"u": "u", "a": "a", "c": "a"})
        first = index.units()
        mark = index.mark
        result = ToolResultNode(id="r", tool_call_id="c1")
        index.extend([result], {"r": "a"})
        assert index.units() == (
            Unit("u", "user", ("u",)),
            Unit("a", "assistant", ("a", "c", "r")),
        )
        assert index.units()[0] is first[0]
        assert index.unit_of("r") is index.units()[1]
        assert index.changed_since(mark) == ("a",)
        assert index.changed_since(0) == ("u", "a")

    def test_a_node_in_no_unit(self) -> None:
        """An id that was never placed (a derived node) has no unit."""
        assert UnitIndex().unit_of("summary-1") is None

    def test_a_notice_heads_a_notice_unit(self) -> None:
        """The kind of a unit headed by a harness notice is `notice`."""
        index = UnitIndex()
        index.extend([UserNode(id="n", notice=True)], {"n": "n"})
        assert index.units() == (Unit("n", "notice", ("n",)),)
