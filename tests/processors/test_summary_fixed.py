"""A resolved error in the brief says what showed the fix worked.

Before, the errors section said `[resolved]` and nothing of the output that resolved it:
once the steps were summarized, the agent knew a fix worked but not what it printed
(the test tally, the file now listed).
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from context_graph.graph.context_graph import ContextGraph
from context_graph.testing import WordCounter
from processors.summarize import ExtractiveSummarizer
from processors.summarize.brief import Brief, merge, parse, render
from processors.summarize.facts import ErrorFact
from processors.summarize.outcomes import success_gist


def _call(call_id: str, command: str) -> dict[str, str]:
    return {"id": call_id, "name": "bash", "arguments": f'{{"command": "{command}"}}'}


def _session() -> ContextGraph:
    graph = ContextGraph(counter=WordCounter())
    graph.add_system("You are a coding agent.")
    graph.add_user("Make the tests pass.")
    graph.add_assistant(tool_calls=[_call("c1", "pytest -q")])
    graph.add_tool_result(
        "c1", "E   AssertionError: expected 2, got 1\n1 failed, 4 passed in 0.20s", is_error=True
    )
    graph.add_assistant(tool_calls=[_call("c2", "pytest -q")])
    graph.add_tool_result("c2", "collected 5 items\n.....\n5 passed in 0.12s")
    graph.add_assistant("All green.")
    return graph


def _errors(text: str) -> str:
    return text.split("## Errors", 1)[1].split("\n## ", 1)[0]


def test_a_resolved_error_quotes_the_line_that_showed_the_fix() -> None:
    text = ExtractiveSummarizer(counter=WordCounter()).brief(list(_session()))
    errors = _errors(text)
    assert "[resolved] `pytest -q`" in errors
    assert "then: `5 passed in 0.12s`" in errors


def test_the_line_reads_back_from_the_brief() -> None:
    """A rolling update parses the previous brief: the line survives it."""
    text = ExtractiveSummarizer(counter=WordCounter()).brief(list(_session()))
    brief = parse(text)
    assert brief is not None
    (error,) = brief.errors
    assert error.resolved and error.fixed == "5 passed in 0.12s"
    assert error.said == "1 failed, 4 passed"  # read apart from the line after it
    assert render(brief) == text


def test_a_newer_span_that_fixes_an_old_error_adds_its_line() -> None:
    old = Brief(errors=[ErrorFact("make deploy", "", "KeyError: 'TOKEN'", "bash", False)])
    new = Brief(successes={"make deploy": "deployed to prod-eu-1"})
    (error,) = merge(old, new).errors
    assert error.resolved and error.fixed == "deployed to prod-eu-1"


def test_an_error_fixed_earlier_keeps_the_first_fix() -> None:
    old = Brief(errors=[ErrorFact("make", "", "boom", "bash", True, "built app")])
    (error,) = merge(old, Brief(successes={"make": "nothing to do"})).errors
    assert error.fixed == "built app"


class TestSuccessGist:
    def test_a_confirmation_line(self) -> None:
        assert success_gist("noise\nSuccessfully installed sqlparse-0.5.0\n") == (
            "Successfully installed sqlparse-0.5.0"
        )

    def test_a_test_run_gives_its_tally(self) -> None:
        out = "Running ExUnit with seed: 1\n\n.....\nFinished in 1.7 seconds\n5 tests, 0 failures\n"
        assert success_gist(out) == "5 tests, 0 failures"

    def test_other_output_gives_its_first_line_past_the_wrappers(self) -> None:
        out = "<returncode>0</returncode>\n<output>\n-rw------- 1 root root 97 data.txt\n</output>"
        assert success_gist(out) == "-rw------- 1 root root 97 data.txt"
        assert success_gist("Exit code 0\n") == ""


@given(
    fixed=st.text(st.characters(blacklist_categories=("Cs", "Cc")), min_size=1, max_size=60),
    line=st.text(st.characters(blacklist_categories=("Cs", "Cc")), max_size=60),
)
def test_any_fixed_line_round_trips(fixed: str, line: str) -> None:
    """Whatever the two quoted lines hold (backticks, `; then: `), both read back."""
    fixed, line = " ".join(fixed.split()), " ".join(line.split())
    if not fixed:
        return
    # An item with no quote says `failed` (as a brief writes it).
    error = ErrorFact("make", "" if line else "failed", line, "bash" if line else "", True, fixed)
    brief = parse(render(Brief(goal="Build it.", errors=[error])))
    assert brief is not None
    assert brief.errors == [error]
