"""How a tool call ended, read from its error flag, its exit status and its output.

Three answers: `failed`, `ok`, or `unknown` when nothing tells. A tool's error flag or a
non-zero exit status is a failure. Otherwise the output decides, strongest evidence
first: a test runner's summary (it beats any word around it, so a passing test named
`test_error_handling` is a pass), then a traceback, a compiler or linter error, an
`error:` line, `command not found`; then an exit status 0 or an explicit success line.
An exit status 0 does not outweigh a failure the output reports: agents pipe commands
through `tail` and `head`, and the status is the pipe's.

A *content* output (a file read, `cat`, `grep`, a fetched page) is what the call asked to
see, not a report of how it ran: only its error flag and the harness's exit status count.

A tool that reports each call in JSON (`tool_reports`: Cline 3's tools write
`[{"query": ..., "result": ..., "error": ..., "success": false}]` and set no error flag)
is read by its reports: a `success: false` is a failure, whose line is read from the
report's result (its traceback, its error line) or else is its error; a report of
success is read as any output, the exit status 0 of its harness.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal, TypeAlias

from processors.distill.testruns import CARGO_RESULT, count_tests, parse_failures, summary_line
from processors.distill.tracebacks import find_tracebacks
from processors.markers import without_markers

__all__ = [
    "Outcome",
    "Status",
    "error_gist",
    "exit_code",
    "harness_exit_code",
    "read_outcome",
    "reported_text",
    "success_gist",
    "telling_lines",
    "tool_reports",
]

Status: TypeAlias = Literal["failed", "ok", "unknown"]

# Exit statuses as harnesses write them: mini-swe-agent's tag, OpenHands' bracket line,
# Claude Code's first line of a failed command.
_HARNESS_EXIT = re.compile(
    r"<returncode>\s*(-?\d+)\s*</returncode>"
    r"|\[Command finished with exit code (-?\d+)\]"
    r"|\A\s*Exit code (-?\d+)[ \t]*$",
    re.MULTILINE,
)
# Any line that is just a phrase ending in an exit status ("Process exited with code 2",
# "Error: Process completed with exit code 1."); a mention inside a sentence is not one.
_EXIT_LINE = re.compile(
    r"^[ \t\[]*(?:[A-Za-z][\w :]{0,40}?\s)?(?:exit(?:ed)?(?: with)?|returned)"
    r" (?:code|status)[:=]?\s*(-?\d+)[ \t.\]]*$",
    re.MULTILINE | re.IGNORECASE,
)
# The opening of a JSON object or list, after any whitespace.
_JSON_OPENING = re.compile(r"\s*[\[{]")
# The headers Cline's command tool puts over each stream of a command's output.
_STREAM_HEADERS = re.compile(r"^\[(?:stdout|stderr)\][ \t]*$", re.MULTILINE)
# The wrappers harnesses put around an output (not `<string>` or `<module>` of a frame).
_WRAPPERS = re.compile(
    r"<returncode>\s*-?\d+\s*</returncode>|</?(?:output|stdout|stderr|tool_use_error)>"
)
_EXCEPTION = re.compile(r"\b[A-Z]\w*(?:Error|Exception)\b")
_ERROR_WORD = re.compile(r"\b(?:error|fail(?:ed|ure)?|fatal|panic)\b", re.IGNORECASE)
# A field that says there was no error (gemini-cli's shell tool: `Error: (none)`).
_NO_ERROR = re.compile(r"^\w+:\s*(?:\(none\)|none)\s*$", re.IGNORECASE)

# Test runners testruns does not count: cargo (`CARGO_RESULT`, shared with its summary
# line), mocha, ExUnit / RSpec, go's package lines.
_MOCHA = re.compile(r"^\s*(\d+) (passing|failing)\b")
_EXUNIT = re.compile(
    r"^((?:\d+ (?:doctests?|tests?|propert(?:y|ies)|examples?), )+)(\d+) failures?\b"
)
_GO_PACKAGE = re.compile(r"^(ok|FAIL)\s+\S+\s+(?:[\d.]+s|\(cached\))|^(FAIL)$")
_ORDER = ("failed", "errors", "passed", "skipped", "xfailed", "xpassed", "deselected")

# Failure lines, anchored at the start of the line: a word in the middle of a sentence
# ("rejected with error: ...") or in a source listing (indented) is not a report.
_FAILURE_LINES = re.compile(
    # rustc, git, pip; not a field that says there was none (gemini-cli's shell tool
    # wrote `Error: (none)` under every command's output)
    r"^(?:error|fatal|Error|Fatal|ERROR|FATAL)(?:\[[\w-]+\])?:(?!\s*(?:\(none\)|none)\s*$)(?:\s|$)"
    r"|^\S+?:\d+(?::\d+)?:\s*(?:fatal )?error\b"  # gcc, clang, mypy
    r"|^\S+\(\d+,\d+\): error\b"  # tsc
    r"|^\S+\.go:\d+:\d+: "  # go build
    r"|^\S+:\d+:\d+: [A-Z]{1,3}\d{1,4}\b"  # flake8, ruff
    r"|^Found [1-9]\d* errors?\b"  # mypy, ruff
    r"|^\S+ \d+ problems? \([1-9]\d* errors?"  # eslint
    r"|^\s*(?:[\w.]+\.)?(?:SyntaxError|IndentationError|TabError)\b:?"
    r"|^\*\* \([\w.]+\)"  # Elixir: ** (CompileError), ** (Mix)
    r"|^npm ERR! "
    r"|^(?:\S*sh)(?:: line \d+)?: (?:[^:\n]+: )?command not found\b"
    r"|^zsh: command not found: "
    r"|^\S+: command not found$",
    re.MULTILINE,
)
_SUCCESS_LINES = re.compile(
    r"^Success: no issues found\b"  # mypy
    r"|^All checks passed!"  # ruff
    r"|^Successfully (?:installed|built|tagged|uninstalled|created|wrote|updated)\b"
    r"|^BUILD SUCCESSFUL\b|^\[INFO\] BUILD SUCCESS\b|^Build succeeded\b"
    r"|^The file \S.* has been (?:updated|edited|created)\b"
    r"|^File created successfully at: ",
    re.MULTILINE,
)
_SUCCESSFULLY = re.compile(r"\bsuccessfully\b", re.IGNORECASE)
_NEGATED = re.compile(r"\b(?:not|never|un\w+|fail\w*|error\w*)\b|n't\b", re.IGNORECASE)
_JS_ERROR = re.compile(r"\b\w*(?:Error|Exception)\b")


@dataclass(frozen=True, slots=True)
class Outcome:
    """How a tool call ended.

    Attributes:
        status: `failed`, `ok`, or `unknown` when nothing in the result tells.
        code: The exit status, when the result gives one.
        counts: A test run's counts as read (`1 failed, 3 passed`), in our words; else
            empty.
        line: Text copied from the output: for a failure the line that says what went
            wrong (or the first failed test with its error), for a success the line
            that said so; else empty.
    """

    status: Status
    code: int | None
    counts: str = ""
    line: str = ""

    @property
    def failed(self) -> bool:
        """Whether the call failed."""
        return self.status == "failed"

    @property
    def ok(self) -> bool:
        """Whether something says the call succeeded."""
        return self.status == "ok"

    @property
    def gist(self) -> str:
        """The counts and the copied line as one plain string (`1 failed: test_x - ...`)."""
        if self.counts and self.line and self.counts not in self.line:
            return _clip(f"{self.counts}: {self.line}")
        if self.line:  # a runner's summary that says the counts itself
            return _clip(self.line)
        return self.counts

    def describe(self, quote: Callable[[str], str] | None = None) -> str:
        """`failed (exit 2): gist`, `ok (exit 0, 3 passed)`, `outcome unknown` and the like.

        Args:
            quote: Writes the copied `line` as quoted tool output. When given, the line
                follows `words()` after a `; ` (`failed (exit 1): 1 failed; <quote>`);
                when `None`, it is plain text inside the description.
        """
        if quote is None:
            return self._described(self.gist)
        words = self.words()
        return f"{words}; {quote(self.line)}" if self.line else words

    def words(self) -> str:
        """The description in our words alone: the status, the exit status, the counts."""
        return self._described(self.counts)

    def _described(self, gist: str) -> str:
        if self.status == "unknown":
            return "outcome unknown"
        if self.status == "ok":
            said = [f"exit {self.code}"] if self.code is not None else []
            said += [gist] if gist else []
            return f"ok ({', '.join(said)})" if said else "ok"
        status = f"failed (exit {self.code})" if self.code is not None else "failed"
        return f"{status}: {gist}" if gist else status


def _clip(text: str, limit: int = 200) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 6].rstrip() + " [...]"


def _as_written(text: str, line: str) -> str:
    """`line`, read with the harness's wrappers taken out, as the output writes it.

    An error is quoted verbatim: a tool's refusal that is one wrapped line
    (`<tool_use_error>File has not been read yet</tool_use_error>`) keeps its tags, as
    the agent saw it. A harness's wrappers of the whole output (`<output>`,
    `<returncode>`) are not the error's; nor is a line clipped.
    """
    for raw in text.splitlines():
        if _REFUSAL.search(raw) and _clip(_WRAPPERS.sub("", raw)) == line:
            return _clip(raw)
    return line


def _plain(text: str) -> str:
    """`text` as a reader of its outcome sees it: no wrappers, no processor's markers.

    The harness's wrappers go, and so do the markers a distillation or truncation put
    where it left lines out: a distilled traceback's `[... 1 line ...]` is not its
    exception.
    """
    return without_markers(_WRAPPERS.sub("", text))


#: The tag a tool wraps its own refusal in (Claude Code's), part of what it said.
_REFUSAL = re.compile(r"<tool_use_error>")


def harness_exit_code(text: str) -> int | None:
    """The exit status a harness wrapped around an output, if any (the last one wins)."""
    codes = [int(next(g for g in groups if g)) for groups in _HARNESS_EXIT.findall(text)]
    return codes[-1] if codes else None


def exit_code(text: str) -> int | None:
    """The exit status a tool result reports, if it reports one (the last one wins).

    The harnesses' own forms, and any line that is a short phrase ending in an exit
    status ("Process exited with code 2"); a sentence that mentions one is not read.
    """
    found = [
        (match.start(), int(next(g for g in match.groups() if g)))
        for pattern in (_HARNESS_EXIT, _EXIT_LINE)
        for match in pattern.finditer(text)
    ]
    return max(found)[1] if found else None


def telling_lines(text: str) -> list[str]:
    """The lines of an output that say something, stripped and otherwise as written.

    A blank line, one that is only a harness's wrapper (`<output>`, `<returncode>0
    </returncode>`) and an exit-status line say nothing of their own.
    """
    return [
        line.strip()
        for line in text.splitlines()
        if _WRAPPERS.sub("", line).strip() and not _EXIT_LINE.match(line.strip())
    ]


def error_gist(text: str) -> str:
    """The one line of an error output that says what went wrong.

    The last line naming an exception (a traceback ends with it), else the first line
    that mentions an error or a failure, else the first line.
    """
    lines = [line.strip() for line in _plain(text).splitlines() if line.strip()]
    if not lines:
        return ""
    named = [line for line in lines if _EXCEPTION.search(line)]
    if named:
        return _clip(named[-1])
    hits = [line for line in lines if _ERROR_WORD.search(line) and not _NO_ERROR.match(line)]
    return _clip(hits[0] if hits else lines[0])


@dataclass(frozen=True, slots=True)
class _Tests:
    failed: bool
    counts: str
    first_failure: str
    summary: str
    """The runner's summary line, verbatim (`testruns.summary_line`)."""


def _more_counts(lines: Sequence[str]) -> tuple[Counter[str], bool]:
    """Counts from the runners testruns does not read, and whether a go package passed."""
    counts: Counter[str] = Counter()
    go_ok = False
    for line in lines:
        stripped = line.strip()
        if match := CARGO_RESULT.match(stripped):
            counts["passed"] += int(match.group(1))
            counts["failed"] += int(match.group(2))
        elif match := _MOCHA.match(line):
            counts["passed" if match.group(2) == "passing" else "failed"] += int(match.group(1))
        elif match := _EXUNIT.match(stripped):
            ran = sum(int(n) for n in re.findall(r"\d+", match.group(1)))
            failures = int(match.group(2))
            counts["failed"] += failures
            counts["passed"] += max(0, ran - failures)
        elif match := _GO_PACKAGE.match(line):
            go_ok |= match.group(1) == "ok"
            counts["failed"] += match.group(1) != "ok"
    return counts, go_ok


def _tests(lines: Sequence[str]) -> _Tests | None:
    """A test runner's verdict, when its summary is in the output."""
    counts = count_tests(lines)
    more, go_ok = _more_counts(lines)
    counts.update(more)
    bad = counts["failed"] + counts["errors"]
    if not bad and not counts["passed"] and not go_ok:
        return None
    shown = ", ".join(
        f"{counts[k]:,} {'error' if k == 'errors' and counts[k] == 1 else k}"
        for k in _ORDER
        if counts[k]
    )
    first = ""
    if bad:
        failures = parse_failures(lines)
        if failures:
            name, error = failures[0]
            first = _clip(f"{name} - {error}" if error else name)
    return _Tests(bad > 0, shown, first, summary_line(lines))


def _failed_run(code: int | None, tests: _Tests) -> Outcome:
    """A failed test run: its first failure quoted, the runner's summary beside the counts.

    The summary as printed (`FAILED (errors=1)`, `1 failed, 3 passed in 0.20s`) is what
    the agent compares its next run with; when it says the counts itself it stands for
    them. With no failure to quote, the summary is the quote.
    """
    counts, summary = tests.counts, tests.summary
    if not tests.first_failure:
        return Outcome("failed", code, counts, summary)
    if summary and summary != counts:
        counts = summary if counts in summary else f"{counts} ({summary})"
    return Outcome("failed", code, counts, tests.first_failure)


def _traceback_gist(lines: Sequence[str]) -> str | None:
    """The exception line of the last traceback (or stack trace) in `lines`, if any."""
    gist = None
    for block in find_tracebacks(lines):
        head = lines[block.start]
        if block.tail:  # the exception line; a long message may go on below it
            gist = lines[block.tail[0]]
        elif head.lstrip().startswith("Traceback"):
            gist = head
        elif _JS_ERROR.search(head):  # `at ...` frames under an error line
            gist = head
    return _clip(gist) if gist else None


def _failure_line(text: str, lines: Sequence[str]) -> str | None:
    """The line of the output that reports a failure, if one does."""
    traceback = _traceback_gist(lines)
    if traceback:
        return traceback
    match = _FAILURE_LINES.search(text)
    return _clip(_line_at(text, match.start())) if match else None


def _line_at(text: str, offset: int) -> str:
    """The whole line of `text` that contains `offset`."""
    start = text.rfind("\n", 0, offset) + 1
    end = text.find("\n", offset)
    return text[start : end if end >= 0 else len(text)]


def read_outcome(text: str, *, is_error: bool, code: int | None, content: bool) -> Outcome:
    """The outcome of one tool call.

    Args:
        text: The result's text.
        is_error: The tool's error flag.
        code: The exit status recorded with the result, if any (else read from `text`).
        content: The output is content the call fetched (a file, a search), not a report
            of a run: only `is_error` and the harness's exit status count.
    """
    reports = tool_reports(text)
    if reports is not None:
        return _reported(reports, is_error=is_error, code=code, content=content)
    if code is None:
        code = harness_exit_code(text) if content else exit_code(text)
    if content:
        if is_error or (code is not None and code != 0):
            return Outcome("failed", code, line=error_gist(text))
        return Outcome("ok", code) if code == 0 else Outcome("unknown", None)
    plain = _plain(text)
    lines = plain.splitlines()
    tests = _tests(lines)
    if is_error or (code is not None and code != 0):
        if tests and tests.failed:
            return _failed_run(code, tests)
        line = _failure_line(plain, lines) or error_gist(text)
        return Outcome("failed", code, line=_as_written(text, line))
    if tests is not None:
        # A passing run's line is the runner's own summary: the line that said it passed.
        if tests.failed:
            return _failed_run(code, tests)
        return Outcome("ok", code, tests.counts, tests.summary)
    failure = _failure_line(plain, lines)
    if failure:
        return Outcome("failed", code, line=_as_written(text, failure))
    if code == 0:
        return Outcome("ok", code)
    success = _success_line(plain, lines)
    if success:
        return Outcome("ok", None, line=success)
    return Outcome("unknown", None)


def tool_reports(text: str) -> list[dict[str, object]] | None:
    """The output as a tool's JSON reports, if it is one.

    An object, or a list of them, each with a boolean `success` at its top (a fetched
    document that holds such a field deeper down is not a report).
    """
    # Every output's outcome asks this: most are not JSON, and are not copied to say so.
    if _JSON_OPENING.match(text) is None or '"success"' not in text:
        return None
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):  # not JSON, or nested deeper than the parser goes
        return None
    reports = value if isinstance(value, list) else [value]
    if not reports or not all(
        isinstance(r, dict) and isinstance(r.get("success"), bool) for r in reports
    ):
        return None
    return reports


def reported_text(text: str) -> str:
    """What an output says, for reading its lines.

    Of a tool's JSON reports (`tool_reports`), each result and error in turn, with their
    line breaks; any other output as it is.
    """
    reports = tool_reports(text)
    if reports is None:
        return text
    said = (r.get(key) for r in reports for key in ("result", "error"))
    return "\n".join(value for value in said if isinstance(value, str) and value.strip())


def _reported(
    reports: Sequence[dict[str, object]], *, is_error: bool, code: int | None, content: bool
) -> Outcome:
    """The outcome of the calls a tool reported: the first that failed, else the last.

    An error flag or a non-zero exit status recorded with the output fails it too.
    """
    failed = [r for r in reports if r["success"] is False]
    report = failed[0] if failed else reports[-1]
    result, error = report.get("result"), report.get("error")
    text = result if isinstance(result, str) else ""
    note = error if isinstance(error, str) else ""
    if failed or is_error or (code is not None and code != 0):
        # Cline's result opens with `[Command exited with code 1]` and `[stderr]`: the
        # status is read from it, the line from what the command printed.
        if code is None and text:
            code = exit_code(text)
        printed = _STREAM_HEADERS.sub("", _EXIT_LINE.sub("", text)).strip()
        inner = read_outcome(printed or note, is_error=True, code=code, content=False)
        line = inner.line or _clip(note)
        return Outcome("failed", inner.code, inner.counts, line)
    inner = read_outcome(text, is_error=False, code=code, content=content)
    # The tool said the call succeeded, as an exit status 0 does; what its output
    # reports (a failed test under `| tail`) still outweighs it.
    return inner if inner.status != "unknown" else Outcome("ok", None)


def success_gist(text: str) -> str:
    """The line of an output that did not fail that shows what it did, for a brief.

    A tool's confirmation or a checker's all-clear; else, for a test run, its last line
    (the runner's tally); else the first line that is more than an exit status.
    """
    plain = _plain(text)
    lines = plain.splitlines()
    found = _success_line(plain, lines)
    if found:
        return found
    shown = [line for line in lines if line.strip() and not _EXIT_LINE.match(line)]
    if not shown:
        return ""
    return _clip(shown[-1] if _tests(lines) is not None else shown[0], 160)


def _success_line(plain: str, lines: Sequence[str]) -> str | None:
    """A line that says the call succeeded: a tool's confirmation, a checker's all-clear."""
    match = _SUCCESS_LINES.search(plain)
    if match:
        return _clip(_line_at(plain, match.start()), 80)
    first = next((line.strip() for line in lines if line.strip()), "")
    # A tool's confirmation opens its result ("Session published successfully: ...").
    if _SUCCESSFULLY.search(first) and not _NEGATED.search(first):
        return _clip(first, 80)
    return None
