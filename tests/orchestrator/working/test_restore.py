"""`Restore` edits through the working graph: what comes back, and what is refused."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from context_graph import ContextGraph, InvariantViolation, TextPart
from context_graph.graph.nodes import SummaryNode
from context_graph.render import FORMATS, Renderer
from context_graph.testing import WordCounter
from context_graph.validate.request import validate
from orchestrator.agent_tools.expander import plan_restore
from orchestrator.working.buffer import WorkingGraph
from orchestrator.working.restores import restore_proposal
from processors import Abstract, Drop, Proposal, Replace, replacement_for
from processors.base import Restore


@pytest.fixture(name="graph")
def graph_fixture() -> ContextGraph:
    """A short coding session: two tool steps, three user turns."""
    graph = ContextGraph(counter=WordCounter())
    graph.add_system("you are a careful coding agent")
    graph.add_user("fix the failing test in the parser module please")
    graph.add_assistant("let me look", tool_calls=[{"id": "c1", "name": "bash"}])
    graph.add_tool_result("c1", "FAILED test_parser.py " + "one two three four " * 20)
    graph.add_user("any progress on that")
    graph.add_assistant("trying a fix", tool_calls=[{"id": "c2", "name": "bash"}])
    graph.add_tool_result("c2", "passed " * 40)
    graph.add_user("great thanks")
    return graph


def _result(graph: ContextGraph, index: int) -> str:
    return [n.id for n in graph if n.kind == "tool_result"][index]


def _mask(working: WorkingGraph, node_id: str, text: str = "[masked]") -> str:
    """Replace `node_id` by a short copy through the checker; the copy's id."""
    view = working.snapshot()
    copy = replacement_for(view[node_id], [TextPart(text=text)])
    count = view.token_cache.count_node
    working.apply(
        Proposal(
            processor="mask",
            edits=(Replace(target=node_id, replacement=copy),),
            tokens_before=count(view[node_id]),
            tokens_after=count(copy),
            base_version=view.version,
        )
    )
    return copy.id


def _summarize(working: WorkingGraph, ids: Sequence[str], name: str = "summary-1") -> str:
    view = working.snapshot()
    node = SummaryNode(
        id=name,
        content=(TextPart(text="did things"),),
        abstracts=tuple(ids),
        meta={"checked": True},
    )
    count = view.token_cache.count_node
    working.apply(
        Proposal(
            processor="summarize",
            edits=(Abstract(targets=tuple(ids), summary=node),),
            tokens_before=sum(count(view[i]) for i in ids),
            tokens_after=count(node),
            base_version=view.version,
        )
    )
    return node.id


class TestRestore:
    """A restore puts the pristine nodes back, checked like any edit."""

    def test_a_masked_output_comes_back(self, graph: ContextGraph) -> None:
        """Restoring a replacement shows the pristine node again, in its unit."""
        working = WorkingGraph(graph)
        before = Renderer().render(working).payload
        target = _result(graph, 0)
        copy = _mask(working, target)
        entry = working.apply(restore_proposal(working.view, (copy,)))
        assert working.is_current(target)
        assert Renderer().render(working).payload == before
        assert entry.removed == (copy,) and entry.added == (target,)
        assert entry.tokens_saved < 0

    def test_a_chain_comes_back_to_the_pristine_node(self, graph: ContextGraph) -> None:
        """A copy of a copy restores the original, not the copy in between."""
        working = WorkingGraph(graph)
        target = _result(graph, 0)
        first = _mask(working, target, "[a shorter copy of it all]")
        second = _mask(working, first, "[short]")
        working.apply(restore_proposal(working.view, (second,)))
        assert working.is_current(target)
        assert working.view.overlay.undone.keys() == {first, second}
        assert working.expand(second) == (graph[target],)  # still explained

    def test_the_same_copy_can_be_made_again(self, graph: ContextGraph) -> None:
        """Masked, restored and masked again: the same id is fresh again."""
        working = WorkingGraph(graph)
        target = _result(graph, 0)
        copy = _mask(working, target)
        working.apply(restore_proposal(working.view, (copy,)))
        assert _mask(working, target) == copy
        assert working.is_current(copy)

    def test_a_summary_comes_back_whole(self, graph: ContextGraph) -> None:
        """Restoring a summary brings back every unit it stood for, masked members too."""
        working = WorkingGraph(graph)
        before = [u.node_ids for u in working.units()]
        masked = _mask(working, _result(graph, 0))
        units = working.units()
        ids = [*units[2].node_ids, *units[3].node_ids]
        assert masked in ids
        summary = _summarize(working, ids)
        plan = plan_restore(working.view, _result(graph, 0))
        assert not isinstance(plan, str) and hasattr(plan, "proposal")
        working.apply(plan.proposal)
        assert [u.node_ids for u in working.units()] == before
        assert summary in working.view.overlay.undone

    def test_one_level_brings_back_what_a_summary_was_made_from(self, graph: ContextGraph) -> None:
        """`whole=False` undoes the summary only: its masked member stands masked again."""
        working = WorkingGraph(graph)
        masked = _mask(working, _result(graph, 0))
        units = working.units()
        summary = _summarize(working, [*units[2].node_ids, *units[3].node_ids])
        proposal = restore_proposal(working.view, (summary,), whole=False)
        working.apply(proposal)
        assert working.is_current(masked)
        assert not working.is_current(_result(graph, 0))
        assert working.units() == working.view.fresh_copy().units()

    def test_one_level_of_a_rolled_summary_brings_the_earlier_summary_back(
        self, graph: ContextGraph
    ) -> None:
        """A summary of a summary, restored one level, shows the earlier summary again."""
        working = WorkingGraph(graph)
        units = working.units()
        inner = _summarize(working, [*units[2].node_ids, *units[3].node_ids])
        units = working.units()
        outer_ids = [i for unit in units[2:5] for i in unit.node_ids]
        assert outer_ids[0] == inner
        outer = _summarize(working, outer_ids, "summary-2")
        working.apply(restore_proposal(working.view, (outer,), whole=False))
        assert working.is_current(inner)
        assert not working.is_current(outer)
        assert working.units() == working.view.fresh_copy().units()

    def test_the_projection_after_a_restore_is_the_fresh_one(self, graph: ContextGraph) -> None:
        """What the view keeps up to date equals projecting it from scratch."""
        working = WorkingGraph(graph)
        copy = _mask(working, _result(graph, 1))
        working.units()
        working.apply(restore_proposal(working.view, (copy,)))
        assert working.units() == working.view.fresh_copy().units()


class TestRefused:
    """A restore that would break a rule changes nothing."""

    def test_mixed_with_compaction(self, graph: ContextGraph) -> None:
        """A restore and a replacement in one proposal are refused."""
        working = WorkingGraph(graph)
        copy = _mask(working, _result(graph, 0))
        view = working.snapshot()
        other = replacement_for(view[_result(graph, 1)], [TextPart(text="x")])
        proposal = Proposal(
            processor="mixed",
            edits=(Restore(target=copy), Replace(target=_result(graph, 1), replacement=other)),
            purpose="restore",
            base_version=view.version,
        )
        problems = working.check(proposal)
        assert any(p.startswith("restores_checked:") for p in problems)

    def test_a_restore_outside_a_restore_proposal(self, graph: ContextGraph) -> None:
        """A Restore edit in a compaction proposal is refused."""
        working = WorkingGraph(graph)
        copy = _mask(working, _result(graph, 0))
        good = restore_proposal(working.view, (copy,))
        bad = good.model_copy(update={"purpose": "compact"})
        with pytest.raises(InvariantViolation, match="restores_checked"):
            working.apply(bad)
        assert not working.is_current(_result(graph, 0))

    def test_wrong_counts(self, graph: ContextGraph) -> None:
        """A restore must count what it adds exactly."""
        working = WorkingGraph(graph)
        copy = _mask(working, _result(graph, 0))
        bad = restore_proposal(working.view, (copy,)).model_copy(update={"tokens_after": 1})
        with pytest.raises(InvariantViolation, match=r"tokens_reduced: .* claims tokens_after=1"):
            working.apply(bad)

    def test_a_pristine_node(self, graph: ContextGraph) -> None:
        """Nothing compacted a pristine node in view: there is nothing to restore."""
        working = WorkingGraph(graph)
        proposal = restore_proposal(working.view, (_result(graph, 0),))
        assert any("nothing compacted away" in p for p in working.check(proposal))

    def test_a_redacted_copy(self, graph: ContextGraph) -> None:
        """A safety replacement is never undone (the secret would come back)."""
        working = WorkingGraph(graph)
        target = _result(graph, 0)
        view = working.snapshot()
        text = view[target].text.replace("FAILED", "[REDACTED]")
        copy = replacement_for(view[target], [TextPart(text=text)])
        count = view.token_cache.count_node
        working.apply(
            Proposal(
                processor="redact",
                edits=(Replace(target=target, replacement=copy),),
                tokens_before=count(view[target]),
                tokens_after=count(copy),
                base_version=view.version,
                purpose="safety",
            )
        )
        problems = working.check(restore_proposal(working.view, (copy.id,)))
        assert any("redacted copy" in p for p in problems)
        # Masked after redaction, a restore brings back the redacted copy.
        masked = _mask(working, copy.id, "[m]")
        working.apply(restore_proposal(working.view, (masked,)))
        assert working.is_current(copy.id) and not working.is_current(target)

    def test_half_a_dropped_unit(self, graph: ContextGraph) -> None:
        """Restoring one node of a dropped unit alone is refused; the whole unit may come."""
        working = WorkingGraph(graph)
        unit = working.units()[2].node_ids
        view = working.snapshot()
        count = view.token_cache.count_node
        working.apply(
            Proposal(
                processor="drop",
                edits=(Drop(targets=unit),),
                tokens_before=sum(count(view[i]) for i in unit),
                base_version=view.version,
            )
        )
        half = restore_proposal(working.view, unit[:1])
        assert any("brings back part of unit" in p for p in working.check(half))
        plan = plan_restore(working.view, unit[0])
        assert hasattr(plan, "proposal")
        working.apply(plan.proposal)  # type: ignore[union-attr]
        assert all(working.is_current(i) for i in unit)


def _compact_randomly(working: WorkingGraph, data: st.DataObject) -> None:
    """One random compaction edit: mask an output, or summarize two units."""
    view = working.view
    units = view.units()
    derived = view.overlay.derived
    outputs = [i for i in view.current_ids() if view[i].kind == "tool_result" and i not in derived]
    if outputs and data.draw(st.booleans()):
        _mask(working, data.draw(st.sampled_from(outputs)), f"[m{data.draw(st.integers(0, 3))}]")
        return
    starts = [i for i in range(1, len(units) - 1) if units[i].kind == "tool_loop"]
    if starts:
        start = data.draw(st.sampled_from(starts))
        ids = [*units[start].node_ids, *units[start + 1].node_ids]
        if units[start + 1].kind == "tool_loop":
            view = working.snapshot()
            node = SummaryNode(
                id=f"summary-{start}-{working.version}",
                content=(TextPart(text="s"),),
                abstracts=tuple(ids),
                meta={"checked": True},
            )
            count = view.token_cache.count_node
            working.apply(
                Proposal(
                    processor="summarize",
                    edits=(Abstract(targets=tuple(ids), summary=node),),
                    tokens_before=sum(count(view[i]) for i in ids),
                    tokens_after=count(node),
                    base_version=view.version,
                )
            )


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps=st.integers(2, 6), data=st.data())
def test_random_compactions_and_restores_keep_every_invariant(
    steps: int, data: st.DataObject
) -> None:
    """Whatever is compacted and restored, the view is valid and projects as from scratch."""
    graph = ContextGraph(counter=WordCounter())
    graph.add_system("system")
    graph.add_user("first request")
    for step in range(steps):
        graph.add_assistant(f"step {step}", tool_calls=[{"id": f"c{step}", "name": "bash"}])
        graph.add_tool_result(f"c{step}", f"output {step} " * (5 + step * 7))
    graph.add_user("latest")
    working = WorkingGraph(graph)
    pristine = Renderer().render(graph).payload
    for _ in range(data.draw(st.integers(1, 8))):
        if data.draw(st.booleans()):
            _compact_randomly(working, data)
            continue
        ids = [n.id for n in graph] + list(working.view.overlay.derived)
        plan = plan_restore(working.view, data.draw(st.sampled_from(ids)))
        if hasattr(plan, "proposal"):
            working.apply(plan.proposal)  # type: ignore[union-attr]
        assert working.units() == working.view.fresh_copy().units()
        for fmt in FORMATS:
            assert validate(Renderer(format=fmt).render(working).payload, fmt) == []
    # Restoring everything that stands compacted brings the pristine request back.
    while working.view.overlay.replaced_by or working.view.overlay.abstracted_by:
        standing = next(i for i in working.current_ids() if i in working.view.overlay.derived)
        working.apply(plan_restore(working.view, standing).proposal)  # type: ignore[union-attr]
    assert Renderer().render(working).payload == pristine
    added = [i for entry in working.audit() for i in entry.added]
    assert all(working.expand(i) for i in added)
