"""The masker's first-error gist scans an output only next to the words errors hold.

`_first_error_line` runs once per masked output; the scan for an error line walks every
position of a long output. An output holding none of the words every error line has is
not scanned, one holding some is tried only where a match could start near them, and
the gist is the one the whole scan would give, whatever the text. The exit status is
searched for only in an output holding a string each of its patterns needs.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from context_graph.graph.content import TextPart
from context_graph.graph.nodes import AnswerNode, ToolResultNode
from processors import mask
from processors.mask import _first_error_line


class _CountingPattern:
    """`_ERROR_LINE` that counts its whole scans and the positions it is tried at."""

    def __init__(self, pattern: re.Pattern[str]) -> None:
        self.pattern = pattern
        self.scans = 0
        self.tries = 0

    def finditer(self, text: str) -> Any:
        self.scans += 1
        return self.pattern.finditer(text)

    def match(self, text: str, position: int) -> re.Match[str] | None:
        self.tries += 1
        return self.pattern.match(text, position)


def _scan(text: str) -> str | None:
    """The error line the whole scan finds (what `_error_line` gave before)."""
    return mask._pick(text, mask._ERROR_LINE.finditer(text))


def _scanned(text: str, *, is_error: bool = False) -> str | None:
    """The gist with the whole scan always run (what `_first_error_line` gave before)."""
    line = _scan(text)
    if line is None and is_error:
        line = next((ln for ln in text.splitlines() if ln.strip()), None)
    if line is None:
        return None
    line = " ".join(line.split())
    if len(line) > mask._GIST_CHARS:
        line = line[: mask._GIST_CHARS - 1].rstrip() + "…"
    return line or None


_PIECES = (
    *("error", "ERROR", "Error", "exception", "Exception", "Traceback", "fatal", "FATAL"),
    *("Traceback (most recent call last)", "panic", "fail", "failed", "FAIL", ":", "["),
    *("\u0130", "\u0131", "\u212a", " ", "\n", "  ", "x", "Value", "raise ", "def "),
    *("12\t", "ok", "\t", "\r\n", "_", "é", "FooError", "errors", "# ", "err"),
)


class TestErrorScan:
    """Which outputs are scanned for an error line."""

    def test_output_without_error_words_is_not_scanned(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A long clean log is not scanned; one that names an error is, once."""
        counting = _CountingPattern(mask._ERROR_LINE)
        monkeypatch.setattr(mask, "_ERROR_LINE", counting)
        clean = "\n".join(f"line {i}: compiled module_{i}.py ok" for i in range(2000))
        assert _first_error_line(clean) is None
        assert counting.scans == 0
        assert _first_error_line(clean + "\nERROR: disk full") == "ERROR: disk full"
        assert counting.scans == 0

    def test_output_naming_an_error_is_tried_only_near_the_words(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A long log with two error words is tried at a few positions, not scanned whole."""
        counting = _CountingPattern(mask._ERROR_LINE)
        monkeypatch.setattr(mask, "_ERROR_LINE", counting)
        log = "\n".join(f"line {i}: compiled module_{i}.py ok" for i in range(2000))
        text = f"{log}\n    raise KeyError(name)\n{log}\n  error: disk full\n{log}"
        assert _first_error_line(text) == "error: disk full"
        assert counting.scans == 0
        assert counting.tries <= 16  # the run before each word, up to the word

    @pytest.mark.parametrize(
        "text",
        ["PAN\u0130C: gone", "fa\u0131l", "  FA\u0130LED", "x\nfatal [3]", "BadThingException"],
    )
    def test_case_folded_words_are_scanned(self, text: str) -> None:
        """Words matched only case-insensitively (dotted and dotless i too) are found."""
        assert _first_error_line(text) == _scanned(text)
        assert _first_error_line(text) is not None

    @settings(max_examples=300, deadline=None)
    @given(
        pieces=st.lists(st.sampled_from(_PIECES) | st.text(max_size=4), max_size=12),
        is_error=st.booleans(),
    )
    def test_same_gist_as_the_scan(self, pieces: list[str], is_error: bool) -> None:
        """For any text, the gist is the one the scan gives."""
        text = "".join(pieces)
        assert _first_error_line(text, is_error=is_error) == _scanned(text, is_error=is_error)

    @settings(max_examples=500, deadline=None)
    @given(pieces=st.lists(st.sampled_from(_PIECES) | st.text(max_size=4), max_size=16))
    def test_same_matches_as_the_whole_scan(self, pieces: list[str]) -> None:
        """Tried near the words, the matches are those of the whole scan, in order."""
        text = "".join(pieces)
        lowered = text.lower()
        if len(lowered) == len(text):
            near = mask._matches_near_words(text, lowered)
            assert [m.span() for m in near] == [m.span() for m in mask._ERROR_LINE.finditer(text)]


class _CountingSearch:
    """An exit-status pattern that counts its searches."""

    def __init__(self, pattern: re.Pattern[str], searches: list[str]) -> None:
        self.pattern = pattern
        self._searches = searches

    def search(self, text: str) -> re.Match[str] | None:
        self._searches.append(self.pattern.pattern)
        return self.pattern.search(text)


def _node(text: str) -> AnswerNode:
    return ToolResultNode(
        id="r1", tool_call_id="c1", name="bash", content=(TextPart(text=text),), turn=0
    )


_EXIT_PIECES = (
    *("<returncode>", "</returncode>", "[Command finished with exit code ", "]", "Exit code"),
    *("exit code", "Exit status", "exit status", ":", " ", "\n", "  ", "-", "0", "127", "x"),
)


class TestExitCode:
    """Which outputs are searched for an exit status."""

    def test_output_without_a_status_string_is_not_searched(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A long log naming no exit status is searched by none of the patterns."""
        searches: list[str] = []
        counting = tuple(
            (needed, _CountingSearch(pattern, searches)) for needed, pattern in mask._EXIT_PATTERNS
        )
        monkeypatch.setattr(mask, "_EXIT_PATTERNS", counting)
        log = "\n".join(f"line {i}: compiled module_{i}.py ok" for i in range(2000))
        assert mask._exit_code(_node(log)) is None
        assert searches == []
        assert mask._exit_code(_node(f"{log}\nExit code 3")) == 3
        assert len(searches) == 1

    @settings(max_examples=300, deadline=None)
    @given(pieces=st.lists(st.sampled_from(_EXIT_PIECES) | st.text(max_size=3), max_size=12))
    def test_same_code_as_searching_every_pattern(self, pieces: list[str]) -> None:
        """For any output, the code is the one searching every pattern in turn gives."""
        text = "".join(pieces)
        searched = next(
            (
                int(match.group(1))
                for _, pattern in mask._EXIT_PATTERNS
                if (match := pattern.search(text))
            ),
            None,
        )
        assert mask._exit_code(_node(text)) == searched
