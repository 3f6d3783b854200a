"""The ingest benchmark runs end to end on a small session (timings are not asserted)."""

from __future__ import annotations

from pathlib import Path

from benchmarks.ingest import format_result, largest_session, run
from context_graph.examples import EXAMPLE_SESSION
from context_graph.importers import load_sessions


def test_benchmark_runs_and_reports_the_session() -> None:
    """One repetition on the bundled example reports its real event and node counts."""
    result = run(EXAMPLE_SESSION, repeat=1)
    events = load_sessions(EXAMPLE_SESSION)[0].events
    assert result.events == len(events)
    assert result.nodes >= result.events
    assert result.tokens > 0
    assert result.engine_total_ns > 0 and result.floor_total_ns > 0
    assert "| total |" in format_result(result)


def test_largest_session_picks_the_biggest_file(tmp_path: Path) -> None:
    """The default input is the biggest session file, sub-agent transcripts excluded."""
    root = tmp_path
    (root / "a.json").write_text("[]" * 10, encoding="utf-8")
    (root / "b.jsonl").write_text("{}" * 100, encoding="utf-8")
    (root / "s" / "subagents").mkdir(parents=True)
    (root / "s" / "subagents" / "c.jsonl").write_text("{}" * 1000, encoding="utf-8")
    assert largest_session(root).name == "b.jsonl"
