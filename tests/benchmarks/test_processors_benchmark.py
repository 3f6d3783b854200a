"""The processors benchmark runs end to end on one small session (timings not asserted)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from benchmarks.processors import report, run
from context_graph.examples import EXAMPLE_SESSION


def test_benchmark_measures_every_processor(tmp_path: Path) -> None:
    """Each processor gets a row; what it changed shrank and retention is a share."""
    shutil.copy(EXAMPLE_SESSION, tmp_path / "session.jsonl")
    tallies = run(tmp_path)
    assert len(tallies) == 6
    assert all(t.input_tokens > 0 for t in tallies)
    changed = [t for t in tallies if t.edits]
    assert changed
    for tally in changed:
        assert tally.changed_after < tally.changed_before
        assert 0 <= tally.kept <= tally.entities
    assert report(tallies).count("\n") == len(tallies) + 1


TRACES = Path(__file__).resolve().parents[2].parent / "shared" / "traces"
LENIENT = TRACES / "gemini_cli" / "google-gemini_gemini-cli" / "trajectory.json"


@pytest.mark.skipif(not LENIENT.exists(), reason="shared traces not present")
def test_a_trace_only_a_lenient_import_reads_is_measured(tmp_path: Path) -> None:
    """The Gemini CLI trajectory with a stray response is read leniently, not refused."""
    kept = tmp_path / LENIENT.relative_to(TRACES)  # the lenient list names it by this path
    kept.parent.mkdir(parents=True)
    shutil.copy(LENIENT, kept)
    tallies = run(tmp_path)
    assert tallies and all(t.input_tokens > 0 for t in tallies)
