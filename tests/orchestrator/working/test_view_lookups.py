"""`WorkingView.get` and `sources`: the lookups every compaction stage makes per node.

`get` reads the overlay's maps itself (no call to `Overlay.node`), and a live view's
`sources` checks no source against a snapshot's limit (a live view holds every pristine
node). Both answer what the composed lookups answer, live and frozen.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from context_graph.testing import ScriptedSummarizer, WordCounter
from orchestrator.compaction.pipeline import StageSettings, run_pipeline
from orchestrator.manager import ContextManager
from orchestrator.policy import Policy
from orchestrator.working import WorkingView
from orchestrator.working.overlay import Overlay
from processors import HistorySummarizer, ObservationMasker


def _fill(manager: ContextManager, steps: int, start: int = 0) -> None:
    if start == 0:
        manager.add_system("You are a careful coding agent.")
        manager.add_user("Fix the failing test.")
    for step in range(start, start + steps):
        manager.add_assistant(
            f"Step {step}.", tool_calls=[{"id": f"c{step}", "name": "bash", "arguments": {}}]
        )
        manager.add_tool_result(f"c{step}", " ".join(f"word{j}" for j in range(60)))
        manager.add_user(f"Go on with step {step + 1}.")


async def _compact(manager: ContextManager, processor: Any) -> None:
    summaries = ScriptedSummarizer([f"summary {i}" for i in range(20)])
    settings_ = StageSettings(None, summaries, None)
    await run_pipeline([processor], manager.working, manager.bus, settings_)


def _composed_get(view: WorkingView, node_id: str) -> Any:
    """`get` as the composition of `Overlay.node`, the pristine graph and the limit."""
    node = view.overlay.node(node_id)
    if node is not None:
        return node
    node = view.pristine.get(node_id)
    if node is None:
        return None
    return node if not view.frozen or view._within(node) else None


def _composed_sources(view: WorkingView, node_id: str, kind: Any) -> tuple[str, ...]:
    """`sources` with every pristine source checked against the limit."""
    graph = view.pristine
    found: tuple[str, ...] = ()
    if node_id in graph:
        found = tuple(s for s in graph.sources(node_id, kind) if view._within(graph[s]))
    overlay = view.overlay
    successor = overlay.replaced_by.get(node_id) or overlay.abstracted_by.get(node_id)
    return (*found, successor) if kind == "derived_from" and successor else found


class TestViewLookups:
    """What the lookups cost, and that they answer as before."""

    def test_get_calls_no_overlay_method(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """A lookup reads the overlay's maps, without a call to `Overlay.node`."""
        manager = ContextManager(counter=WordCounter(), policy=Policy())
        _fill(manager, 3)
        view = manager.working.view

        def refused(*_args: Any) -> Any:
            msg = "Overlay.node was called"
            raise AssertionError(msg)

        monkeypatch.setattr(Overlay, "node", refused)
        assert all(view.get(i) is not None for i in view.transcript())

    def test_live_sources_check_no_limit(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """A live view's sources are not checked against a snapshot's limit."""
        manager = ContextManager(counter=WordCounter(), policy=Policy())
        _fill(manager, 3)
        view = manager.working.view
        checked: list[str] = []
        within = WorkingView._within

        def counting(self: WorkingView, node: Any) -> bool:
            checked.append(node.id)
            return within(self, node)

        monkeypatch.setattr(WorkingView, "_within", counting)
        found = [view.sources(i, "follows") for i in view.transcript()]
        assert any(found)
        assert checked == []

    @settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(
        plan=st.lists(st.sampled_from(["fill", "mask", "summarize"]), min_size=1, max_size=5),
        frozen_at=st.integers(0, 5),
    )
    async def test_same_as_the_composed_lookups(self, plan: list[str], frozen_at: int) -> None:
        """Live or frozen, after any mix of ingests and edits, the lookups agree."""
        manager = ContextManager(counter=WordCounter(), policy=Policy())
        _fill(manager, 3)
        views = []
        for index, action in enumerate(plan):
            if index == frozen_at:
                views.append(manager.working.snapshot())
            if action == "fill":
                _fill(manager, 2, start=3 + 2 * index)
            else:
                keep = ObservationMasker(keep_turns=1)
                await _compact(manager, keep if action == "mask" else HistorySummarizer())
        views.append(manager.working.view)
        everything = (*manager.working.view.transcript(), *manager.working.view.overlay.derived)
        for view in views:
            for node_id in (*everything, "no-such-node"):
                assert view.get(node_id) == _composed_get(view, node_id)
                if view.get(node_id) is None:
                    continue
                for kind in ("follows", "answers", "derived_from"):
                    assert view.sources(node_id, kind) == _composed_sources(view, node_id, kind)

    @settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(
        plan=st.lists(st.sampled_from(["fill", "mask", "summarize"]), min_size=1, max_size=5),
        picks=st.lists(st.integers(0, 200), max_size=6),
    )
    async def test_stands_for_any_meets_the_roots(self, plan: list[str], picks: list[int]) -> None:
        """After any mix of ingests, masks and summaries, a node stands for some of a set
        of ids exactly when one of its roots is in the set."""
        manager = ContextManager(counter=WordCounter(), policy=Policy())
        _fill(manager, 3)
        for index, action in enumerate(plan):
            if action == "fill":
                _fill(manager, 2, start=3 + 2 * index)
            else:
                keep = ObservationMasker(keep_turns=1)
                await _compact(manager, keep if action == "mask" else HistorySummarizer())
        view = manager.working.view
        transcript = view.transcript()
        ids = frozenset(transcript[pick % len(transcript)] for pick in picks)
        for node_id in (*transcript, *view.overlay.derived):
            assert view.stands_for_any(node_id, ids) == (not ids.isdisjoint(view.roots(node_id)))
