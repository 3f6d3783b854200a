"""After an applied edit, the working view projects as if from scratch.

A view made by `with_proposal` reuses the projection of the view it was made from: the
pristine units a pristine summary covers, and every pristine unit's projection that the
edits did not touch. A live view that cannot simply append what an ingest added also
reuses its own. Whatever the edits (replacements of replacements, masks, drops,
summaries that abstract earlier summaries or imported ones, restores of any of them,
whole or one level, several edits in one proposal, several proposals in one batch) and
however they interleave with ingests, late results and snapshots, the view must read
exactly as a fresh one over the same graph and overlay.
"""

from __future__ import annotations

from collections.abc import Sequence

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
    SystemPrompt,
    TextPart,
    ToolCall,
    ToolResult,
    UserTurn,
)
from context_graph.graph.nodes import Node, SummaryNode, TriggerSpec
from context_graph.graph.units import Unit
from context_graph.render import Renderer
from context_graph.testing import WordCounter
from orchestrator.agent_tools.expander import RestorePlan, plan_restore
from orchestrator.compaction.triggers import TriggerConfig, TriggerState, evaluate
from orchestrator.working import WorkingGraph, WorkingView
from orchestrator.working.figures import figures_of
from orchestrator.working.invariants import check_proposal
from processors import Abstract, Drop, Edit, Proposal, Replace, replacement_for

WORDS = st.lists(
    st.sampled_from(["alpha", "beta", "gamma", "delta", "eps", "zeta"]), min_size=1, max_size=10
).map(" ".join)
TRIGGERS = st.lists(
    st.one_of(
        st.builds(TriggerSpec, kind=st.just("size"), threshold=st.sampled_from([3, 8])),
        st.builds(TriggerSpec, kind=st.just("age"), threshold=st.integers(0, 2)),
        st.builds(TriggerSpec, kind=st.just("consumed")),
    ),
    max_size=1,
).map(tuple)
CONFIG = TriggerConfig(max_messages=10, max_tool_output_tokens=25)
REPLACEABLE = ("tool_result", "file", "user", "summary", "subagent_result")


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
    """The same graph, overlay and (for a snapshot) limit, projected from scratch."""
    return view.fresh_copy()


def _assert_as_fresh(view: WorkingView) -> None:
    """Every answer the view gives about its units equals a fresh view's."""
    fresh = _fresh(view)
    units = view.units()
    assert units == fresh.units()
    assert view.current_ids() == fresh.current_ids()
    for unit in units:
        for node_id in unit.node_ids:
            assert view.unit_of(node_id) == unit
    known = (*view.transcript(), *view.overlay.derived)
    assert [view.is_current(i) for i in known] == [fresh.is_current(i) for i in known]
    assert view.figures() == figures_of(fresh.units(), fresh.__getitem__, fresh.tokens)
    assert view.total_tokens == fresh.total_tokens
    assert view.answers() == fresh.answers()
    state = TriggerState()
    assert evaluate(view, 50, state, config=CONFIG) == evaluate(
        _Plain(fresh), 50, state, config=CONFIG
    )


@st.composite
def _events(draw: st.DrawFn) -> list[AgentEvent]:
    """A session, maybe resumed from an imported summary, with late results and notes."""
    events: list[AgentEvent] = []
    if draw(st.booleans()):
        events.append(SystemPrompt(content=draw(WORDS)))
    if draw(st.booleans()):
        events.append(Compaction(content=draw(WORDS)))
    events.append(UserTurn(content=draw(WORDS)))
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
            choice = draw(st.sampled_from(["result", "result", "file", "later"]))
            if choice == "later":
                if call not in open_calls:
                    open_calls.append(call)
                continue
            if call in open_calls:
                open_calls.remove(call)
            if choice == "file":
                path = draw(st.sampled_from(["a.py", "b.py"]))
                events.append(FileRead(path=path, content=draw(WORDS), call_id=call))
            else:
                events.append(
                    ToolResult(call_id=call, content=draw(WORDS), triggers=draw(TRIGGERS))
                )
        extra = draw(st.sampled_from(["user", "user", "user", "note", "compaction"]))
        if extra == "note":
            events.append(Note(content=draw(WORDS)))
        elif extra == "compaction":
            events.append(Compaction(content=draw(WORDS)))
        events.append(UserTurn(content=draw(WORDS)))
    return events


def _count(view: WorkingView, nodes: Sequence[Node]) -> int:
    return sum(view.token_cache.count_node(node) for node in nodes)


def _shorter(node: Node, masked: bool) -> Node:
    words = node.text.split()
    text = "[masked]" if masked else " ".join(words[: len(words) // 2]) or "x"
    return replacement_for(node, [TextPart(text=text)])


def _edits(data: st.DataObject, view: WorkingView, serial: str) -> list[Edit]:
    """One to three edits of disjoint parts of `view` (some of them refused)."""
    units = view.units()
    free = [u for u in units if not any(view[i].pinned for i in u.node_ids)]
    replaceable = [i for i in view.current_ids() if view[i].kind in REPLACEABLE]
    edits: list[Edit] = []
    used: set[str] = set()
    for number in range(data.draw(st.integers(1, 3))):
        kinds = (["drop", "abstract", "abstract"] if free else []) + (
            ["replace", "mask"] if replaceable else []
        )
        if not kinds:
            break
        kind = data.draw(st.sampled_from(kinds))
        if kind in ("replace", "mask"):
            target = data.draw(st.sampled_from(replaceable))
            if target in used:
                continue
            used.add(target)
            replacement = _shorter(view[target], masked=kind == "mask")
            edits.append(Replace(target=target, replacement=replacement))
        elif kind == "drop":
            unit = data.draw(st.sampled_from(free))
            if used.intersection(unit.node_ids):
                continue
            used.update(unit.node_ids)
            edits.append(Drop(targets=unit.node_ids))
        else:
            # Any units, in view order: a run, or a pick that skips some (summaries of
            # earlier summaries and of imported ones included).
            picked = data.draw(st.lists(st.sampled_from(free), min_size=1, unique=True))
            chosen = [u for u in free if u in picked]
            targets = tuple(i for u in chosen for i in u.node_ids)
            if used.intersection(targets):
                continue
            used.update(targets)
            summary = SummaryNode(
                id=f"summary-{serial}-{number}",
                content=(TextPart(text="summary"),),
                abstracts=targets,
                meta={"checked": True},
            )
            edits.append(Abstract(targets=targets, summary=summary))
    return edits


def _restore(data: st.DataObject, view: WorkingView) -> Proposal | None:
    """A restore of a compacted piece of `view` (whole or one level), or `None`."""
    overlay = view.overlay
    pieces = sorted(
        {*(i for i in overlay.derived if view.is_current(i)), *overlay.dropped} - set(overlay.kept)
    )
    if not pieces:
        return None
    plan = plan_restore(view, data.draw(st.sampled_from(pieces)), whole=data.draw(st.booleans()))
    return plan.proposal if isinstance(plan, RestorePlan) else None


def _proposal(data: st.DataObject, view: WorkingView, serial: str) -> Proposal | None:
    """A random proposal against `view` (a restore, one time in four), or `None`."""
    if data.draw(st.integers(0, 3)) == 0:
        return _restore(data, view)
    edits = _edits(data, view, serial)
    if not edits:
        return None
    removed: list[Node] = []
    added: list[Node] = []
    for edit in edits:
        if isinstance(edit, Replace):
            removed.append(view[edit.target])
            added.append(edit.replacement)
        else:
            removed.extend(view[t] for t in edit.targets)
            if isinstance(edit, Abstract):
                added.append(edit.summary)
    return Proposal(
        processor="random",
        edits=tuple(edits),
        tokens_before=_count(view, removed),
        tokens_after=_count(view, added),
        base_version=view.version,
    )


def _apply(working: WorkingGraph, proposals: Sequence[Proposal]) -> None:
    before = working.view
    try:
        working.apply_batch(proposals)
    except InvariantViolation:
        assert working.view is before


class TestEditedProjection:
    @settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(events=_events(), data=st.data())
    def test_applied_edits_read_as_from_scratch(
        self, events: list[AgentEvent], data: st.DataObject
    ) -> None:
        """Views after applied edits, batches and ingests read as fresh views."""
        graph = ContextGraph(counter=WordCounter())
        working = WorkingGraph(graph)
        renderer = Renderer()
        for serial, event in enumerate(events):
            graph.ingest([event])
            _assert_as_fresh(working.view)
            for step in range(data.draw(st.integers(0, 3))):
                action = data.draw(st.sampled_from(["edit", "edit", "batch", "render"]))
                if action == "render":
                    payload = renderer.render(working).payload
                    assert payload == Renderer().render(_fresh(working.view)).payload
                    continue
                first = _proposal(data, working.view, f"{serial}.{step}")
                if first is None:
                    continue
                if action == "batch":
                    # The second proposal is made against the view the first leaves.
                    after = working.view.with_proposal(first)
                    second = _proposal(data, after, f"{serial}.{step}b")
                    _apply(working, [first] if second is None else [first, second])
                else:
                    _apply(working, [first])
                _assert_as_fresh(working.view)

    @settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(events=_events(), data=st.data())
    def test_views_made_from_views_read_as_from_scratch(
        self, events: list[AgentEvent], data: st.DataObject
    ) -> None:
        """Chains of `with_proposal` (projected or not in between) read as fresh views.

        Also from snapshots, and from a live view that ingests went past.
        """
        graph = ContextGraph(counter=WordCounter())
        working = WorkingGraph(graph)
        pending: list[WorkingView] = []
        for serial, event in enumerate(events):
            graph.ingest([event])
            # Made before this ingest: their first projection starts from a stale one.
            for view in pending:
                _assert_as_fresh(view)
            pending.clear()
            start = data.draw(st.sampled_from(["live", "snapshot"]))
            view = working.view if start == "live" else working.snapshot()
            if data.draw(st.booleans()):
                view.units()
            for step in range(data.draw(st.integers(1, 3))):
                proposal = _proposal(data, view, f"{serial}.{step}")
                if proposal is None or check_proposal(proposal, view):
                    break
                view = view.with_proposal(proposal)
                if data.draw(st.booleans()):
                    _assert_as_fresh(view)
            if data.draw(st.booleans()):
                pending.append(view)
            else:
                _assert_as_fresh(view)
            if start == "live" and view is not working.view and data.draw(st.booleans()):
                # Keep some edits, so later views start from an edited one.
                proposal = _proposal(data, working.view, f"{serial}.kept")
                if proposal is not None:
                    _apply(working, [proposal])


def _abstract(working: WorkingGraph, units: Sequence[Unit], summary_id: str) -> None:
    view = working.view
    targets = tuple(i for u in units for i in u.node_ids)
    summary = SummaryNode(
        id=summary_id,
        content=(TextPart(text="summary"),),
        abstracts=targets,
        meta={"checked": True},
    )
    working.apply(
        Proposal(
            processor="summarize",
            edits=(Abstract(targets=targets, summary=summary),),
            tokens_before=_count(view, [view[t] for t in targets]),
            tokens_after=_count(view, [summary]),
            base_version=view.version,
        )
    )


def test_a_summary_of_summaries_reads_as_from_scratch() -> None:
    """A summary abstracting an imported summary and an earlier one is placed as fresh."""
    graph = ContextGraph(counter=WordCounter())
    graph.ingest([Compaction(content="imported summary of what came before")])
    working = WorkingGraph(graph)
    for turn in range(4):
        graph.add_user(f"question {turn} alpha beta gamma")
        graph.add_assistant(f"answer {turn} alpha beta gamma delta")
    _assert_as_fresh(working.view)
    for serial in range(3):
        units = working.view.units()
        _abstract(working, units[: len(units) // 2 + 1], f"summary-{serial}")
        _assert_as_fresh(working.view)
        assert working.units()[0].head == f"summary-{serial}"
        graph.add_user(f"more {serial} alpha beta")
        _assert_as_fresh(working.view)


class TestSummaryPlace:
    """Where a summary stands when the unit that first reached it is covered or uncovered."""

    def _two_open_turns(self) -> tuple[ContextGraph, WorkingGraph]:
        """Two turns with open calls in one summary; the second's result arrives pinned.

        So an imported summary can cover the first turn, never the second.
        """
        graph = ContextGraph(counter=WordCounter())
        working = WorkingGraph(graph)
        graph.add_user("start alpha beta gamma")
        graph.add_assistant("first alpha beta gamma", tool_calls=[{"id": "c1", "name": "bash"}])
        graph.add_assistant("second alpha beta gamma", tool_calls=[{"id": "c2", "name": "sh"}])
        units = working.units()
        _abstract(working, units[1:3], "summary-x")
        graph.add_tool_result("c2", "late result alpha beta", pinned=True)
        _assert_as_fresh(working.view)
        return graph, working

    def test_covering_the_first_unit_moves_its_summary_on(self) -> None:
        """An imported summary that covers the unit placing a summary moves it to the next."""
        graph, working = self._two_open_turns()
        graph.ingest([Compaction(content="imported summary")])
        _assert_as_fresh(working.view)
        heads = [u.head for u in working.units()]
        assert heads[0] == "summary-x"
        assert heads.count("summary-x") == 1

    def test_uncovering_the_first_unit_moves_its_summary_back(self) -> None:
        """A covered unit that a late result uncovers places the summary again, once."""
        graph, working = self._two_open_turns()
        graph.ingest([Compaction(content="imported summary")])
        _assert_as_fresh(working.view)
        graph.add_tool_result("c1", "later result alpha beta")
        _assert_as_fresh(working.view)
        assert sum(u.head == "summary-x" for u in working.units()) == 1

    def test_an_unchecked_edit_behind_a_summary_moves_it_on(self) -> None:
        """Replacing compacted nodes (unchecked) of the unit placing a summary moves it on."""
        graph = ContextGraph(counter=WordCounter())
        working = WorkingGraph(graph)
        graph.add_user("start alpha beta gamma")
        for turn in range(2):
            graph.add_assistant(f"turn {turn} alpha", tool_calls=[{"id": f"c{turn}", "name": "sh"}])
            graph.add_tool_result(f"c{turn}", f"result {turn} alpha beta gamma")
        first, second = working.units()[1:3]
        _abstract(working, [first, second], "summary-x")
        view = working.view
        assert view.units()[1].head == "summary-x"
        edits = tuple(
            Replace(target=i, replacement=_shorter(view[i], masked=True)) for i in first.node_ids
        )
        edited = view.with_proposal(Proposal(processor="mask", edits=edits))
        _assert_as_fresh(edited)
        heads = [u.head for u in edited.units()]
        assert heads.index("summary-x") == 2

    def test_an_unchecked_edit_of_a_compacted_replacement_reads_as_from_scratch(self) -> None:
        """Replacing (unchecked) a replacement that a summary abstracts reprojects afresh."""
        graph = ContextGraph(counter=WordCounter())
        working = WorkingGraph(graph)
        graph.add_user("start alpha beta gamma")
        graph.add_assistant("turn alpha beta", tool_calls=[{"id": "c0", "name": "sh"}])
        result = graph.add_tool_result("c0", "result alpha beta gamma delta eps zeta")
        view = working.view
        replacement = _shorter(view[result], masked=False)
        working.apply(
            Proposal(
                processor="truncate",
                edits=(Replace(target=result, replacement=replacement),),
                tokens_before=_count(view, [view[result]]),
                tokens_after=_count(view, [replacement]),
            )
        )
        _abstract(working, working.units()[1:], "summary-x")
        view = working.view
        assert [u.head for u in view.units()][1:] == ["summary-x"]
        masked = _shorter(replacement, masked=True)
        edited = view.with_proposal(
            Proposal(processor="mask", edits=(Replace(target=replacement.id, replacement=masked),))
        )
        _assert_as_fresh(edited)
        assert edited.is_current(masked.id)
