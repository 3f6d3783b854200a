"""Rulers: runs of one drawing character that mark a section, shrunk to ten characters.

A ruler says "a new section starts here"; ten characters say it as well as two hundred.
The ASCII ones (`=====`, `-----`) cost a few tokens however long, the box-drawing ones
do not: cl100k_base encodes U+23AF, the rule Vitest and Jest draw around each failed
test, as three tokens a character, so one such rule costs about 600 tokens, as much as
the failure it frames. The light distiller shrinks every ruler outside source code and
JSON; the truncator, which cuts any text, shrinks only those that cost tokens
(`shrink_rulers(count=...)`) before it counts what to cut. A ruler's characters are
never JSON syntax nor an escape, so a JSON text stays valid.
"""

from __future__ import annotations

import re
from collections.abc import Callable

__all__ = ["RULER", "RULER_LENGTH", "shrink_rulers"]

RULER_LENGTH = 10
"""How many characters a shrunk ruler keeps."""

#: A run of more than `RULER_LENGTH` of one character: ASCII rulers, then the horizontal
#: lines of box drawing (light, heavy, double, dashed), U+23AF (Vitest's and Jest's rule)
#: and U+2015 (horizontal bar). A ruler never spans a line end.
RULER = re.compile(r"([=\-_~*#\u2500\u2501\u2550\u254c\u2504\u2508\u23af\u2015])\1{10,}")

#: With a counter, a ruler is shrunk when that saves more tokens than this.
_WORTH_TOKENS = 16


def shrink_rulers(text: str, count: Callable[[str], int] | None = None) -> tuple[str, int]:
    """`text` with each ruler cut to `RULER_LENGTH` characters, and how many were cut.

    With `count`, only the rulers whose cut saves more than `_WORTH_TOKENS` tokens.
    Without a ruler to cut, `text` itself and 0.
    """
    shrunk = 0

    def shorter(match: re.Match[str]) -> str:
        nonlocal shrunk
        ruler, short = match.group(0), match.group(1) * RULER_LENGTH
        if count is not None and count(ruler) - count(short) <= _WORTH_TOKENS:
            return ruler
        shrunk += 1
        return short

    result = RULER.sub(shorter, text)
    return (result, shrunk) if shrunk else (text, 0)
