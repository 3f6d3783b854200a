"""The working view reads chained imported compactions as it read unchained ones.

An imported compaction abstracts only the nodes since the previous one, that one first
(`context_graph.graph.nodes.SummaryNode`). Views, their renders, `expand` and the checks on
proposals must answer what they answered when each compaction abstracted every earlier
node: each test compares with a copy of the pristine graph in that old shape.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from context_graph.errors import BudgetExceededError
from context_graph.graph.content import TextPart
from context_graph.graph.context_graph import ContextGraph
from context_graph.graph.events import (
    AgentEvent,
    AssistantTurn,
    Compaction,
    Note,
    ToolCall,
    ToolResult,
    UserTurn,
)
from context_graph.graph.nodes import SummaryNode
from context_graph.render import FORMATS, Renderer
from context_graph.testing import WordCounter
from orchestrator.persistence import SQLiteStore
from orchestrator.working import Overlay, WorkingGraph, WorkingView
from processors import Abstract, Proposal


def _graph(events: Sequence[AgentEvent]) -> ContextGraph:
    graph = ContextGraph(counter=WordCounter())
    graph.ingest(events)
    return graph


def _as_before(events: Sequence[AgentEvent]) -> ContextGraph:
    """A graph of `events` whose compactions abstract every earlier node, as they used to."""
    graph = _graph(events)
    order = graph.transcript()
    for node_id in graph.by_kind("summary"):
        node = graph[node_id]
        assert node.seq is not None
        graph._nodes[node_id] = node.model_copy(update={"abstracts": order[: node.seq]})
    return graph


def _renders(view: WorkingView | WorkingGraph, budgets: Sequence[int | None]) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for fmt in FORMATS:
        for budget in budgets:
            try:
                found[f"{fmt}/{budget}"] = Renderer(format=fmt).render(view, budget=budget).payload
            except BudgetExceededError as exc:
                found[f"{fmt}/{budget}"] = ("refused", exc.required)
    return found


def _summary(view: WorkingView, targets: Sequence[str], name: str) -> Proposal:
    """An honest proposal abstracting `targets` into a one-word summary."""
    summary = SummaryNode(
        id=f"summary-{name}",
        content=(TextPart(text=name),),
        abstracts=tuple(targets),
        meta={"checked": True},
    )
    return Proposal(
        processor="summarizer",
        edits=(Abstract(targets=tuple(targets), summary=summary),),
        tokens_before=sum(view.tokens(t) for t in targets),
        tokens_after=view.token_cache.count_node(summary),
        base_version=view.version,
    )


_SPANNING: list[AgentEvent] = [
    UserTurn(content="start the work"),
    AssistantTurn(content="running it", tool_calls=[ToolCall(id="c1", name="bash")]),
    Compaction(content="first summary", origin="claude_code"),
    UserTurn(content="in between"),
    Compaction(content="second summary", origin="claude_code"),
    ToolResult(call_id="c1", content="the late output of the call"),
    UserTurn(content="and now"),
]


class TestRenderedView:
    def test_a_compaction_stands_for_all_even_when_the_one_before_left_the_view(self) -> None:
        """With the first compaction summarized away, the second still covers its nodes."""
        graph, before = _graph(_SPANNING), _as_before(_SPANNING)
        order = graph.transcript()
        first, result = order[3], order[6]  # the first compaction; the late result
        # Unchecked edits: the late result leaves its unit, so the call's turn stands
        # alone in the view, and only the chain through `first` says it is covered.
        edits = [
            Abstract(targets=(first,), summary=SummaryNode(id="summary-a", abstracts=(first,))),
            Abstract(targets=(result,), summary=SummaryNode(id="summary-b", abstracts=(result,))),
        ]
        overlay = Overlay().with_edits(edits, 1)
        view, old = WorkingView(graph, overlay), WorkingView(before, overlay)
        assert [u.node_ids for u in view.units()] == [u.node_ids for u in old.units()]
        assert order[1] in {i for u in view.units() for i in u.node_ids}  # the call's turn
        renders = _renders(view, (None, 20))
        assert renders == _renders(old, (None, 20))
        assert "running it" not in str(renders)  # what the second compaction stands for
        assert "second summary" in str(renders["openai/None"])


class TestExpand:
    def test_expand_gives_the_same_nodes_in_either_shape(self) -> None:
        """`expand` of a compaction, and of a summary of one, is as it was."""
        graph, before = _graph(_SPANNING), _as_before(_SPANNING)
        second = graph.transcript()[5]
        for pristine in (graph, before):
            working = WorkingGraph(pristine, clock=lambda: 1.0)
            view = working.snapshot()
            tail = [i for u in view.units() for i in u.node_ids if i != second][-1:]
            assert working.expand(second) == (pristine[second],)
            working.apply(_summary(view, [second, *tail], "gist"))
            assert [n.id for n in working.expand("summary-gist")] == [second, *tail]
            assert working.roots("summary-gist") == (second, *tail)


_STEPS = ("user", "user", "note", "call", "call", "result", "result", "compaction")


@st.composite
def _sessions(draw: st.DrawFn) -> list[AgentEvent]:
    events: list[AgentEvent] = []
    open_calls: list[str] = []
    for n, step in enumerate(draw(st.lists(st.sampled_from(_STEPS), min_size=2, max_size=24))):
        if step == "user":
            events.append(UserTurn(content=f"ask {n} " * draw(st.integers(1, 12))))
        elif step == "note":
            events.append(Note(content=f"fact {n}"))
        elif step == "call":
            ids = [f"c{n}_{k}" for k in range(draw(st.integers(1, 2)))]
            calls = [ToolCall(id=i, name="bash") for i in ids]
            events.append(AssistantTurn(content=f"doing {n}", tool_calls=calls))
            open_calls.extend(ids)
        elif step == "result" and open_calls:
            size = draw(st.integers(1, 30))
            events.append(ToolResult(call_id=open_calls.pop(0), content=f"out {n} " * size))
        elif step == "compaction":
            events.append(Compaction(content=f"summary {n}", origin="claude_code"))
    return events or [UserTurn(content="alone")]


class TestViewsAsBefore:
    @settings(max_examples=60)
    @given(data=st.data(), events=_sessions())
    def test_checked_summaries_land_and_render_as_before(
        self, data: st.DataObject, events: list[AgentEvent]
    ) -> None:
        """Any run of view units summarized: the same verdict, view, expand and renders."""
        graph, before = _graph(events), _as_before(events)
        working = WorkingGraph(graph, clock=lambda: 1.0)
        old = WorkingGraph(before, clock=lambda: 1.0)
        applied: list[str] = []
        for step in range(data.draw(st.integers(1, 3))):
            units = working.snapshot().units()
            assert [u.node_ids for u in units] == [u.node_ids for u in old.snapshot().units()]
            start = data.draw(st.integers(0, len(units) - 1))
            end = data.draw(st.integers(start + 1, len(units)))
            targets = [i for u in units[start:end] for i in u.node_ids]
            proposal = _summary(working.snapshot(), targets, f"s{step}")
            assert working.check(proposal) == old.check(proposal)
            if not working.check(proposal):
                assert working.apply(proposal) == old.apply(proposal)
                applied.append(f"summary-s{step}")
            for summary in applied:
                # Node ids: the compaction nodes themselves differ in shape.
                assert [n.id for n in working.expand(summary)] == [
                    n.id for n in old.expand(summary)
                ]
        full = Renderer(format="openai").render(old).tokens
        budgets = (None, full // 2)
        assert _renders(working, budgets) == _renders(old, budgets)


def _steps(count: int) -> list[AgentEvent]:
    events: list[AgentEvent] = []
    for i in range(count):
        events += [
            UserTurn(content=f"ask {i} " * 5),
            AssistantTurn(content=f"doing {i}", tool_calls=[ToolCall(id=f"c{i}", name="bash")]),
            ToolResult(call_id=f"c{i}", content=f"output {i} " * 20),
            Compaction(content=f"summary {i}", origin="claude_code"),
            UserTurn(content=f"after {i}"),
        ]
    return events


def _last_user_summarized(working: WorkingGraph, name: str) -> Proposal:
    view = working.snapshot()
    (last,) = [u for u in view.units() if u.kind == "user"][-1:]
    return _summary(view, last.node_ids, name)


class TestSessionFiles:
    def test_versions_in_a_session_file_are_those_it_had_before_the_chain(
        self, tmp_path: Path
    ) -> None:
        """Audit versions match the ones commit 74849a7 wrote, so its files still open."""
        path, events = tmp_path / "session.db", _steps(6)
        with SQLiteStore.open(path, counter=WordCounter(), durable=False) as store:
            session = store.restore()
            session.raw.ingest(events[:12])
            session.raw.ingest(events[12:20])
            session.working.apply(_last_user_summarized(session.working, "one"))
            session.raw.ingest(events[20:])
            session.working.apply(_last_user_summarized(session.working, "two"))
            audit, units = session.working.audit(), session.working.units()
        # Recorded on 74849a7 for this very session: each compaction's edges counted.
        assert [entry.version for entry in audit] == [108, 199]
        assert session.raw.version == 197
        with SQLiteStore.open(path, counter=WordCounter(), durable=False) as store:
            again = store.restore()
            assert again.working.audit() == audit
            assert again.working.units() == units
