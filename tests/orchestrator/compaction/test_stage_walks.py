"""What a compaction stage walks: the summary chain, the outputs in view, the named nodes.

Each of these runs at every stage of every compaction, so each is counted here: the
summary chain looks up only the summaries among a summary's parts, the outputs in view
are walked once per projection, and a pristine node is matched to the named ids without
walking its lineage. Each is also checked against the plain walk it replaces.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from context_graph.graph.nodes import ANSWER_KINDS
from context_graph.testing import ScriptedSummarizer, WordCounter
from orchestrator.compaction.pipeline import (
    StageSettings,
    output_targets,
    run_pipeline,
    stands_for,
    summary_chain,
)
from orchestrator.manager import ContextManager
from orchestrator.policy import Policy
from orchestrator.working import WorkingGraph, WorkingView
from orchestrator.working.layered import LayeredMap
from processors import HistorySummarizer, ObservationMasker, Proposal
from processors.base import Abstract


def _log(step: int) -> str:
    return "\n".join(f"line {j} of step {step}: value={j * step}" for j in range(40))


def _fill(manager: ContextManager, steps: int, start: int = 0, *, pinned: bool = False) -> None:
    """A coding session: a request, then steps of a call, its output and a user turn."""
    if start == 0:
        manager.add_system("You are a careful coding agent.")
        manager.add_user("Fix the failing test in tests/test_io.py.")
    for step in range(start, start + steps):
        manager.add_assistant(
            f"Running the tests, step {step}.",
            tool_calls=[{"id": f"call_{step}", "name": "bash", "arguments": {"cmd": "pytest"}}],
        )
        manager.add_tool_result(f"call_{step}", _log(step), pinned=pinned)
        manager.add_user(f"Go on with step {step + 1}.")


async def _run(manager: ContextManager, pipeline: list[Any]) -> list[Proposal]:
    """Run `pipeline` once on the whole view; the proposals it applied."""
    applied: list[Proposal] = []
    manager.bus.connect("proposal_applied", lambda _s, **kw: applied.append(kw["proposal"]))
    summaries = ScriptedSummarizer([f"summary {i}" for i in range(50)])
    await run_pipeline(pipeline, manager.working, manager.bus, StageSettings(None, summaries, None))
    return applied


async def _chained(rounds: int, steps: int) -> tuple[ContextManager, Proposal]:
    """A manager whose summaries roll forward `rounds` times; the last summary's proposal."""
    manager = ContextManager(counter=WordCounter(), policy=Policy())
    _fill(manager, steps)
    last: Proposal | None = None
    for round_ in range(rounds):
        applied = await _run(manager, [HistorySummarizer()])
        last = next(p for p in applied if any(isinstance(e, Abstract) for e in p.edits))
        _fill(manager, steps, start=(round_ + 1) * steps)
    assert last is not None
    return manager, last


def _chain_walked(view: WorkingView, proposal: Proposal) -> int:
    """`summary_chain` as a walk of every part (the walk it replaces)."""
    overlay = view.overlay
    lengths: dict[str, int] = {}

    def length(node_id: str) -> int:
        if node_id not in lengths:
            node = overlay.derived.get(node_id) or view[node_id]
            parts = (p for p in node.abstracts if overlay.abstracted_by.get(p) == node_id)
            lengths[node_id] = (
                0 if node.kind != "summary" else 1 + max(map(length, parts), default=0)
            )
        return lengths[node_id]

    added = (e.summary.id for e in proposal.edits if isinstance(e, Abstract))
    return max(map(length, added), default=0)


@contextmanager
def _lookups(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The ids `WorkingView.get` is asked for while the block runs."""
    asked: list[str] = []
    get = WorkingView.get

    def counting(self: WorkingView, node_id: str) -> Any:
        asked.append(node_id)
        return get(self, node_id)

    with monkeypatch.context() as patch:
        patch.setattr(WorkingView, "get", counting)
        yield asked


class TestSummaryChain:
    """`summary_chain` follows the summaries among a summary's parts, and only those."""

    async def test_looks_up_only_the_summaries(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """A chain of three rolled summaries over 90 steps costs a lookup per summary."""
        manager, proposal = await _chained(rounds=3, steps=30)
        view = manager.working.view
        with _lookups(monkeypatch) as asked:
            length = summary_chain(view, proposal)
        assert length == 3
        summaries = {view[i].kind for i in asked}
        assert summaries <= {"summary"}
        assert len(asked) <= 3

    async def test_skips_pristine_parts_without_a_lookup(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """The pristine parts of other kinds cost no lookup of the overlay's maps."""
        manager, proposal = await _chained(rounds=2, steps=30)
        view = manager.working.view
        asked: list[str] = []
        get = LayeredMap.get

        def counting(self: LayeredMap[str, Any], key: str, *default: Any) -> Any:
            asked.append(key)
            return get(self, key, *default)

        monkeypatch.setattr(LayeredMap, "get", counting)
        assert summary_chain(view, proposal) == 2
        parts = sum(len(e.summary.abstracts) for e in proposal.edits if isinstance(e, Abstract))
        assert parts > 60
        assert len(asked) <= 3 * 2  # three lookups for each of the two summaries

    @settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(rounds=st.integers(1, 4), steps=st.integers(1, 6))
    async def test_equals_the_walk_of_every_part(self, rounds: int, steps: int) -> None:
        """Whatever the chain, the length is the one a walk of every part finds."""
        manager, proposal = await _chained(rounds, steps)
        view = manager.working.view
        assert summary_chain(view, proposal) == _chain_walked(view, proposal)


def _walked_outputs(view: WorkingView) -> tuple[Any, ...]:
    """`output_targets` as a walk of every node of every unit (the walk it replaces)."""
    nodes = (view[i] for unit in view.units() for i in unit.node_ids)
    return tuple(n for n in nodes if n.kind in ANSWER_KINDS and not n.pinned)


class TestOutputTargets:
    """The outputs in view are walked once per projection, and are what the walk finds."""

    async def test_second_stage_walks_nothing(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """Asked again of the same view (a stage that applied nothing), no node is read."""
        manager = ContextManager(counter=WordCounter(), policy=Policy())
        _fill(manager, 20)
        snapshot = manager.working.snapshot()
        first = output_targets(snapshot)
        with _lookups(monkeypatch) as asked:
            again = output_targets(manager.working.snapshot())
        assert again == first
        assert asked == []

    async def test_an_ingest_brings_the_new_output(self) -> None:
        """An output ingested after the walk is among the outputs asked for next."""
        manager = ContextManager(counter=WordCounter(), policy=Policy())
        _fill(manager, 3)
        before = output_targets(manager.working.view)
        _fill(manager, 1, start=3)
        after = output_targets(manager.working.view)
        assert len(after) == len(before) + 1
        assert after == _walked_outputs(manager.working.view)

    @settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(
        plan=st.lists(st.sampled_from(["fill", "mask", "summarize", "pin"]), min_size=1, max_size=6)
    )
    async def test_equals_the_walk_of_every_unit(self, plan: list[str]) -> None:
        """After any mix of ingests (pinned too), masks and summaries, the walk agrees."""
        manager = ContextManager(counter=WordCounter(), policy=Policy())
        _fill(manager, 4)
        step = 4
        for action in plan:
            if action in {"fill", "pin"}:
                _fill(manager, 2, start=step, pinned=action == "pin")
                step += 2
            else:
                processor = ObservationMasker(keep_turns=1) if action == "mask" else None
                await _run(manager, [processor or HistorySummarizer()])
            for view in (manager.working.view, manager.working.snapshot()):
                assert output_targets(view) == _walked_outputs(view)


def _rooted(working: WorkingGraph, node: Any, ids: frozenset[str]) -> bool:
    """`stands_for` through the roots of every node (the walk it replaces)."""
    return node.id in ids or not ids.isdisjoint(working.roots(node.id))


class TestStandsFor:
    """A pristine node stands for itself only: its lineage is not walked."""

    async def test_pristine_node_walks_no_lineage(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """Matching the outputs of a view nothing edited asks for no roots."""
        manager = ContextManager(counter=WordCounter(), policy=Policy())
        _fill(manager, 10)
        working = manager.working
        roots: list[str] = []
        original = WorkingGraph.roots

        def counting(self: WorkingGraph, node_id: str) -> tuple[str, ...]:
            roots.append(node_id)
            return original(self, node_id)

        monkeypatch.setattr(WorkingGraph, "roots", counting)
        named = frozenset({output_targets(working.view)[-1].id})
        matched = [n for n in output_targets(working.view) if stands_for(working, n, named)]
        assert [n.id for n in matched] == list(named)
        assert roots == []

    @settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(masks=st.integers(0, 3), named=st.sets(st.integers(0, 30), max_size=6))
    async def test_equals_the_walk_of_the_roots(self, masks: int, named: set[int]) -> None:
        """Masked copies and pristine nodes alike match as their roots say."""
        manager = ContextManager(counter=WordCounter(), policy=Policy())
        _fill(manager, 6)
        for round_ in range(masks):
            await _run(manager, [ObservationMasker(keep_turns=1)])
            _fill(manager, 2, start=6 + 2 * round_)
        working = manager.working
        transcript = working.view.transcript()
        ids = frozenset(transcript[i] for i in named if i < len(transcript))
        for node in output_targets(working.view):
            assert stands_for(working, node, ids) == _rooted(working, node, ids)
