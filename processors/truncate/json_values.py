"""Truncating JSON so that the result is still valid JSON.

Long arrays keep their first items and end with a count marker element
(`"[... 812 more items]"`), long objects keep their first keys and a marker key, long
strings keep their beginning and say how many characters follow, and containers nested
too deep become a marker string. One size knob scales all three limits together; the
largest knob that fits is searched for, then the string limit alone is raised to fill
what is left.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from itertools import islice
from typing import Any

from processors.truncate.fit import Budget, largest
from processors.truncate.units import safe_cut

__all__ = ["MAX_DEPTH", "fit_json", "parse_json"]

#: Containers nested deeper than this are always replaced by a marker string.
MAX_DEPTH = 64
_CHARS_PER_STEP = 32
_MIN_CHARS = 16


def parse_json(text: str) -> dict[str, Any] | list[Any] | None:
    """The object or array that `text` holds, or `None` if it is not one (or too deep)."""
    stripped = text.strip()
    if not stripped or stripped[0] not in "[{":
        return None
    try:
        value = json.loads(stripped, parse_constant=_refuse_constant)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict | list) else None


def _refuse_constant(name: str) -> None:
    # NaN and Infinity parse in Python but are not JSON: treat such text as plain text.
    msg = f"{name} is not valid JSON"
    raise ValueError(msg)


@dataclass(frozen=True)
class _Limits:
    items: int
    chars: int
    depth: int


@dataclass(frozen=True)
class _Style:
    indent: int | str | None
    separators: tuple[str, str]
    ensure_ascii: bool


def fit_json(text: str, value: dict[str, Any] | list[Any], budget: Budget) -> str | None:
    """Valid JSON for `value`, shortened to fit `budget`; `None` if even the least fails."""
    style = _style(text)
    widest, longest, deepest = _extent(value)

    def render(size: int, chars: int | None = None) -> str:
        limits = _Limits(
            items=size,
            chars=_MIN_CHARS + _CHARS_PER_STEP * size if chars is None else chars,
            depth=min(MAX_DEPTH, 1 + size),
        )
        return _dump(_shrink(value, limits, 0), style)

    if not budget.fits(render(0)):
        return None
    upper = max(widest, deepest, longest // _CHARS_PER_STEP) + 1
    size = largest(lambda s: budget.fits(render(s)), 0, upper)
    floor = _MIN_CHARS + _CHARS_PER_STEP * size
    if longest > floor:
        chars = largest(lambda c: budget.fits(render(size, c)), floor, longest)
        return render(size, chars)
    return render(size)


def _extent(value: Any) -> tuple[int, int, int]:
    """The widest container, the longest string and the nesting depth (iteratively)."""
    widest = longest = deepest = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, str):
            longest = max(longest, len(item))
        elif isinstance(item, dict | list):
            widest = max(widest, len(item))
            deepest = max(deepest, depth + 1)
            children = item.items() if isinstance(item, dict) else enumerate(item)
            for key, child in children:
                if isinstance(key, str):
                    longest = max(longest, len(key))
                stack.append((child, depth + 1))
    return widest, longest, deepest


def _shrink(value: Any, limits: _Limits, depth: int) -> Any:
    if isinstance(value, str):
        return _shorten(value, limits.chars)
    if isinstance(value, list):
        if depth >= limits.depth and value:
            return f"[... array of {_items(len(value))} omitted]"
        kept: list[Any] = [_shrink(item, limits, depth + 1) for item in value[: limits.items]]
        extra = len(value) - limits.items
        if extra > 0:
            kept.append(f"[... {extra:,} more {_noun(extra, 'item')}]")
        return kept
    if isinstance(value, dict):
        if depth >= limits.depth and value:
            return f"[... object of {len(value):,} {_noun(len(value), 'key')} omitted]"
        shrunk = {
            key: _shrink(item, limits, depth + 1)
            for key, item in islice(value.items(), limits.items)
        }
        extra = len(value) - limits.items
        if extra > 0:
            shrunk[f"[... {extra:,} more {_noun(extra, 'key')}]"] = None
        return shrunk
    return value


def _shorten(text: str, chars: int) -> str:
    if len(text) <= chars:
        return text
    cut = safe_cut(text, chars)
    rest = len(text) - cut
    shorter = f"{text[:cut]}[... {rest:,} more {_noun(rest, 'character')}]"
    return shorter if len(shorter) < len(text) else text


def _items(count: int) -> str:
    return f"{count:,} {_noun(count, 'item')}"


def _noun(count: int, word: str) -> str:
    return word if count == 1 else f"{word}s"


def _style(text: str) -> _Style:
    """Indentation and separators like the original's, so only the content changes."""
    stripped = text.strip()
    ensure_ascii = stripped.isascii() and "\\u" in stripped
    indented = re.search(r"\n([ \t]+)\S", stripped)
    if indented:
        whitespace = indented.group(1)
        indent: int | str = len(whitespace) if set(whitespace) == {" "} else whitespace
        return _Style(indent, (",", ": "), ensure_ascii)
    spaced = re.search(r"[,:] ", stripped[:4096]) is not None
    return _Style(None, (", ", ": ") if spaced else (",", ":"), ensure_ascii)


def _dump(value: Any, style: _Style) -> str:
    return json.dumps(
        value, indent=style.indent, separators=style.separators, ensure_ascii=style.ensure_ascii
    )
