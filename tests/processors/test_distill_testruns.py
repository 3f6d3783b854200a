from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from context_graph.testing import WordCounter
from processors.distill import distill_text
from processors.distill.distiller import detect_content_type
from processors.distill.testruns import (
    count_tests,
    looks_like_tests,
    parse_failures,
    reports_a_pass,
    summary_line,
)

PYTEST = """\
============================= test session starts ==============================
collected 42 items

tests/test_api.py ......F.....                                           [ 28%]
tests/test_models.py ...........s.......F.........                       [100%]

=================================== FAILURES ===================================
_______________________________ test_create_user _______________________________

    def test_create_user():
        user = create_user("alice", age=31)
>       assert user.age == 32
E       AssertionError: assert 31 == 32

tests/test_api.py:57: AssertionError
_____________________________ test_order_total[3] ______________________________

    def test_order_total(order):
>       assert order.total() == Decimal("30.00")
E       decimal.InvalidOperation: [<class 'decimal.ConversionSyntax'>]

tests/test_models.py:112: InvalidOperation
=========================== short test summary info ============================
FAILED tests/test_api.py::test_create_user - AssertionError: assert 31 == 32
FAILED tests/test_models.py::test_order_total[3] - decimal.InvalidOperation: [<class 'decimal.Con\
versionSyntax'>]
=================== 2 failed, 39 passed, 1 skipped in 0.84s ===================="""

UNITTEST = """\
..F.E.
======================================================================
ERROR: test_load (tests.test_io.LoadTests.test_load)
----------------------------------------------------------------------
Traceback (most recent call last):
  File "/repo/tests/test_io.py", line 9, in test_load
    load("missing.csv")
FileNotFoundError: [Errno 2] No such file or directory: 'missing.csv'

======================================================================
FAIL: test_sum (tests.test_math.MathTests.test_sum)
----------------------------------------------------------------------
Traceback (most recent call last):
  File "/repo/tests/test_math.py", line 5, in test_sum
    self.assertEqual(add(2, 2), 5)
AssertionError: 4 != 5

----------------------------------------------------------------------
Ran 6 tests in 0.004s

FAILED (failures=1, errors=1, skipped=1)"""

JEST = """\
 PASS  src/format.test.js
 FAIL  src/math.test.js
  ● Math \u203a adds numbers

    expect(received).toBe(expected) // Object.is equality

    Expected: 3
    Received: 4

Test Suites: 1 failed, 1 passed, 2 total
Tests:       1 failed, 1 skipped, 7 passed, 9 total"""

GO_TEST = """\
=== RUN   TestParse
--- FAIL: TestParse (0.00s)
    parse_test.go:14: want 3, got 4
=== RUN   TestFormat
--- PASS: TestFormat (0.00s)
=== RUN   TestSkip
--- SKIP: TestSkip (0.00s)
FAIL
FAIL\texample.com/parse\t0.005s"""


def _distill(text: str, level: str = "heavy") -> str:
    return distill_text(text, level, count=WordCounter().count).text  # type: ignore[arg-type]


class TestCounts:
    def test_pytest(self) -> None:
        """pytest's summary line gives the counts."""
        counts = count_tests(PYTEST.split("\n"))
        assert (counts["failed"], counts["passed"], counts["skipped"]) == (2, 39, 1)

    def test_unittest(self) -> None:
        """unittest's `Ran N` and `FAILED (...)` give the counts; passed is what is left."""
        counts = count_tests(UNITTEST.split("\n"))
        assert (counts["failed"], counts["errors"], counts["skipped"]) == (1, 1, 1)
        assert counts["passed"] == 6 - 1 - 1 - 1

    def test_unittest_expected_failures_are_not_failures(self) -> None:
        """`OK (expected failures=1, unexpected successes=1)` counts no failed test."""
        counts = count_tests(
            ["Ran 3 tests in 0.001s", "OK (expected failures=1, unexpected successes=1)"]
        )
        assert (counts["failed"], counts["xfailed"], counts["xpassed"]) == (0, 1, 1)

    def test_jest(self) -> None:
        """jest's `Tests:` line gives the counts."""
        counts = count_tests(JEST.split("\n"))
        assert (counts["failed"], counts["skipped"], counts["passed"]) == (1, 1, 7)

    def test_go(self) -> None:
        """go test's `--- PASS/FAIL/SKIP` lines are counted."""
        counts = count_tests(GO_TEST.split("\n"))
        assert (counts["failed"], counts["passed"], counts["skipped"]) == (1, 1, 1)


class TestFailures:
    def test_pytest_failures_once_each_with_first_error(self) -> None:
        """Each failure is named once, with its first error line."""
        failures = parse_failures(PYTEST.split("\n"))
        assert [(f.name, f.error) for f in failures] == [
            ("tests/test_api.py::test_create_user", "AssertionError: assert 31 == 32"),
            (
                "tests/test_models.py::test_order_total[3]",
                "decimal.InvalidOperation: [<class 'decimal.ConversionSyntax'>]",
            ),
        ]

    def test_unittest_failures(self) -> None:
        """unittest FAIL / ERROR sections give the test and its exception line."""
        failures = parse_failures(UNITTEST.split("\n"))
        assert [f.name for f in failures] == [
            "test_load (tests.test_io.LoadTests.test_load)",
            "test_sum (tests.test_math.MathTests.test_sum)",
        ]
        assert failures[0].error.startswith("FileNotFoundError: [Errno 2]")
        assert failures[1].error == "AssertionError: 4 != 5"

    def test_jest_and_go_failures(self) -> None:
        """jest's `●` headers and go's `--- FAIL` lines give the failures."""
        (jest,) = parse_failures(JEST.split("\n"))
        assert jest.name == "Math \u203a adds numbers"
        assert jest.error.startswith("expect(received).toBe(expected)")
        (go,) = parse_failures(GO_TEST.split("\n"))
        assert go == ("TestParse", "parse_test.go:14: want 3, got 4")


class TestDistillate:
    def test_header_counts_then_failures(self) -> None:
        """The distillate opens with the runner and counts, then one line per failure."""
        lines = _distill(PYTEST).split("\n")
        assert lines[0].startswith("[distilled test output, heavy: ")
        assert lines[1] == "[pytest: 2 failed, 39 passed, 1 skipped]"
        assert (
            lines[2]
            == "FAILED tests/test_api.py::test_create_user - AssertionError: assert 31 == 32"
        )
        assert lines[3].startswith("FAILED tests/test_models.py::test_order_total[3] - ")

    def test_runner_summary_lines_stay(self) -> None:
        """The runner's own summary lines stay verbatim at every level."""
        for level in ("medium", "heavy"):
            assert "Ran 6 tests in 0.004s" in _distill(UNITTEST, level)
            assert "FAILED (failures=1, errors=1, skipped=1)" in _distill(UNITTEST, level)
            assert "Tests:       1 failed, 1 skipped, 7 passed, 9 total" in _distill(JEST, level)
            assert "FAIL\texample.com/parse\t0.005s" in _distill(GO_TEST, level)

    def test_labels_name_the_runner(self) -> None:
        """The counts line names the runner."""
        assert "[unittest: 1 failed, 1 errors, 3 passed, 1 skipped]" in _distill(UNITTEST)
        assert "[jest: 1 failed, 7 passed, 1 skipped]" in _distill(JEST)
        assert "[go test: 1 failed, 1 passed, 1 skipped]" in _distill(GO_TEST)


class TestSummaryLine:
    """`summary_line`: the runner's own summary, verbatim, for the brief to quote."""

    @pytest.mark.parametrize(
        ("output", "expected"),
        [
            (
                "tests/a.py ..F\n===== 1 failed, 2 passed in 0.31s =====",
                "1 failed, 2 passed in 0.31s",
            ),
            ("....\n" + "-" * 70 + "\nRan 4 tests in 0.012s\n\nOK", "Ran 4 tests in 0.012s"),
            (
                "F.\n" + "-" * 70 + "\nRan 2 tests in 0.1s\n\nFAILED (failures=1)",
                "Ran 2 tests in 0.1s FAILED (failures=1)",
            ),
            (
                "Tests:       1 failed, 5 passed, 6 total\nTime: 2 s",
                "Tests:       1 failed, 5 passed, 6 total",
            ),
            (
                "running 5 tests\ntest result: ok. 5 passed; 0 failed; 0 ignored",
                "test result: ok. 5 passed; 0 failed; 0 ignored",
            ),
            (
                "--- FAIL: TestX (0.00s)\nFAIL\tgithub.com/acme/x\t0.012s",
                "FAIL\tgithub.com/acme/x\t0.012s",
            ),
            (
                "= 2 passed in 0.1s =\nlater run\n= 1 failed, 1 passed in 0.2s =",
                "1 failed, 1 passed in 0.2s",
            ),
            ("I ran 3 tests in my head\ncollected 5 items", ""),
            # OpenHands glues its interpreter note to the last line: read without it,
            # quoted with it (the line as the agent saw it).
            (
                "Ran 1 test in 0.000s\r\n\r\nFAILED (errors=1)[Python Interpreter: /opt/py]",
                "Ran 1 test in 0.000s FAILED (errors=1)[Python Interpreter: /opt/py]",
            ),
            # The verdict alone, when a distilled output no longer shows the `Ran` line.
            (
                "E   KeyError: 'id'\n[... 40 lines cut ...]\nFAILED (failures=2)",
                "FAILED (failures=2)",
            ),
            ("Ran 3 tests in 0.1s\n\nOK\nlater\nOK (skipped=1)", "OK (skipped=1)"),
        ],
    )
    def test_the_last_summary_as_printed(self, output: str, expected: str) -> None:
        assert summary_line(output.splitlines()) == expected

    def test_a_glued_note_does_not_hide_the_counts(self) -> None:
        """`FAILED (errors=1)[Python Interpreter: ...]` is one error, not a pass."""
        lines = ["Ran 1 test in 0.000s", "", "FAILED (errors=1)[Python Interpreter: /opt/py]"]
        counts = count_tests(lines)
        assert (counts["errors"], counts["passed"]) == (1, 0)

    @settings(max_examples=100, deadline=None)
    @given(st.lists(st.text(max_size=60), max_size=30))
    def test_any_text_gives_a_line_of_it_or_nothing(self, lines: list[str]) -> None:
        """Whatever the output, the answer is empty or a line of it (a verdict added)."""
        found = summary_line(lines)
        assert found == "" or any(
            found.startswith(line.strip().strip("=").strip()) for line in lines
        )


class TestHostileLines:
    """A line of a million characters made of `::` (a C++ or Rust name run together, a
    minified file): every output the distiller sees is asked whether it is a test run,
    and the per-test pattern tried every `::` of the line with every length after it
    (a line of 60,000 characters took seconds; this one would take hours). No timer
    here: with the pattern fixed, the test simply finishes."""

    LINE = "a::" * 333_334

    def test_it_is_no_test_run(self) -> None:
        lines = [self.LINE, self.LINE, "tests/test_app.py::test_ok PASSED"]
        assert not looks_like_tests([self.LINE, self.LINE])
        assert count_tests(lines)["passed"] == 0  # one per-test line alone is no run
        assert parse_failures(lines) == []
        assert not reports_a_pass(self.LINE)
        assert reports_a_pass(lines[2])

    def test_detection_reads_it_as_text(self) -> None:
        assert detect_content_type(f"{self.LINE}\n{self.LINE}") != "test_output"
        run = "tests/test_a.py::test_x PASSED\ntests/test_a.py::test_y FAILED"
        assert detect_content_type(f"{self.LINE}\n{run}") == "test_output"

    @pytest.mark.parametrize(
        ("line", "live"),
        [
            ("tests/test_app.py::TestTotals::test_sum[1-2] PASSED  [ 50%]", True),
            ("C:\\repo\\tests\\test_app.py::test_sum FAILED", True),
            ("tests/test_app.py::test_sum[a:b] ERROR", True),
            ("tests/test_app.py::test_sum[a b] PASSED", False),  # a space ends the id
        ],
    )
    def test_node_ids_still_read(self, line: str, live: bool) -> None:
        second = "tests/test_other.py::test_x PASSED"
        assert looks_like_tests([line, second]) is live
