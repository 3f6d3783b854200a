"""Projections reuse whole chunks of pristine units that the edits cannot reach.

`Projector._project` walks the pristine units a chunk (`segments.CHUNK` units) at a
time and reuses, without a look at its units, every chunk whose `reached` set misses the
dirty ids. With small chunks, so that the short random sessions span many, every view
after edits, batches, ingests and snapshots must still read as one projected from
scratch, and hand out the very same Unit objects for the units that did not change (the
renderer reuses their messages). An edit near the end of a long history, a restore
too, looks at a chunk or two, not at every unit.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from unittest import mock

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from context_graph import AgentEvent, AssistantTurn, Compaction, ContextGraph, TextPart, UserTurn
from context_graph.graph.nodes import SummaryNode
from context_graph.graph.units import Unit
from context_graph.testing import WordCounter
from orchestrator.agent_tools.expander import RestorePlan, plan_restore
from orchestrator.working import WorkingGraph, WorkingView, projection
from orchestrator.working.invariants import check_proposal
from orchestrator.working.segments import CHUNK
from processors import Abstract, Drop, Proposal
from tests.orchestrator.working.test_projection_edits import (
    _apply,
    _assert_as_fresh,
    _count,
    _events,
    _proposal,
)


@contextmanager
def _chunks_of(size: int) -> Iterator[None]:
    with mock.patch.object(projection, "CHUNK", size):
        yield


def _assert_same_objects(before: WorkingView, after: WorkingView) -> None:
    """Each unit of `after` equal to one of `before` is that very object."""
    earlier = {unit: unit for unit in before.units()}
    for unit in after.units():
        if unit in earlier:
            assert earlier[unit] is unit


class TestChunkedProjection:
    @settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(events=_events(), data=st.data(), size=st.sampled_from([1, 2, 3]))
    def test_small_chunks_read_as_from_scratch(
        self, events: list[AgentEvent], data: st.DataObject, size: int
    ) -> None:
        """Applied edits, batches, snapshots and ingests read as fresh views, objects kept."""
        with _chunks_of(size):
            graph = ContextGraph(counter=WordCounter())
            working = WorkingGraph(graph)
            for serial, event in enumerate(events):
                graph.ingest([event])
                _assert_as_fresh(working.view)
                snapshot = working.snapshot()
                for step in range(data.draw(st.integers(0, 3))):
                    before = working.view
                    first = _proposal(data, before, f"{serial}.{step}")
                    if first is None:
                        continue
                    after = before.with_proposal(first)
                    second = _proposal(data, after, f"{serial}.{step}b")
                    _apply(working, [first] if second is None else [first, second])
                    _assert_as_fresh(working.view)
                    _assert_same_objects(before, working.view)
                # A snapshot edited (as a processor's check does) reads as fresh too.
                proposal = _proposal(data, snapshot, f"{serial}.snap")
                if proposal is not None and not check_proposal(proposal, snapshot):
                    _assert_as_fresh(snapshot.with_proposal(proposal))
                _assert_as_fresh(snapshot)


def _long_session(graph: ContextGraph, turns: int) -> None:
    for turn in range(turns):
        graph.add_user(f"question {turn} alpha beta")
        graph.add_assistant(f"answer {turn} alpha beta gamma")


def _apply_one(working: WorkingGraph, edit: Abstract | Drop) -> None:
    view = working.view
    removed = [view[t] for t in edit.targets]
    added = [edit.summary] if isinstance(edit, Abstract) else []
    working.apply(
        Proposal(
            processor="test",
            edits=(edit,),
            tokens_before=_count(view, removed),
            tokens_after=_count(view, added),
            base_version=view.version,
        )
    )


def _summarize(working: WorkingGraph, count: int, summary_id: str) -> None:
    """Abstract the first `count` units of the view into one summary."""
    targets = tuple(i for u in working.view.units()[:count] for i in u.node_ids)
    summary = SummaryNode(
        id=summary_id,
        content=(TextPart(text="summary"),),
        abstracts=targets,
        meta={"checked": True},
    )
    _apply_one(working, Abstract(targets=targets, summary=summary))
    working.view.units()


def _half_summarized() -> tuple[ContextGraph, WorkingGraph]:
    """A long history whose first half one summary (`summary-old`) stands for."""
    graph = ContextGraph(counter=WordCounter())
    _long_session(graph, 40 * CHUNK)
    working = WorkingGraph(graph)
    _summarize(working, len(working.view.units()) // 2, "summary-old")
    return graph, working


def _restore(working: WorkingGraph, node_id: str, *, whole: bool = True) -> None:
    """Apply the restore `context_expand` would make of `node_id`."""
    plan = plan_restore(working.view, node_id, whole=whole)
    assert isinstance(plan, RestorePlan)
    working.apply(plan.proposal)


class TestEditCost:
    def test_an_edit_at_the_end_looks_at_one_chunk(self) -> None:
        """A drop near the end of a long, compacted history visits a chunk, not the history."""
        graph = ContextGraph(counter=WordCounter())
        _long_session(graph, 40 * CHUNK)
        working = WorkingGraph(graph)
        # Compact the first half, so that most pristine units have a segment.
        _summarize(working, len(working.view.units()) // 2, "summary-old")
        last = working.view.units()[-2]
        _apply_one(working, Drop(targets=last.node_ids))
        working.view.units()
        visited = working.view._projector._current().visited
        assert 0 < visited <= 2 * CHUNK < len(graph.units()) // 10
        _assert_as_fresh(working.view)

    def test_a_restore_at_the_end_looks_at_one_chunk(self) -> None:
        """Restoring a drop near the end of a long, compacted history visits a chunk.

        A restore once projected the whole view afresh: a compaction that took back its
        own cuts paid for every unit of the session, a cost that grew with it.
        """
        graph, working = _half_summarized()
        before = working.view
        last = before.units()[-2]
        _apply_one(working, Drop(targets=last.node_ids))
        _restore(working, last.node_ids[0])
        assert working.view.units() == before.units()
        visited = working.view._projector._current().visited
        assert 0 < visited <= 2 * CHUNK < len(graph.units()) // 10
        _assert_as_fresh(working.view)

    def test_restoring_a_summary_of_a_summary_brings_back_what_it_placed(self) -> None:
        """A one-level restore of a summary of a summary: its parts stand again."""
        graph, working = _half_summarized()
        after_old = working.view.units()
        _summarize(working, 3, "summary-new")
        _restore(working, "summary-new", whole=False)
        assert working.view.units() == after_old
        _assert_as_fresh(working.view)
        # And a whole restore of the old one: the first half stands as it was ingested.
        _restore(working, "summary-old")
        assert working.view.units() == tuple(graph.units())
        _assert_as_fresh(working.view)

    def test_a_summary_of_a_summary_looks_at_what_it_places(self) -> None:
        """Abstracting a summary of half the history visits the chunks that place it."""
        graph, working = _half_summarized()
        # The old summary and the two units after it: every unit of the first half
        # leads into the new summary now, which the first of them places.
        _summarize(working, 3, "summary-new")
        assert working.units()[0].head == "summary-new"
        visited = working.view._projector._current().visited
        assert 0 < visited <= 2 * CHUNK < len(graph.units()) // 10
        _assert_as_fresh(working.view)
        # The units of the first half still lead on from there: a later edit reaches them.
        _summarize(working, 2, "summary-newer")
        assert working.units()[0].head == "summary-newer"
        _assert_as_fresh(working.view)


class TestInternedUnits:
    """Views of one working graph hand out one object per unit; only the current view's
    units are kept when the interned ones pile up."""

    def _piled_up(self) -> tuple[WorkingGraph, Unit]:
        """A summarized history whose interned units hold many the view no longer has."""
        graph = ContextGraph(counter=WordCounter())
        _long_session(graph, 20)
        working = WorkingGraph(graph)
        _summarize(working, 4, "summary-old")
        summary = working.view.units()[0]
        assert summary.head == "summary-old"
        # What earlier views made and no view hands out any more.
        gone = [Unit(f"gone-{i}", "user", (f"gone-{i}",)) for i in range(500)]
        working._interned.update((unit, unit) for unit in gone)
        return working, summary

    def test_a_view_made_to_check_a_proposal_keeps_the_current_views_units(self) -> None:
        """Projecting a checked view (which lacks the summary) forgets none of the current
        view's units: pruning to its units made the next view build them anew."""
        working, summary = self._piled_up()
        targets = (*summary.node_ids, *working.view.units()[1].node_ids)
        checked = _unchecked(working.view, targets, "summary-checked")
        assert summary not in checked.units()
        assert working._interned.get(summary) is summary

    def test_an_apply_forgets_what_the_current_view_does_not_hand_out(self) -> None:
        """After an apply the interned units are the current view's (the pile-up is gone)."""
        working, summary = self._piled_up()
        last = working.view.units()[-2]
        _apply_one(working, Drop(targets=last.node_ids))
        units = working.view.units()
        assert units[0] is summary
        assert set(working._interned) <= set(units)
        assert working._interned.get(summary) is summary


def _unchecked(view: WorkingView, targets: tuple[str, ...], summary_id: str) -> WorkingView:
    """`view` with `targets` abstracted into a new summary, unchecked (pinned ones too)."""
    summary = SummaryNode(
        id=summary_id,
        content=(TextPart(text="summary"),),
        abstracts=targets,
        meta={"checked": True},
    )
    proposal = Proposal(
        processor="test",
        edits=(Abstract(targets=targets, summary=summary),),
        tokens_before=_count(view, [view[t] for t in targets]),
        tokens_after=_count(view, [summary]),
    )
    after = view.with_proposal(proposal)
    after.units()
    return after


class TestMovedSummaries:
    def test_a_unit_that_leads_on_places_the_summary_once_its_placer_is_hidden(self) -> None:
        """After a summary of summaries, an imported compaction hides the unit that placed it.

        The next unit leading into it places it then, though that unit's segment was
        reused across the summary of summaries (`Chunk.extra` remembers where it leads).
        """
        with _chunks_of(1):
            graph = ContextGraph(counter=WordCounter())
            graph.ingest(
                [
                    UserTurn(content="question alpha beta"),
                    AssistantTurn(content="answer alpha beta gamma"),
                    UserTurn(content="pinned constraint alpha beta", pinned=True),
                    AssistantTurn(content="second answer alpha beta"),
                    UserTurn(content="next question alpha"),
                ]
            )
            working = WorkingGraph(graph)
            view = working.view
            view.units()
            _, answer, pinned, second, _ = graph.transcript()
            view = _unchecked(view, (answer, pinned), "summary-first")
            view = _unchecked(view, ("summary-first", second), "summary-second")
            _assert_as_fresh(view)
            # Covers every unit so far but the pinned one, which leads on into the summary.
            graph.ingest([Compaction(content="imported summary alpha")])
            assert "summary-second" in view.current_ids()
            _assert_as_fresh(view)
