"""The processors benchmark runs end to end on one small session (timings not asserted)."""

from __future__ import annotations

import shutil
from pathlib import Path

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
