"""Test-runner output (pytest, unittest, jest, go test): counts, then each failure.

The distillate opens with the counts (passed, failed, skipped, errors) and one line per
failure: its name and its first error line. The runner's own summary lines and every
distinct error line stay verbatim; the rest of the budget goes to the lines with the
most identifiers not kept yet.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import replace
from itertools import islice
from typing import NamedTuple

from processors.distill.common import Doc, is_error_line, select
from processors.distill.envelope import without_glued_note

__all__ = [
    "CARGO_RESULT",
    "FailedTest",
    "count_tests",
    "distill_tests",
    "looks_like_tests",
    "parse_failures",
    "reports_a_pass",
    "summary_line",
]

_PYTEST_SUMMARY = re.compile(
    r"^=*\s*((?:\d+ (?:passed|failed|errors?|skipped|xfailed|xpassed|deselected|warnings?)"
    r"(?:, )?)+)(?: in [\d.]+s.*)?\s*=*$"
)
#: A test's node id is its file, `::`, then the rest. The file is read up to its first
#: colon (a drive letter aside): `\S+::\S+` tried every `::` of a line with every length
#: after it, and a 60,000-character line of `a::a::...` took seconds to reject.
_NODE_ID = r"(?:[A-Za-z]:)?[^\s:]+::\S*"
_PYTEST_LIVE = re.compile(rf"^({_NODE_ID}) (PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS)\b")
_PYTEST_SHORT = re.compile(r"^(FAILED|ERROR) (\S+?)(?: - (.*))?$")
_PYTEST_SECTION = re.compile(r"^_{3,} (.+?) _{3,}$")
_UNITTEST_RAN = re.compile(r"^Ran (\d+) tests? in [\d.]+s$")
_UNITTEST_END = re.compile(r"^(OK|FAILED)(?: \((.*)\))?$")
_UNITTEST_HEAD = re.compile(r"^(FAIL|ERROR): (\S+ \(.+\))\s*$")
_JEST_TESTS = re.compile(r"^Tests:\s+(.*\d+ total)")
_JEST_HEAD = re.compile(r"^\s*● (.+\u203a.+)$")  # U+203A joins describe / test
_GO_RESULT = re.compile(r"^\s*--- (PASS|FAIL|SKIP): (\S+)")
_GO_PACKAGE = re.compile(r"^(ok|FAIL)\s+\S+\s+(?:[\d.]+s|\(cached\))|^(PASS|FAIL)$")
_SEPARATOR = re.compile(r"^(?:[-=_]{10,}|\s*)$")
_STRONG = (_PYTEST_SUMMARY, _UNITTEST_RAN, _JEST_TESTS, _GO_RESULT, _GO_PACKAGE)
# One alternation matches a line when one of its patterns does: one pass per line, not five.
_ANY_STRONG = re.compile("|".join(f"(?:{p.pattern})" for p in _STRONG))
_PER_TEST = re.compile(f"(?:{_PYTEST_LIVE.pattern})|(?:{_UNITTEST_HEAD.pattern})")
_WORDS = {
    "error": "errors",
    "warning": "warnings",
    "failures": "failed",
    "successes": "passed",
    "expected failures": "xfailed",
    "unexpected successes": "xpassed",
}


class FailedTest(NamedTuple):
    """A failed test and the first line of its error."""

    name: str
    """The test's name as the runner printed it."""
    error: str
    """The first error line of its report (empty when none was found)."""


def looks_like_tests(lines: Sequence[str]) -> bool:
    """Whether a test runner's summary or per-test result lines appear."""
    window = [*lines[:500], *lines[-500:]] if len(lines) > 1_000 else lines
    if any(map(_ANY_STRONG.match, window)):
        return True
    second = islice(filter(None, map(_PER_TEST.match, window)), 1, None)
    return next(second, None) is not None


def _add(counts: Counter[str], text: str) -> None:
    for number, word in re.findall(r"(\d+) (\w+)", text):
        counts[_WORDS.get(word, word)] += int(number)
    # unittest's `OK (expected failures=1)` is a pass: read the words before `=` whole.
    for words, number in re.findall(r"(\w[\w ]*)=(\d+)", text):
        counts[_WORDS.get(words, words)] += int(number)


def count_tests(lines: Sequence[str]) -> Counter[str]:
    """Passed / failed / skipped / error counts from the runner's summary lines."""
    counts: Counter[str] = Counter()
    ran = 0
    for line in lines:
        stripped = without_glued_note(line).strip()
        if match := _PYTEST_SUMMARY.match(stripped):
            _add(counts, match.group(1))
        elif match := _JEST_TESTS.match(stripped):
            _add(counts, match.group(1))
        elif match := _UNITTEST_RAN.match(stripped):
            ran += int(match.group(1))
        elif match := _UNITTEST_END.match(stripped):
            _add(counts, match.group(2) or "")
        elif match := _GO_RESULT.match(line):
            counts[{"PASS": "passed", "FAIL": "failed", "SKIP": "skipped"}[match.group(1)]] += 1
    if ran:
        counts["total"] = ran
        counts["passed"] = max(0, ran - counts["failed"] - counts["errors"] - counts["skipped"])
    return counts


#: A line that reports one test, test file or package passed, and nothing else: pytest's
#: `PASSED` and its progress line of dots, unittest's and cargo's `... ok`, jest's `PASS`,
#: vitest's and mocha's check marks, TAP's `ok 1 -`, go's `--- PASS:` and `ok  pkg`.
_PASSING = re.compile(
    rf"^{_NODE_ID} PASSED\b"
    r"|^\S+\.py [.sx]+\s*\[\s*\d+%\]\r?$"
    r"|\.\.\. ok\r?$"
    r"|^\s*PASS\s"
    r"|^\s*[\u2713\u2714\u221a] "
    r"|^\s*ok \d+ "
    r"|^\s*--- PASS: "
    r"|^ok\s+\S+\s+(?:[\d.]+s|\(cached\))"
)


def reports_a_pass(line: str) -> bool:
    """Whether `line` only says that a test (a test file, a package) passed.

    A failed run lists every test it ran; the lines of those that passed name files and
    tests the failure is not about.
    """
    return _PASSING.search(line) is not None


#: cargo's summary of a test binary, with its passed and failed counts.
CARGO_RESULT = re.compile(r"^test result: (?:ok|FAILED)\. (\d+) passed; (\d+) failed\b")
_SUMMARY_LINES = (_PYTEST_SUMMARY, _UNITTEST_RAN, _JEST_TESTS, CARGO_RESULT, _GO_PACKAGE)


def summary_line(lines: Sequence[str]) -> str:
    """The runner's own summary of the last run in `lines`, verbatim; else empty.

    pytest's counts line without its `=` rule (`3 failed, 12 passed in 0.31s`);
    unittest's `Ran 12 tests in 0.031s`, with the verdict after it when it gives counts
    (`Ran 12 tests in 0.031s FAILED (failures=1)`), or the verdict alone when its `Ran`
    line is not shown (cut from a distilled output); jest's `Tests:` line; cargo's `test
    result:` line; go's last package line.
    """
    found = ""
    joined = -1  # the index of a verdict line already written after its `Ran` line
    for index, line in enumerate(lines):
        # Matched without a harness note glued to its end, and kept with it: the line
        # as the agent saw it.
        stripped = without_glued_note(line).strip()
        if _UNITTEST_END.match(stripped) and "(" in stripped and index != joined:
            found = line.strip()  # a verdict with counts whose `Ran` line is not shown
            continue
        if not any(pattern.match(stripped) for pattern in _SUMMARY_LINES):
            continue
        found = line.strip().strip("=").strip()
        if _UNITTEST_RAN.match(stripped):
            after = [i for i in range(index + 1, min(index + 4, len(lines))) if lines[i].strip()]
            verdict = lines[after[0]].strip() if after else ""
            if _UNITTEST_END.match(without_glued_note(verdict)) and "(" in verdict:
                found, joined = f"{found} {verdict}", after[0]
    return found


def _first_error_after(lines: Sequence[str], start: int) -> str:
    """The first error-looking line of the section that starts at `start`."""
    fallback = ""
    for line in lines[start + 1 : start + 200]:
        stripped = line.strip()
        if _PYTEST_SECTION.match(stripped) or _UNITTEST_HEAD.match(stripped):
            break
        if stripped.startswith("E ") or re.match(r"^[\w.]*(?:Error|Exception)\b", stripped):
            return stripped.removeprefix("E").strip()
        if not fallback and stripped and not _SEPARATOR.match(stripped):
            fallback = stripped
    return fallback


def parse_failures(lines: Sequence[str]) -> list[FailedTest]:
    """Each failed test's name and first error line, in order, each test once."""
    found: dict[str, str] = {}
    for line in lines:  # pytest's short summary names tests best: read it first
        match = _PYTEST_SHORT.match(line.strip())
        if match and "::" in match.group(2):
            found.setdefault(match.group(2), match.group(3) or "")
    for index, line in enumerate(lines):
        stripped = line.strip()
        if (match := _UNITTEST_HEAD.match(stripped)) or (match := _JEST_HEAD.match(line)):
            found.setdefault(match.group(match.lastindex or 1), _first_error_after(lines, index))
        elif (match := _GO_RESULT.match(line)) and match.group(1) == "FAIL":
            found.setdefault(match.group(2), _first_error_after(lines, index))
        elif (match := _PYTEST_SECTION.match(stripped)) and not stripped.strip("_ ").isupper():
            name = match.group(1)
            if " " not in name and not any(known.endswith(f"::{name}") for known in found):
                found.setdefault(name, _first_error_after(lines, index))
    return [FailedTest(name, error) for name, error in found.items()]


def _runner(lines: Sequence[str]) -> str:
    text = "\n".join(lines[-300:])
    if _JEST_TESTS.search(text) or re.search(r"^Test Suites:", text, re.M):
        return "jest"
    if re.search(r"^(?:ok|FAIL)\s+\S+\s+[\d.]+s|^--- (?:PASS|FAIL)", text, re.M):
        return "go test"
    if re.search(r"^Ran \d+ tests? in", text, re.M):
        return "unittest"
    return "pytest"


def _header(lines: Sequence[str], failures: Sequence[FailedTest]) -> list[str]:
    counts = count_tests(lines)
    if not counts["failed"] and not counts["errors"] and failures:
        counts["failed"] = len(failures)
    order = ["failed", "errors", "passed", "skipped", "xfailed", "xpassed", "deselected"]
    shown = ", ".join(f"{counts[k]:,} {k}" for k in order if counts[k]) or "no counts found"
    out = [f"[{_runner(lines)}: {shown}]"]
    out.extend(
        f"FAILED {name} - {error}" if error else f"FAILED {name}" for name, error in failures
    )
    return out


def distill_tests(doc: Doc) -> str:
    """Distill test-runner output."""
    failures = parse_failures(doc.plain)
    header = "\n".join(_header(doc.plain, failures))
    summaries = {
        i
        for i, line in enumerate(doc.plain)
        if any(p.match(line.strip()) for p in (_PYTEST_SUMMARY, _UNITTEST_RAN, _UNITTEST_END))
        or _JEST_TESTS.match(line.strip())
        or _GO_PACKAGE.match(line)
    }
    seen: set[str] = set()
    errors: set[int] = set()
    for index, line in enumerate(doc.plain):
        stripped = line.strip()
        key = stripped.removeprefix("E ").strip()
        if is_error_line(line) and key not in header and key not in seen:
            seen.add(key)
            errors.add(index)
    rest = replace(doc, budget=doc.budget - doc.costs.of(header))
    return f"{header}\n{select(rest, summaries | errors)}"
