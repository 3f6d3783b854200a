"""The masker's first-error gist skips the line scan of an output that names no error.

`_first_error_line` runs once per masked output; the scan for an error line walks every
position of a long output. An output holding none of the words every error line has is
not scanned, and the gist is the one the scan would give, whatever the text.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from processors import mask
from processors.mask import _first_error_line


class _CountingPattern:
    """`_ERROR_LINE` that counts its scans."""

    def __init__(self, pattern: re.Pattern[str]) -> None:
        self.pattern = pattern
        self.scans = 0

    def finditer(self, text: str) -> Any:
        self.scans += 1
        return self.pattern.finditer(text)


def _scanned(text: str, *, is_error: bool = False) -> str | None:
    """The gist with the scan always run (what `_first_error_line` gave before)."""
    line = mask._error_line(text)
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
    *("12\t", "ok"),
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
        assert counting.scans == 1

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
