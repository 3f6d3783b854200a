"""The newest test run has a section of its own in the brief.

The command list keeps its newest items only (`max_items`), so a passing test run
followed by a score of other commands was gone from the brief: the runner's summary line
(`Ran 79 tests in 0.062s`, `3 passed in 0.20s`), what the agent compares its next run
with, was in no request (django-15814 at 25%: "82 earlier items omitted"). The newest
run is written under its own heading; a newer run replaces it (the older one joins the
commands); a rolling update keeps it while the newer span ran no tests.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from context_graph import ContextGraph
from context_graph.testing import WordCounter
from processors.summarize.brief import Brief, bound, merge, parse, render, tool_lines
from processors.summarize.extractive import ExtractiveSummarizer
from tests.processors.brief_sessions import add_bash, section_items, transcript

HEADING = "## Latest test run (the runner's summary as printed)"
PYTEST_OK = "============================= 3 passed in 0.20s =============================="
UNITTEST_OK = "...\n" + "-" * 70 + "\nRan 79 tests in 0.062s\n\nOK"
UNITTEST_FAILED = (
    "ERROR: test_x (tests.T)\nTraceback (most recent call last):\n"
    "  File \"t.py\", line 3, in test_x\nKeyError: 'id'\n"
    "----------------------------------------------------------------------\n"
    "Ran 3 tests in 0.104s\n\nFAILED (errors=1)"
)


def _section(text: str) -> list[str]:
    return section_items(text, HEADING)


def _session(runs: list[tuple[str, str, bool]], after: int) -> ContextGraph:
    """Test runs (command, output, failed), then `after` other commands."""
    graph = ContextGraph(counter=WordCounter())
    graph.add_user("Fix the failing test in tests/test_app.py.")
    for index, (command, output, failed) in enumerate(runs):
        add_bash(graph, f"t{index}", command, output, is_error=failed)
    for index in range(after):
        command = f"grep -n helper_{index} src/app.py"
        add_bash(graph, f"c{index}", command, f"{index}: def helper_{index}():")
    return graph


class TestLatestTestRun:
    def test_a_run_followed_by_many_commands_keeps_its_summary_line(self) -> None:
        """More commands after the run than the list keeps: the run's line stays."""
        graph = _session([("python tests/runtests.py app", UNITTEST_OK, False)], after=30)
        text = ExtractiveSummarizer(max_items=20).brief(transcript(graph))
        (item,) = _section(text)
        assert "Ran 79 tests in 0.062s" in item
        assert item.startswith("ran `python tests/runtests.py app`: ok")
        assert "(10 earlier items omitted)" in text  # the commands were capped

    def test_the_run_is_not_listed_twice(self) -> None:
        graph = _session([("pytest -q", PYTEST_OK, False)], after=2)
        text = ExtractiveSummarizer().brief(transcript(graph))
        assert text.count("3 passed in 0.20s") == 1
        assert "ran `grep -n helper_1 src/app.py`" in text

    def test_a_failing_run_keeps_the_runners_verdict(self) -> None:
        graph = _session([("python -m unittest", UNITTEST_FAILED, True)], after=25)
        (item,) = _section(ExtractiveSummarizer().brief(transcript(graph)))
        assert item.startswith("ran `python -m unittest`: failed")
        assert "FAILED (errors=1)" in item

    def test_a_newer_run_replaces_it_and_the_older_joins_the_commands(self) -> None:
        graph = _session(
            [("python -m unittest", UNITTEST_FAILED, True), ("pytest -q", PYTEST_OK, False)],
            after=1,
        )
        text = ExtractiveSummarizer().brief(transcript(graph))
        (item,) = _section(text)
        assert "3 passed in 0.20s" in item
        commands = text.split("## Commands and tool use\n", 1)[1].split("\n\n", 1)[0]
        assert "ran `python -m unittest`" in commands

    def test_no_test_run_no_section(self) -> None:
        graph = _session([], after=3)
        text = ExtractiveSummarizer().brief(transcript(graph))
        assert HEADING not in text

    def test_the_item_is_marked_as_tool_output(self) -> None:
        graph = _session([("pytest -q", PYTEST_OK, False)], after=0)
        text = ExtractiveSummarizer().brief(transcript(graph))
        lines = text.split("\n")
        assert any(lines[n - 1].startswith("- ran `pytest -q`") for n in tool_lines(text))


class TestRollingUpdates:
    def test_a_later_span_without_tests_keeps_the_run(self) -> None:
        summarizer = ExtractiveSummarizer(max_items=5)
        first = summarizer.brief(transcript(_session([("pytest -q", PYTEST_OK, False)], after=0)))
        later = summarizer.brief(transcript(_session([], after=12)), previous=first)
        (item,) = _section(later)
        assert "3 passed in 0.20s" in item

    def test_a_later_run_replaces_the_earlier(self) -> None:
        summarizer = ExtractiveSummarizer()
        first = summarizer.brief(transcript(_session([("pytest -q", PYTEST_OK, False)], after=0)))
        graph = _session([("python tests/runtests.py app", UNITTEST_OK, False)], after=0)
        later = summarizer.brief(transcript(graph), previous=first)
        (item,) = _section(later)
        assert "Ran 79 tests in 0.062s" in item
        assert "3 passed in 0.20s" in later  # the older run is history among the commands

    def test_the_section_reads_back(self) -> None:
        brief = Brief(goal="Ship it.", tests=["ran `pytest -q`: ok (exit 0, 3 passed)"])
        assert parse(render(brief)) == brief

    @settings(max_examples=60, deadline=None)
    @given(
        old=st.lists(st.sampled_from(["run a", "run b"]), max_size=1),
        new=st.lists(st.sampled_from(["run b", "run c"]), max_size=1),
        commands=st.lists(st.sampled_from(["ls", "run a", "cat x"]), max_size=3, unique=True),
    )
    def test_merge_keeps_the_newest_run_and_loses_none(
        self, old: list[str], new: list[str], commands: list[str]
    ) -> None:
        """The merged run is the newer span's, else the older; a replaced run is a command."""
        merged = merge(Brief(tests=old, commands=commands), Brief(tests=new))
        assert merged.tests == (new or old)
        for run in old:
            assert run in merged.tests or run in merged.commands
        assert len(merged.commands) == len(set(merged.commands))


class TestBound:
    def test_commands_go_before_the_latest_run(self) -> None:
        brief = Brief(
            goal="Fix it.",
            requests=["Run the tests."],
            commands=[f"ran `grep -n helper_{i} src/app.py`: ok" for i in range(40)],
            tests=["ran `pytest -q`: ok (exit 0, 3 passed in 0.20s)"],
        )
        text = bound(brief, 60, WordCounter().count, ())
        assert "3 passed in 0.20s" in text
        assert "helper_0" not in text
        assert HEADING in text
