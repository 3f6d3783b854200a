"""A failed test run's passing tests are not the brief's identifiers.

The brief lists the critical entities of every failed tool output (`From tool output:`),
for the agent meeting the error again. A failed run of a whole suite also lists every
test file or test that passed: in a Gemini CLI session (`NotFollowingUserIntent` in
the shared traces) at an 8,000-token budget that line held 222 passing test files, 2,500
tokens of the brief, while the file the agent was editing had been cut from the request.
`facts.failure_entities` leaves out the lines that only report a pass
(`testruns.reports_a_pass`); the failing test, its file and its error stay.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from context_graph import ContextGraph
from context_graph.testing import WordCounter
from processors.distill.testruns import reports_a_pass
from processors.summarize.brief import TOOL_IDENTIFIERS
from processors.summarize.extractive import ExtractiveSummarizer
from processors.summarize.facts import failure_entities
from tests.processors.brief_sessions import add_bash, transcript

PASSING_FILES = [f"src/tools/tool_{index}.test.ts" for index in range(40)]
VITEST_FAILED = "\n".join(
    [
        " RUN  v3.2.4 /repo/packages/core",
        *(f" \u2713 {path} ({n + 2} tests) {n + 3}ms" for n, path in enumerate(PASSING_FILES)),
        " \u276f src/core/prompts.test.ts (43 tests | 1 failed) 18ms",
        "   \u00d7 Core System Prompt > substitutes WRITE_FILE_TOOL_NAME 9ms",
        "     \u2192 expected 'Use ${WRITE_FILE_TOOL_NAME}' to contain 'write_file'",
        "",
        " Test Files  1 failed | 40 passed (41)",
        "      Tests  1 failed | 125 passed (126)",
    ]
)
PYTEST_FAILED = "\n".join(
    [
        *(f"tests/test_mod_{index}.py::test_case PASSED [{index:3d}%]" for index in range(30)),
        "tests/test_app.py::test_totals FAILED                                    [ 99%]",
        "E       AssertionError: assert compute_total(3) == 7",
        "FAILED tests/test_app.py::test_totals - AssertionError: assert compute_total(3) == 7",
        "========================= 1 failed, 30 passed in 0.52s =========================",
    ]
)
GO_FAILED = "\n".join(
    [
        *(f"--- PASS: TestHandler{index} (0.00s)" for index in range(20)),
        "--- FAIL: TestParseConfig (0.00s)",
        "    config_test.go:42: unexpected key timeout_ms",
        "FAIL",
        *(f"ok  \texample.com/svc/pkg{index}\t0.0{index % 9}s" for index in range(12)),
        "FAIL\texample.com/svc/config\t0.012s",
    ]
)


def _tool_identifiers(command: str, output: str) -> list[str]:
    graph = ContextGraph(counter=WordCounter())
    graph.add_user("Make the test suite pass.")
    add_bash(graph, "t1", command, output, is_error=True)
    text = ExtractiveSummarizer().brief(transcript(graph))
    line = next(line for line in text.split("\n") if line.startswith(TOOL_IDENTIFIERS))
    return [item.strip().strip("`") for item in line[len(TOOL_IDENTIFIERS) :].split(", ")]


class TestTheBrief:
    def test_a_vitest_run_lists_the_failing_file_not_the_passing_ones(self) -> None:
        listed = _tool_identifiers("npm test", VITEST_FAILED)
        assert {"src/core/prompts.test.ts", "write_file"} <= set(listed)
        assert not set(PASSING_FILES) & set(listed)

    def test_a_pytest_run_lists_the_failing_test_not_the_passing_ones(self) -> None:
        listed = _tool_identifiers("pytest -v", PYTEST_FAILED)
        assert {"tests/test_app.py", "test_totals", "compute_total"} <= set(listed)
        assert not any(item.startswith("tests/test_mod_") for item in listed)

    def test_a_go_run_lists_the_failing_package_not_the_passing_ones(self) -> None:
        listed = _tool_identifiers("go test ./...", GO_FAILED)
        assert {"config_test.go", "timeout_ms", "example.com/svc/config"} <= set(listed)
        assert not any("svc/pkg" in item for item in listed)

    def test_an_output_without_pass_lines_keeps_every_entity(self) -> None:
        """A traceback names frames on every line: none of them reads as a pass."""
        output = (
            "Traceback (most recent call last):\n"
            '  File "src/app/main.py", line 12, in run\n'
            '  File "src/app/config.py", line 40, in load\n'
            "KeyError: 'DEPLOY_TOKEN'"
        )
        listed = _tool_identifiers("python -m app", output)
        assert {"src/app/main.py", "src/app/config.py", "KeyError"} <= set(listed)


@pytest.mark.parametrize(
    "line",
    [
        "tests/test_a.py::test_x PASSED                                  [ 10%]",
        "tests/test_a.py ....                                            [ 50%]",
        "tests/test_a.py ..s.x                                           [ 50%]\r",
        "test_totals (tests.test_app.TotalsTest) ... ok",
        "test parser::tests::reads_keys ... ok",
        "PASS src/app.test.js (5.2 s)",
        " \u2713 src/core/prompts.test.ts (43 tests) 18ms",
        "    \u2714 parses the header",
        "ok 1 - parses the header",
        "--- PASS: TestHandler (0.00s)",
        "    --- PASS: TestHandler/empty (0.00s)",
        "ok  \texample.com/svc/pkg\t0.012s",
        "ok  \texample.com/svc/pkg\t(cached)",
    ],
)
def test_lines_that_report_a_pass(line: str) -> None:
    assert reports_a_pass(line)


@pytest.mark.parametrize(
    "line",
    [
        "tests/test_a.py::test_x FAILED                                  [ 10%]",
        "tests/test_a.py ..F.                                            [ 50%]",
        "test_totals (tests.test_app.TotalsTest) ... FAIL",
        "test parser::tests::reads_keys ... FAILED",
        "FAIL src/app.test.js",
        " \u00d7 src/core/prompts.test.ts > substitutes names",
        "not ok 2 - parses the header",
        "--- FAIL: TestParseConfig (0.00s)",
        "FAIL\texample.com/svc/config\t0.012s",
        "E       AssertionError: assert 'PASSED' == 'FAILED'",
        "All tests PASSED except tests/test_app.py",
        "error: ok 1 was not expected",
        "",
    ],
)
def test_lines_that_do_not(line: str) -> None:
    assert not reports_a_pass(line)


_PASS_LINE = st.sampled_from(
    [
        "tests/test_{}.py::test_case PASSED [ 10%]",
        " \u2713 src/{}.test.ts (3 tests) 4ms",
        "--- PASS: Test{} (0.00s)",
        "test_{} (tests.T) ... ok",
        "PASS src/{}.test.js",
    ]
).flatmap(lambda shape: st.from_regex(r"[a-z][a-z0-9_]{2,12}", fullmatch=True).map(shape.format))


@settings(max_examples=150, deadline=None)
@given(
    failure=st.lists(
        st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=80), max_size=6
    ),
    passes=st.lists(_PASS_LINE, max_size=8),
    where=st.lists(st.integers(min_value=0, max_value=6), max_size=8),
)
def test_pass_lines_never_change_the_failure_entities(
    failure: list[str], passes: list[str], where: list[int]
) -> None:
    """Lines reporting a pass, inserted anywhere in a failed output, add no entity and
    take none away."""
    lines = [line.replace("\n", " ").replace("\r", " ") for line in failure]
    lines = [line for line in lines if not reports_a_pass(line)]
    mixed = list(lines)
    for index, line in enumerate(passes):
        position = where[index] if index < len(where) else len(mixed)
        mixed.insert(min(position, len(mixed)), line)

    def entities(output: str) -> list[str]:
        graph = ContextGraph(counter=WordCounter())
        graph.add_user("Run the tests.")
        add_bash(graph, "t1", "make test", output or "failed", is_error=True)
        return failure_entities(transcript(graph), per_failure=None)

    assert entities("\n".join(mixed)) == entities("\n".join(lines))
