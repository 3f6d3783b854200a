"""Cutting text into the units a truncation keeps or omits, and describing what it omits.

A unit is a run of text between two places where a cut is allowed: line ends for plain
text; line ends and element boundaries (never inside a tag) for HTML / XML. A line too
long to be a sensible unit is split into chunks at character boundaries that never
separate a base character from its combining marks or an emoji from its joiners.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from itertools import accumulate
from typing import Literal, TypeAlias

from processors.truncate.markup import TAG, markup_pieces

__all__ = ["TextFormat", "describe_gap", "marker", "offsets", "safe_cut", "split_units"]

TextFormat: TypeAlias = Literal["text", "markup"]

# Characters that belong to the character before them: a cut must not fall before one.
_JOINERS = frozenset("\u200d\u200c\u034f")
_SELECTORS = re.compile(r"[\ufe00-\ufe0f\U000e0100-\U000e01ef\U0001f3fb-\U0001f3ff]")


def safe_cut(text: str, index: int) -> int:
    """The nearest index at or before `index` where a cut keeps every character whole.

    Python strings hold code points, so no UTF-8 sequence can be split; this also keeps
    combining marks, variation selectors, skin tones and zero-width joiners with the
    character they modify, and a CR LF pair together.
    """
    index = max(0, min(index, len(text)))
    while 0 < index < len(text) and _binds_to_previous(text, index):
        index -= 1
    return index


def _binds_to_previous(text: str, index: int) -> bool:
    char, before = text[index], text[index - 1]
    if unicodedata.combining(char) or char in _JOINERS or _SELECTORS.match(char):
        return True
    if before in _JOINERS:
        return True
    return before == "\r" and char == "\n"


def split_units(text: str, fmt: TextFormat, *, chunk_chars: int) -> list[str]:
    """Cut `text` into units whose concatenation is `text` again.

    Args:
        text: The text to cut.
        fmt: `text` cuts at line ends; `markup` also at element boundaries.
        chunk_chars: Units longer than four times this are split into chunks of about
            this many characters (outside tags only).
    """
    pieces = markup_pieces(text) if fmt == "markup" else _lines(text)
    if max(map(len, pieces), default=0) <= 4 * chunk_chars:
        return pieces
    units: list[str] = []
    for piece in pieces:
        if len(piece) > 4 * chunk_chars:
            units.extend(_chunks(piece, chunk_chars))
        else:
            units.append(piece)
    return units


def _lines(text: str) -> list[str]:
    parts = text.split("\n")
    lines = [part + "\n" for part in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


def _chunks(piece: str, size: int) -> list[str]:
    """Split a long unit into chunks, keeping tags whole and preferring to cut at spaces."""
    out: list[str] = []
    position = 0
    for match in TAG.finditer(piece):
        out.extend(_chunk_run(piece[position : match.start()], size))
        out.append(match.group(0))
        position = match.end()
    out.extend(_chunk_run(piece[position:], size))
    return [chunk for chunk in out if chunk]


def _chunk_run(run: str, size: int) -> list[str]:
    chunks: list[str] = []
    start = 0
    while len(run) - start > size:
        end = start + size
        space = run.rfind(" ", start + size // 2, end)
        cut = space + 1 if space > start else safe_cut(run, end)
        if cut <= start:  # a grapheme longer than a chunk: keep it whole
            cut = end
            while cut < len(run) and _binds_to_previous(run, cut):
                cut += 1
        chunks.append(run[start:cut])
        start = cut
    chunks.append(run[start:])
    return chunks


def describe_gap(text: str, start: int, end: int, breaks: int | None = None) -> str:
    """Say how much of `text[start:end]` is left out: whole lines, or characters too.

    Whole lines read `4,812 lines`; a span inside one line reads `812 characters`; a
    span that starts or ends inside a line reads `3 lines, 1,204 characters`. `breaks`
    is the span's count of line ends, when known (`0 <= start <= end <= len(text)`).
    """
    if breaks is None:
        breaks = text.count("\n", start, end)
    size = end - start
    ends_line = text.endswith("\n", start, end)
    lines = breaks + (0 if ends_line else 1)
    whole = (start == 0 or text[start - 1] == "\n") and (end == len(text) or ends_line)
    if whole:
        return f"{lines:,} {'line' if lines == 1 else 'lines'}"
    if breaks == 0:
        return f"{size:,} {'character' if size == 1 else 'characters'}"
    return f"{lines:,} lines, {size:,} characters"


def marker(text: str, start: int, end: int, tokens: int, breaks: int | None = None) -> str:
    """The omission marker for `text[start:end]`, which holds `tokens` tokens (and `breaks`)."""
    return f"[... {describe_gap(text, start, end, breaks)} / {tokens:,} tokens omitted ...]"


def offsets(units: Sequence[str]) -> list[int]:
    """Start offset of every unit, plus the total length at the end."""
    return list(accumulate(map(len, units), initial=0))
