"""Notices: user-role messages the harness wrote (`UserTurn.notice`), in the graph and render."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from context_graph import (
    BudgetExceededError,
    ContextGraph,
    IngestError,
    UserNode,
    UserTurn,
)
from context_graph.graph.anchors import floor_anchors, unit_kind
from context_graph.graph.nodes import SystemNode
from context_graph.graph.stats import graph_stats
from context_graph.render import FORMATS, Renderer
from context_graph.testing import WordCounter

DONE = "Background task b1 finished (exit code 0); its output is in /tmp/b1.out"


def _graph() -> ContextGraph:
    return ContextGraph(counter=WordCounter())


class TestEvent:
    @pytest.mark.parametrize(
        ("fields", "made_before"),
        [
            ({}, "000000-user-24f418246681ba06"),
            (
                {"meta": {"uuid": "u1"}, "timestamp": "2026-01-01T00:00:00Z"},
                "000000-user-ec01ea881644009e",
            ),
        ],
    )
    def test_an_ordinary_turn_keeps_the_id_it_had_before_notices(
        self, fields: dict[str, object], made_before: str
    ) -> None:
        """`notice` is left out of the JSON while false, so ids stay what they were.

        The expected ids are what the code before `notice` existed (9f4d575) gave; a
        stored session's node ids must not change under it.
        """
        turn = UserTurn(content="fix the bug", **fields)  # type: ignore[arg-type]
        assert "notice" not in turn.model_dump_json()
        assert _graph().ingest([turn]) == (made_before,)

    def test_a_notice_round_trips_and_has_its_own_id(self) -> None:
        notice = UserTurn(content=DONE, notice=True)
        dumped = notice.model_dump_json()
        assert json.loads(dumped)["notice"] is True
        assert UserTurn.model_validate_json(dumped) == notice
        plain = _graph().ingest([UserTurn(content=DONE)])
        assert _graph().ingest([notice]) != plain

    @pytest.mark.parametrize("bad", ["yes", 2, None, [True]])
    def test_a_notice_flag_must_be_a_boolean(self, bad: object) -> None:
        with pytest.raises(ValueError, match="notice"):
            UserTurn(content="x", notice=bad)

    def test_a_bad_flag_in_a_batch_changes_nothing(self) -> None:
        """Plain dicts are checked too: the batch is refused whole, naming the field."""
        graph = _graph()
        graph.add_user("first")
        batch = [
            {"type": "user", "content": "second"},
            {"type": "user", "content": DONE, "notice": "yes"},
        ]
        with pytest.raises(IngestError, match=r"message 1: .*user\.notice"):
            graph.ingest(batch)
        assert len(graph) == 1 and graph.turns == 1


class TestGraph:
    def test_a_notice_is_a_user_node_that_opens_no_turn(self) -> None:
        graph = _graph()
        graph.add_user("run the tests in the background")
        notice_id = graph.add_user(DONE, notice=True)
        later = graph.add_user("now fix what failed")
        node = graph[notice_id]
        assert isinstance(node, UserNode) and node.notice
        assert node.turn == 1 and graph[later].turn == 2 and graph.turns == 2
        assert [u.kind for u in graph.units()] == ["user", "notice", "user"]
        assert unit_kind(node) == "notice" and unit_kind(graph[later]) == "user"
        stats = graph_stats(graph)
        assert (stats.user_turns, stats.notices, stats.nodes_by_kind["user"]) == (2, 1, 3)

    def test_unit_kind_of_other_nodes_is_their_kind(self) -> None:
        system = SystemNode(id="s", content=())
        assert unit_kind(system) == "system"


class TestFloorAnchors:
    def test_first_and_latest_request_and_latest_turn(self) -> None:
        kinds = ["system", "notice", "user", "assistant", "user", "assistant", "notice"]
        assert floor_anchors(kinds) == (2, 4, 6)
        assert floor_anchors(kinds[:5]) == (2, 4, 4)

    def test_notices_stand_in_when_there_is_no_request(self) -> None:
        assert floor_anchors(["summary", "notice", "assistant", "notice"]) == (1, 3, 3)
        assert floor_anchors(["system", "assistant"]) is None

    @given(st.lists(st.sampled_from(["user", "notice", "assistant", "system", "summary"])))
    def test_anchors_are_user_turns_in_order(self, kinds: list[str]) -> None:
        anchors = floor_anchors(kinds)
        turns = [i for i, kind in enumerate(kinds) if kind in {"user", "notice"}]
        if anchors is None:
            assert not turns
            return
        first, request, latest = anchors
        assert first <= request <= latest == turns[-1]
        if "user" in kinds:
            assert kinds[first] == kinds[request] == "user"
            assert "user" not in kinds[:first] and "user" not in kinds[request + 1 :]
        else:
            assert (first, request) == (turns[0], turns[-1])


class TestRenderFloor:
    @pytest.mark.parametrize("fmt", FORMATS)
    def test_the_steps_between_request_and_notice_go_before_the_request(self, fmt: str) -> None:
        """Read as a request, the notice would let the request go second, oldest first."""
        graph = _graph()
        graph.add_user("set up the project")
        first_step = graph.add_assistant("done")[0]
        request = graph.add_user("run the resource tests and report " + "carefully " * 30)
        later_step = graph.add_assistant("started them in the background " + "and " * 30)[0]
        graph.add_user(DONE, notice=True)
        renderer = Renderer(format=fmt)  # type: ignore[arg-type]
        whole = renderer.render(graph).tokens
        result = renderer.render(graph, budget=whole - 20)
        assert result.dropped == (first_step, later_step)
        assert request not in result.dropped

    def test_a_notice_only_history_keeps_its_latest_notice(self) -> None:
        """With no request at all, the notices anchor the floor as user turns did."""
        graph = _graph()
        graph.add_user(DONE, notice=True)
        graph.add_assistant("noted " * 30)
        last = graph.add_user("Background task b2 finished", notice=True)
        renderer = Renderer(format="openai")
        whole = renderer.render(graph).tokens
        result = renderer.render(graph, budget=whole - 20)
        assert result.dropped == (graph.transcript()[1],)
        assert last not in result.dropped
        with pytest.raises(BudgetExceededError):
            renderer.render(graph, budget=5)
