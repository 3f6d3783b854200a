"""The parts of a `ContextGraph`, through their own interfaces: edges, units, the adders."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from context_graph.graph.adders import EventAdders
from context_graph.graph.content import TextPart
from context_graph.graph.edges import EdgeSet
from context_graph.graph.events import AgentEvent
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


class _Recorder(EventAdders):
    """A host with nothing but `ingest`, which records the events it is handed."""

    __slots__ = ("events",)

    def __init__(self) -> None:
        self.events: list[AgentEvent | dict[str, Any]] = []

    def ingest(self, events: Iterable[AgentEvent | dict[str, Any]]) -> tuple[str, ...]:
        batch = list(events)
        self.events.extend(batch)
        return tuple(f"id-{len(self.events) - len(batch) + i}" for i in range(len(batch)))


class TestEventAdders:
    def test_a_host_needs_nothing_but_ingest(self) -> None:
        """Every shorthand builds its event and hands it to the host's `ingest`, one each."""
        host = _Recorder()
        host.add_system("be brief")
        host.add_user("hi")
        host.add_assistant("ok", tool_calls=[{"id": "c1", "name": "ls", "arguments": {}}])
        host.add_tool_result("c1", "a.py")
        host.add_file_read("a.py", "print(1)")
        host.add_subagent_result("done")
        host.add_note("remember")
        kinds = [type(event).__name__ for event in host.events]
        assert kinds == [
            "SystemPrompt",
            "UserTurn",
            "AssistantTurn",
            "ToolResult",
            "FileRead",
            "SubagentResult",
            "Note",
        ]
