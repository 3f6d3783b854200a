"""HTML / XML: where cuts may fall, and keeping the kept head and tail balanced.

Cuts fall before an opening tag, after a closing tag, or at a line end outside a tag;
never inside a tag, comment or CDATA section. After the units are chosen, each omitted
run in the middle is widened by a few units when that makes it start and end at the
same element depth, so that head + marker + tail nest like the original.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from itertools import pairwise

__all__ = ["BALANCE_STEPS", "TAG", "balance", "depths", "detect_markup", "markup_pieces"]

#: A tag, comment, CDATA section, doctype or processing instruction: never cut inside one.
TAG = re.compile(r"<(?:!--.*?-->|!\[CDATA\[.*?\]\]>|[A-Za-z/!?][^<>]*)>", re.DOTALL)
_OPENING = re.compile(r"<([A-Za-z][\w:.-]*)")
_MARKUP_START = re.compile(r"\s*<[A-Za-z!?]")
_CLOSING = re.compile(r"</[A-Za-z][\w:.-]*\s*>|/>")
_NEWLINE = re.compile("\n")
# HTML elements that never have a closing tag.
_VOID = frozenset("area base br col embed hr img input link meta param source track wbr".split())
#: How many units an omitted run may grow by on each side to balance the nesting.
BALANCE_STEPS = 8


def detect_markup(text: str) -> bool:
    """Whether `text` looks like HTML / XML: it opens with a tag and closes at least one."""
    return _MARKUP_START.match(text) is not None and _CLOSING.search(text) is not None


def markup_pieces(text: str) -> list[str]:
    """Cut after line ends outside tags, after closing tags and before opening tags."""
    cuts: set[int] = set()
    position = 0
    for match in TAG.finditer(text):
        cuts.update(m.end() for m in _NEWLINE.finditer(text, position, match.start()))
        tag = match.group(0)
        opening = _OPENING.match(tag) is not None
        if opening:
            cuts.add(match.start())
        if not opening or tag.endswith("/>"):
            cuts.add(match.end())
        position = match.end()
    cuts.update(m.end() for m in _NEWLINE.finditer(text, position))
    bounds = sorted(cuts | {0, len(text)})
    return [text[a:b] for a, b in pairwise(bounds) if b > a]


def depths(units: Sequence[str]) -> list[int]:
    """The element depth before each unit, and at the end (one more entry than units)."""
    levels = [0]
    for unit in units:
        levels.append(levels[-1] + sum(_delta(tag.group(0)) for tag in TAG.finditer(unit)))
    return levels


def _delta(tag: str) -> int:
    if tag.startswith("</"):
        return -1
    opening = _OPENING.match(tag)
    if opening is None or tag.endswith("/>") or opening.group(1).lower() in _VOID:
        return 0
    return 1


def balance(kept: set[int], levels: Sequence[int]) -> set[int]:
    """`kept` with each inner omitted run widened to begin and end at its lowest depth.

    A run that cannot be balanced within `BALANCE_STEPS` units per side is left as it is.
    """
    total = len(levels) - 1
    result = set(kept)
    for start, end in _gaps(kept, total):
        if start == 0 or end == total:
            continue  # a head or tail alone cannot close what the other side opened
        widened = _widen(start, end, levels, kept)
        if widened is not None:
            result -= set(range(widened[0], start)) | set(range(end, widened[1]))
    return result


def _widen(start: int, end: int, levels: Sequence[int], kept: set[int]) -> tuple[int, int] | None:
    """Move the run's ends outwards over kept units until both sit at its lowest depth."""
    for _ in range(BALANCE_STEPS):
        low = min(levels[start : end + 1])
        if levels[start] == low == levels[end]:
            return start, end
        if levels[start] > low:
            start -= 1
            if start < 0 or start not in kept:
                return None
        if levels[end] > low:
            if end not in kept:
                return None
            end += 1
    return None


def _gaps(kept: set[int], total: int) -> list[tuple[int, int]]:
    """Maximal runs of omitted unit indices, as `(start, end)` with `end` exclusive."""
    runs: list[tuple[int, int]] = []
    index = 0
    for keep in [*sorted(kept), total]:
        if keep > index:
            runs.append((index, keep))
        index = keep + 1
    return runs
