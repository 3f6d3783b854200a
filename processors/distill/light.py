"""The light level: changes that keep every piece of meaning.

Terminal colour codes go, and so do trailing whitespace and line-end carriage returns;
runs of blank lines become one (the numbered blank lines of a gutter stay: the number is
content) and line-number gutters lose their padding. Outside source code and JSON, where
layout is meaning, rulers of `=`, `-`, `_`, `─`, `⎯`... shrink to ten characters
(`processors.rulers`) and identical consecutive lines become one line with an `(xN)`
count. Indentation and the spaces inside a line are never touched: grep output and test
reports carry code whose indentation is meaning. JSON loses the whitespace between its
tokens, never a character inside a string, and keeps one space after a `,` or `:` where
the original spaced them (as `json.dumps` and pretty-printers do), so a line or a stretch
of the original stays a piece of the result (JSON shown with a line-number gutter keeps
its lines and numbers).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from processors.distill.common import has_gutter, split_gutter
from processors.rulers import shrink_rulers

__all__ = ["collapse_repeats", "json_separators", "light", "minify_json", "overdraw"]

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)")
#: A string (kept whole), a separator with the whitespace after it, or other whitespace.
_JSON_PIECE = re.compile(r'("(?:[^"\\]|\\.)*")|([,:])(\s*)|\s+', re.DOTALL)


def json_separators(text: str) -> tuple[str, str]:
    """The item and key separators `text` (valid JSON) uses: each with a space or without.

    A separator counts as spaced when whitespace follows it anywhere outside a string, so
    pretty-printed JSON (a newline and indentation after each `,`) reads as `", "`.
    """
    spaced = {",": False, ":": False}
    for match in _JSON_PIECE.finditer(text):
        separator = match.group(2)
        if separator and match.group(3):
            spaced[separator] = True
            if all(spaced.values()):
                break
    return ", " if spaced[","] else ",", ": " if spaced[":"] else ":"


def minify_json(text: str) -> str:
    """`text` (valid JSON) on one line, spaced like `json.dumps` with the original's separators."""
    item, key = json_separators(text)
    after = {",": item, ":": key}

    def piece(match: re.Match[str]) -> str:
        if match.group(1):
            return match.group(1)
        separator = match.group(2)
        return after[separator] if separator else ""

    return _JSON_PIECE.sub(piece, text)


def overdraw(line: str) -> str:
    """What a terminal shows of a line redrawn with carriage returns: the last drawing."""
    return line.rstrip("\r").rsplit("\r", 1)[-1] if "\r" in line else line


def _uncoloured(line: str) -> str:
    """The line without colour codes and trailing whitespace (carriage returns included)."""
    return (_ANSI.sub("", line) if "\x1b" in line else line).rstrip()  # codes start with ESC


def _shrink_rulers(lines: list[str]) -> list[str]:
    """Rulers cut to ten characters; the lines searched as one text, split only on a hit."""
    text = "\n".join(lines)
    if text.count("\n") != len(lines) - 1:  # a line holds a newline: one line at a time
        return [shrink_rulers(line)[0] for line in lines]
    # A ruler never spans a newline: the text's substitutions are its lines' substitutions.
    shrunk, count = shrink_rulers(text)
    return shrunk.split("\n") if count else lines


def _clean(lines: Sequence[str], *, layout: bool, gutter: bool) -> list[str]:
    if not gutter:
        cleaned = [_uncoloured(line) for line in lines]
        return cleaned if layout else _shrink_rulers(cleaned)
    split = [split_gutter(line) for line in lines]
    cleaned = [_uncoloured(rest) for _, rest in split]
    if not layout:
        cleaned = _shrink_rulers(cleaned)
    return [prefix + line for (prefix, _), line in zip(split, cleaned, strict=True)]


def _squeeze_blanks(lines: Sequence[str]) -> list[str]:
    """Runs of blank lines as one; none at the start or the end."""
    out: list[str] = []
    blank_before = True  # drops leading blank lines too
    for line in lines:
        blank = not line.strip()
        if blank and blank_before:
            continue
        out.append(line)
        blank_before = blank
    while out and not out[-1].strip():
        out.pop()
    return out


def collapse_repeats(lines: Sequence[str]) -> list[str]:
    """Identical consecutive lines as one line with an `(xN)` count (when that is shorter)."""
    out: list[str] = []
    index = 0
    while index < len(lines):
        end = index + 1
        while end < len(lines) and lines[end] == lines[index]:
            end += 1
        run, line = end - index, lines[index]
        count = f" (x{run})"
        if run > 1 and line and len(count) < (run - 1) * (len(line) + 1):
            out.append(line + count)
        else:
            out.extend(lines[index:end])
        index = end
    return out


def light(lines: Sequence[str], *, content_type: str, gutter: bool | None = None) -> str:
    """The light distillation of a body's lines, given its content type.

    `gutter` is `has_gutter(lines)` when the caller knows it already.
    """
    if gutter is None:
        gutter = has_gutter(lines)
    if content_type == "json" and not gutter:
        return minify_json("\n".join(lines))
    layout = content_type in {"python", "code", "json"}
    cleaned = _clean(lines, layout=layout, gutter=gutter)
    if not gutter:  # a numbered blank line still carries its number
        cleaned = _squeeze_blanks(cleaned)
    if not layout:
        cleaned = collapse_repeats(cleaned)
    return "\n".join(cleaned)
