"""`python -m benchmarks --fast` end to end on the shared traces (timings never asserted)."""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
from pathlib import Path

import pytest

from benchmarks import long_session
from benchmarks.__main__ import collect, main, write
from benchmarks.compare.ideal_drop import IDEAL_DROP_SHARES, bound_line
from benchmarks.compare.legacy import _judged
from benchmarks.compare.page import Measured, build_page
from benchmarks.compare.plots import matplotlib_available
from benchmarks.compare.sessions import Session, discover
from benchmarks.compare.stats import summarize

TRACES = Path(__file__).resolve().parents[2].parent / "shared" / "traces"


def session_files_sessions() -> list[Session]:
    """Every shared session the benchmark could pick from."""
    return discover(TRACES)


@pytest.fixture(scope="module", name="fast")
def fixture_fast(tmp_path_factory: pytest.TempPathFactory) -> tuple[Measured, Path]:
    if not TRACES.is_dir():
        pytest.skip("shared traces not present")
    out = tmp_path_factory.mktemp("bench") / "benchmarks.md"
    measured = collect(TRACES, out, fast=True)
    write(measured, out, [])
    return measured, out


class TestFastMode:
    def test_picks_a_few_small_sessions_and_one_compaction(
        self, fast: tuple[Measured, Path]
    ) -> None:
        """Fast mode replays small sessions of every family, one with a recorded compaction."""
        measured, _ = fast
        assert measured.budgets == ("50%",)
        every = [s for s in session_files_sessions() if not s.subagent and len(s.calls) >= 3]
        assert {s.family for s in measured.sessions} == {s.family for s in every}
        for family in {s.family for s in every}:
            smallest = min(len(s.events) for s in every if s.family == family)
            chosen = [s for s in measured.sessions if s.family == family]
            assert min(len(s.events) for s in chosen) == smallest, family
        assert any(s.has_compaction for s in measured.sessions)

    def test_every_contender_answers_every_model_call(self, fast: tuple[Measured, Path]) -> None:
        """Each contender has one run per session, with one row per recorded model call."""
        measured, _ = fast
        for session in measured.sessions:
            for spec in measured.specs:
                runs = [
                    r
                    for r in measured.runs
                    if r.session == session.label and r.contender == spec.name
                ]
                assert len(runs) == 1, (session.label, spec.name)
                run = runs[0]
                assert run.error is None
                assert [row.fed for row in run.rows] == sorted(session.calls)
                assert run.peak_bytes is not None and run.peak_bytes > 0

    def test_context_graph_sends_only_valid_requests_within_budget(
        self, fast: tuple[Measured, Path]
    ) -> None:
        """Every request of ours passes both checks and fits; anything else is a refusal."""
        measured, _ = fast
        ours = [r for r in measured.runs if r.contender.startswith("context-graph")]
        # Three profiles, coding with agent tools, coding with the cost guard.
        assert len(ours) == 5 * len(measured.sessions)
        rows = [row for run in ours for row in run.rows]
        assert all(row.our_errors == 0 and row.sdk_errors == 0 for row in rows)
        assert all(row.tokens <= run.budget for run in ours for row in run.rows if row.tokens)
        assert any(not row.refused for row in rows)

    def test_the_tokenizer_part_is_inside_the_engine_time(
        self, fast: tuple[Measured, Path]
    ) -> None:
        """Ours tokenize at least the text they keep; a tokenizer span never exceeds the run."""
        measured, _ = fast
        for run in measured.runs:
            assert 0 <= run.tokenize_ns <= run.engine_ns
            assert 0 <= run.feed_tokenize_ns <= min(run.tokenize_ns, run.feed_ns)
            assert run.floor_chars > 0
            if run.contender.startswith("context-graph"):
                assert run.tokenize_chars > 0 and run.tokenize_ns > 0
            if run.contender.startswith("openhands"):
                assert run.tokenize_chars == 0  # the masking counts no tokens

    def test_retention_is_a_share_of_what_was_in_view(self, fast: tuple[Measured, Path]) -> None:
        """Kept never exceeds the reference, a refusal keeps nothing, summaries are shares."""
        measured, _ = fast
        rows = [row for run in measured.runs for row in run.rows]
        assert all(0 <= row.kept <= row.reference for row in rows)
        assert all(row.kept == 0 for row in rows if row.refused)
        assert any(row.reference for row in rows)
        for spec in measured.specs:
            summary = summarize(measured.runs, spec.name, "50%")
            for value in (summary.retention, summary.retention_within, summary.prefix_stability):
                assert value is not None and 0.0 <= value <= 1.0
            assert summary.retention_within <= summary.retention  # type: ignore[operator]

    def test_page_holds_the_tables_and_plots(self, fast: tuple[Measured, Path]) -> None:
        """The page has the targets, results, family and compaction tables, and its images."""
        measured, out = fast
        page = out.read_text(encoding="utf-8")
        for heading in (
            "### The issue's targets",
            "### Results",
            "### Retention within budget, per session family",
            "### Claude Code's own compaction against ours",
            "### Where the engine time goes",
            "### Dollars, with prompt caching",
            "### Fidelity probes",
        ):
            assert heading in page
        assert "| contender | Anthropic (" in page
        assert "| contender | calls | refused | over budget |" in page
        for spec in measured.specs:
            assert f"| {spec.name} | " in page
        assert page.count("| zero validity errors | all |") == 1
        if matplotlib_available():
            assert len(measured.plots) == len({s.family for s in measured.sessions})
            for image, _ in measured.plots:
                assert (out.parent / image).stat().st_size > 0
                assert f"]({image})" in page
            # The dollars plot goes with its section, after the tables and before the targets.
            image, _ = measured.section_plots["dollars"]
            assert (out.parent / image).read_bytes().startswith(b"\x89PNG")
            where = page.index(f"]({image})")
            assert page.index("### Dollars, with prompt caching") < where
            assert where < page.index("### The issue's targets")

    def test_the_prefix_target_is_set_beside_the_ideal_drop_bound(
        self, fast: tuple[Measured, Path]
    ) -> None:
        """The ideal drop compactor is replayed at 50% at each of its shares, outside the
        comparison's tables; where ours misses the prefix target, its line says what it
        reaches."""
        measured, out = fast
        shares = {f"ideal drop to {share:g}" for share in IDEAL_DROP_SHARES}
        assert {(r.contender, r.budget_label) for r in measured.ideal_drop} == {
            (name, "50%") for name in shares
        }
        assert not shares & {r.contender for r in measured.runs}
        bound = bound_line(measured.ideal_drop, "50%")
        for name in shares:
            figures = summarize(measured.ideal_drop, name, "50%")
            assert f"{figures.prefix_stability:.3f}" in bound
        page = out.read_text(encoding="utf-8")
        if "| prefix stability >= 0.9 | 50% | **not met**" in page:
            assert bound in page

    def test_the_long_session_targets_join_the_targets_section(
        self, fast: tuple[Measured, Path], tmp_path: Path
    ) -> None:
        """A long-session run's targets (from its `--json`) are rows of the targets section,
        met or not as that run measured them."""
        figures = tmp_path / "long.json"
        argv = ["--traces", str(TRACES), "--tokens", "60k", "--tasks", "2", "--budget", "8000"]
        with contextlib.redirect_stdout(io.StringIO()):
            long_session.main(
                [*argv, "--small-budget", "3000", "--repeats", "1", "--json", str(figures)]
            )
        data = json.loads(figures.read_text(encoding="utf-8"))
        rows = _judged("60k", data)
        assert [t["target"] for t in data["targets"]] == [
            "total <= 0.5x trim_messages",
            "last quarter's mean call <= 1.3x the first",
            "at a 3,000-token budget: last quarter's mean call <= 1.3x the first",
        ]
        assert data["small_budget"]["budget"] == 3_000
        assert data["small_budget"]["contender"]["name"] == "context-graph coding"
        assert len(rows) == 3 and all(r.startswith("| long session (60k, ") for r in rows)
        for row, target in zip(rows, data["targets"], strict=True):
            assert row.endswith("| met |" if target["met"] else "| not met |")
        measured, _ = fast
        page = build_page(dataclasses.replace(measured, later_targets=rows), [])
        section = page[page.index("### The issue's targets") :]
        section = section[: section.index("\n### ", 1)]
        assert all(row in section for row in rows)
        assert "Time per call on a long session" not in build_page(measured, [])


def test_main_names_the_folder_without_sessions(tmp_path: Path) -> None:
    """An empty traces folder stops the command with a message naming the folder."""
    with pytest.raises(SystemExit, match="no sessions found in"):
        main(["--traces", str(tmp_path), "--out", str(tmp_path / "b.md"), "--fast"])
    assert not (tmp_path / "b.md").exists()
