"""The render benchmark runs end to end on a small session (timings are not asserted)."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.render import report, run
from context_graph.importers import load_sessions

TRACES = Path(__file__).resolve().parents[2].parent / "shared" / "traces"
SMALL = TRACES / "tau_bench_gpt4o_airline" / "gpt-4o-airline.sample12.json"


@pytest.mark.skipif(not SMALL.exists(), reason="shared traces not present")
def test_benchmark_replays_every_event_for_both_contenders() -> None:
    """Both contenders are called once per event, and ours never sends an invalid body."""
    ours, theirs, events, budget = run(SMALL, budget_ratio=0.5)
    assert events == len(load_sessions(SMALL)[0].events)
    assert len(ours.times_ns) == len(theirs.times_ns) == events
    assert ours.invalid == 0
    assert ours.lost_latest_request == 0 and ours.lost_first_request == 0
    assert ours.over_budget == 0
    assert budget > 0
    assert "| context-graph |" in report(ours, theirs, events, budget, SMALL)
