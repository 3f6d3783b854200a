"""A view made by replacements takes its figures and answers over from the view before.

Counted afresh they read every node of the view, after every stage of a compaction;
taken over they cost the replaced nodes. Whatever the replacements (of answers, of
nodes declaring triggers, of replacements, unchecked ones of nodes out of the view),
the view must read as a fresh one.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from context_graph import ContextGraph, TextPart
from context_graph.graph.nodes import Node, TriggerSpec
from context_graph.testing import WordCounter
from orchestrator.working import WorkingGraph, WorkingView, figures, projection
from orchestrator.working.figures import figures_of
from processors import Proposal, Replace, replacement_for


def _session(graph: ContextGraph, turns: int) -> None:
    graph.add_user("start alpha beta gamma")
    for turn in range(turns):
        graph.add_assistant(f"turn {turn} alpha", tool_calls=[{"id": f"c{turn}", "name": "sh"}])
        graph.add_tool_result(f"c{turn}", f"result {turn} alpha beta gamma delta eps")


def _masked(node: Node, triggers: tuple[TriggerSpec, ...] | None = None) -> Node:
    masked = replacement_for(node, [TextPart(text="[masked]")])
    return masked if triggers is None else masked.model_copy(update={"triggers": triggers})


def _replace(view: WorkingView, pairs: list[tuple[str, Node]]) -> Proposal:
    count = view.token_cache.count_node
    return Proposal(
        processor="mask",
        edits=tuple(Replace(target=t, replacement=n) for t, n in pairs),
        tokens_before=sum(count(view[t]) for t, _ in pairs),
        tokens_after=sum(count(n) for _, n in pairs),
        base_version=view.version,
    )


def _assert_as_fresh(view: WorkingView) -> None:
    fresh = view.fresh_copy()
    assert view.figures() == figures_of(fresh.units(), fresh.__getitem__, fresh.tokens)
    assert view.answers() == fresh.answers()


def _counting(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """Count the whole-view recounts of figures and the node reads of `answers()`."""
    calls = {"figures": 0, "reads": 0}
    recount = figures.figures_counted

    def counting(*args: Any) -> Any:
        calls["figures"] += 1
        return recount(*args)

    answers = projection.Projector.answers

    def counted_answers(self: projection.Projector, node: Callable[[str], Node]) -> Any:
        def read(node_id: str) -> Node:
            calls["reads"] += 1
            return node(node_id)

        return answers(self, read)

    monkeypatch.setattr(projection, "figures_counted", counting)
    monkeypatch.setattr(projection.Projector, "answers", counted_answers)
    return calls


class TestTakeOver:
    def test_a_mask_reads_no_node_of_the_view_again(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """After a replace-only apply, figures and answers come without a recount."""
        graph = ContextGraph(counter=WordCounter())
        working = WorkingGraph(graph)
        _session(graph, 30)
        view = working.view
        view.figures()
        view.answers()
        target = view.answers()[3].id
        calls = _counting(monkeypatch)
        working.apply(_replace(view, [(target, _masked(view[target]))]))
        assert working.total_tokens == view.total_tokens - 6  # seven words for one
        assert working.view.answers()[3].text == "[masked]"
        assert calls == {"figures": 0, "reads": 0}
        _assert_as_fresh(working.view)

    def test_a_replacement_declaring_new_triggers_is_counted(self) -> None:
        """A replacement that declares triggers its target did not is counted afresh."""
        graph = ContextGraph(counter=WordCounter())
        working = WorkingGraph(graph)
        _session(graph, 4)
        view = working.view
        view.figures()
        target = view.answers()[1].id
        size = (TriggerSpec(kind="size", threshold=1),)
        working.apply(_replace(view, [(target, _masked(view[target], triggers=size))]))
        assert [node.id for _, node in working.view.figures().declared] != []
        _assert_as_fresh(working.view)

    def test_an_unchecked_replacement_out_of_the_view_takes_nothing_over(self) -> None:
        """Replacing a node that left the view (unchecked) counts the view afresh."""
        graph = ContextGraph(counter=WordCounter())
        working = WorkingGraph(graph)
        _session(graph, 3)
        view = working.view
        target = view.answers()[0].id
        first = _masked(view[target])
        working.apply(_replace(view, [(target, first)]))
        view = working.view
        view.figures()
        view.answers()
        edited = view.with_proposal(
            Proposal(processor="mask", edits=(Replace(target=target, replacement=first),))
        )
        _assert_as_fresh(edited)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), turns=st.integers(1, 8))
def test_replacements_and_ingests_read_as_fresh(data: st.DataObject, turns: int) -> None:
    """Replace-only proposals (answers, calls, turns; with triggers) between ingests."""
    graph = ContextGraph(counter=WordCounter())
    working = WorkingGraph(graph)
    _session(graph, turns)
    triggers = st.sampled_from([(), (TriggerSpec(kind="consumed"),)])
    for step in range(data.draw(st.integers(1, 6))):
        view = working.view
        if data.draw(st.booleans()):
            view.figures()
        if data.draw(st.booleans()):
            view.answers()
        ids = [i for i in view.current_ids() if view[i].kind in ("tool_result", "user")]
        chosen = data.draw(st.lists(st.sampled_from(ids), min_size=1, max_size=3, unique=True))
        pairs = [(i, _masked(view[i], triggers=data.draw(triggers))) for i in chosen]
        pairs = [(i, n) for i, n in pairs if n.text != view[i].text]
        if pairs:
            working.apply(_replace(view, pairs))
        _assert_as_fresh(working.view)
        if data.draw(st.booleans()):
            graph.add_user(f"more {step} alpha beta")
            _assert_as_fresh(working.view)
