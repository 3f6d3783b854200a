"""The working view's kept projection and figures always equal a projection from scratch.

A live `WorkingView` brings its units and trigger figures up to date from what an ingest
appended instead of projecting the whole view again, and a snapshot reads the live
view's projection. Whatever mix of ingests, applied and rejected edits and snapshots, the
kept state must read exactly as a fresh view over the same graph and overlay.
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from context_graph import (
    AgentEvent,
    AssistantTurn,
    Compaction,
    ContextGraph,
    FileRead,
    InvariantViolation,
    Note,
    TextPart,
    ToolCall,
    ToolResult,
    UserTurn,
)
from context_graph.graph.nodes import Node, SummaryNode, TriggerSpec
from context_graph.graph.units import Unit
from context_graph.render import Renderer
from context_graph.testing import WordCounter
from orchestrator.compaction.triggers import TriggerConfig, TriggerState, evaluate
from orchestrator.working import WorkingGraph, WorkingView
from orchestrator.working.figures import figures_of
from orchestrator.working.projection import Projection
from processors import Abstract, Drop, Edit, Proposal, Replace, replacement_for

WORDS = st.lists(
    st.sampled_from(["alpha", "beta", "gamma", "delta", "eps", "zeta"]), min_size=1, max_size=12
).map(" ".join)
TRIGGERS = st.lists(
    st.one_of(
        st.builds(TriggerSpec, kind=st.just("size"), threshold=st.sampled_from([3, 8])),
        st.builds(TriggerSpec, kind=st.just("age"), threshold=st.integers(0, 2)),
        st.builds(TriggerSpec, kind=st.just("superseded")),
        st.builds(TriggerSpec, kind=st.just("consumed")),
    ),
    max_size=2,
).map(tuple)
CONFIG = TriggerConfig(max_messages=12, max_tool_output_tokens=30)


class _Plain:
    """A view that is not a `WorkingView`, so `evaluate` counts its figures afresh."""

    def __init__(self, view: WorkingView) -> None:
        self._view = view
        self.turns = view.turns
        self.total_tokens = view.total_tokens

    def units(self) -> tuple[Unit, ...]:
        return self._view.units()

    def tokens(self, node_id: str) -> int:
        return self._view.tokens(node_id)

    def is_superseded(self, node_id: str) -> bool:
        return self._view.is_superseded(node_id)

    def __getitem__(self, node_id: str) -> Node:
        return self._view[node_id]


def _fresh(view: WorkingView) -> WorkingView:
    """The same graph and overlay, projected from scratch."""
    return WorkingView(view.pristine, view.overlay)


def _assert_matches_scratch(view: WorkingView, state: TriggerState) -> None:
    fresh = _fresh(view)
    units = view.units()
    assert units == fresh.units()
    for unit in units:
        for node_id in unit.node_ids:
            assert view.unit_of(node_id) == unit
    assert view.current_ids() == fresh.current_ids()
    assert view.figures() == figures_of(fresh.units(), fresh.__getitem__, fresh.tokens)
    assert view.total_tokens == fresh.total_tokens
    assert evaluate(view, 60, state, config=CONFIG) == evaluate(
        _Plain(fresh), 60, state, config=CONFIG
    )


@st.composite
def _events(draw: st.DrawFn) -> list[AgentEvent]:
    """A session fed one event at a time; some results arrive turns after their call."""
    events: list[AgentEvent] = [UserTurn(content=draw(WORDS))]
    open_calls: list[str] = []
    for turn in range(draw(st.integers(1, 7))):
        calls = [f"t{turn}c{i}" for i in range(draw(st.integers(0, 3)))]
        events.append(
            AssistantTurn(
                content=draw(WORDS),
                tool_calls=tuple(ToolCall(id=c, name="bash") for c in calls),
                triggers=draw(TRIGGERS),
            )
        )
        for call in [*calls, *open_calls]:
            choice = draw(st.sampled_from(["result", "file", "later"]))
            if choice == "later":
                if call not in open_calls:
                    open_calls.append(call)
                continue
            if call in open_calls:
                open_calls.remove(call)
            triggers = draw(TRIGGERS)
            if choice == "file":
                path = draw(st.sampled_from(["a.py", "b.py"]))
                events.append(
                    FileRead(path=path, content=draw(WORDS), call_id=call, triggers=triggers)
                )
            else:
                events.append(ToolResult(call_id=call, content=draw(WORDS), triggers=triggers))
        extra = draw(st.sampled_from(["user", "user", "note", "compaction"]))
        if extra == "note":
            events.append(Note(content=draw(WORDS)))
        elif extra == "compaction":
            events.append(Compaction(content=draw(WORDS)))
        events.append(UserTurn(content=draw(WORDS), triggers=draw(TRIGGERS)))
    return events


def _count(view: WorkingView, nodes: Sequence[Node]) -> int:
    return sum(view.token_cache.count_node(node) for node in nodes)


def _proposal(data: st.DataObject, working: WorkingGraph, serial: int) -> Proposal | None:
    """A random edit of the current view (some are refused), or `None` when none fits."""
    view = working.snapshot()
    units = view.units()
    free = [u for u in units if not any(view[i].pinned for i in u.node_ids)]
    answers = [i for i in view.current_ids() if view[i].kind in ("tool_result", "file")]
    kinds = (["drop", "abstract", "split"] if free else []) + (["replace"] if answers else [])
    if not kinds:
        return None
    kind = data.draw(st.sampled_from(kinds))
    edit: Edit
    if kind == "replace":
        node = view[data.draw(st.sampled_from(answers))]
        words = node.text.split()
        text = " ".join(words[: len(words) // 2]) or "x"
        edit = Replace(target=node.id, replacement=replacement_for(node, [TextPart(text=text)]))
    elif kind == "drop":
        edit = Drop(targets=data.draw(st.sampled_from(free)).node_ids)
    elif kind == "split":  # half a unit: refused
        unit = data.draw(st.sampled_from(free))
        edit = Drop(targets=unit.node_ids[1:] or unit.node_ids)
    else:
        start = data.draw(st.integers(0, len(free) - 1))
        stop = data.draw(st.integers(start + 1, len(free)))
        targets = tuple(i for u in free[start:stop] for i in u.node_ids)
        summary = SummaryNode(
            id=f"summary-{serial}",
            content=(TextPart(text="summary"),),
            abstracts=targets,
            meta={"checked": True},
        )
        edit = Abstract(targets=targets, summary=summary)
    removed = (edit.target,) if isinstance(edit, Replace) else edit.targets
    added = [edit.replacement] if isinstance(edit, Replace) else []
    added += [edit.summary] if isinstance(edit, Abstract) else []
    return Proposal(
        processor=kind,
        edits=(edit,),
        tokens_before=_count(view, [view[t] for t in removed]),
        tokens_after=_count(view, added),
        base_version=view.version,
    )


class TestKeptProjection:
    @settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(events=_events(), data=st.data())
    def test_interleaved_ingests_and_edits_read_as_from_scratch(
        self, events: list[AgentEvent], data: st.DataObject
    ) -> None:
        """After any mix of ingests, edits and snapshots, the kept state equals a fresh one."""
        graph = ContextGraph(counter=WordCounter())
        working = WorkingGraph(graph)
        renderer = Renderer()
        state = TriggerState()
        snapshots: list[tuple[WorkingView, tuple[Unit, ...], int]] = []
        for serial, item in enumerate(events):
            graph.ingest([item])
            _assert_matches_scratch(working.view, state)
            _, state = evaluate(working.view, 60, state, config=CONFIG)
            action = data.draw(st.sampled_from(["none", "none", "edit", "snapshot", "render"]))
            if action == "snapshot":
                snapshot = working.snapshot()
                snapshots.append((snapshot, snapshot.units(), snapshot.total_tokens))
            elif action == "render":
                assert (
                    renderer.render(working).payload
                    == Renderer().render(_fresh(working.view)).payload
                )
            elif action == "edit":
                proposal = _proposal(data, working, serial)
                if proposal is not None:
                    before = working.view
                    try:
                        working.apply(proposal)
                    except InvariantViolation:
                        assert working.view is before
                _assert_matches_scratch(working.view, state)
        for snapshot, units, tokens in snapshots:
            assert snapshot.units() == units
            assert snapshot.total_tokens == tokens


class TestGraphUnits:
    def test_changed_units_are_listed_once_in_order(self) -> None:
        """`units_changed_since` names each unit made or grown since the mark, once."""
        graph = ContextGraph(counter=WordCounter())
        user = graph.add_user("start")
        mark = graph.unit_mark
        assistant, _ = graph.add_assistant("look", tool_calls=[{"id": "c1", "name": "bash"}])
        graph.add_user("and")
        graph.add_tool_result("c1", "late output")
        assert graph.units_changed_since(mark) == (assistant, graph.units()[2].head)
        assert graph.units_changed_since(graph.unit_mark) == ()
        assert graph.units_changed_since(0)[0] == user

    def test_a_grown_unit_is_a_new_object_in_place(self) -> None:
        """A unit that grows is replaced in place; the units before it keep their objects."""
        graph = ContextGraph(counter=WordCounter())
        graph.add_user("start")
        graph.add_assistant("look", tool_calls=[{"id": "c1", "name": "bash"}])
        before = graph.units()
        graph.add_tool_result("c1", "output")
        after = graph.units()
        assert after[0] is before[0]
        assert after[1] is not before[1]
        assert after[1].node_ids == (*before[1].node_ids, graph.transcript()[-1])


@pytest.mark.parametrize("grow_first", [False, True])
def test_a_snapshot_keeps_its_units_while_the_live_view_grows(grow_first: bool) -> None:
    """The live view copies the projection it shares with a snapshot before changing it."""
    graph = ContextGraph(counter=WordCounter())
    graph.add_user("start")
    graph.add_assistant("look", tool_calls=[{"id": "c1", "name": "bash"}])
    working = WorkingGraph(graph)
    if grow_first:
        graph.add_tool_result("c1", "output")
    snapshot = working.snapshot()
    units = snapshot.units()
    tokens = snapshot.total_tokens
    if grow_first:
        graph.add_user("next")
    else:
        graph.add_tool_result("c1", "more")
    graph.add_user("again")
    assert snapshot.units() == units
    assert snapshot.total_tokens == tokens
    assert working.units() == _fresh(working.view).units()
    assert working.total_tokens == _fresh(working.view).total_tokens


def test_a_snapshot_let_go_costs_the_next_ingest_no_copy(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The live view changes its projection in place once no snapshot reads it."""
    copies = 0
    copy = Projection.copy

    def counted(self: Projection) -> Projection:
        nonlocal copies
        copies += 1
        return copy(self)

    monkeypatch.setattr(Projection, "copy", counted)
    graph = ContextGraph(counter=WordCounter())
    graph.add_user("start")
    working = WorkingGraph(graph)
    kept = working.snapshot()
    units = kept.units()
    graph.add_assistant("one")
    _ = working.total_tokens  # brings the projection up to date
    assert kept.units() == units
    assert copies == 1  # `kept` is alive: the live view copied before it appended
    del kept
    for turn in range(3):
        working.snapshot()  # let go at once, as a render does
        graph.add_user(f"turn {turn}")
        _ = working.total_tokens  # brings the projection up to date
    assert copies == 1
    assert working.units() == _fresh(working.view).units()
    assert working.units()[0] == units[0]
    assert working.total_tokens == _fresh(working.view).total_tokens
