"""Logs: counts per level, the first lines, every error and warning with context, the tail.

A summary line counts the lines per level (`ERROR`, `WARN`, `INFO`, ...). The first lines
(medium 5, heavy 2) and the last ones (medium 5, heavy 3) stay, and so does every
ERROR / WARN / FAIL line with one line of context either side. An error line whose
message repeats an earlier one (the same text once the leading timestamp is set
aside) is counted, not repeated. What budget is left is filled with the lines that
carry the most identifiers not kept yet.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import replace

from processors.distill.common import (
    Doc,
    at_least,
    is_error_line,
    plural,
    select,
    with_context,
)

__all__ = ["distill_log", "level_counts", "looks_like_log"]

_STAMP = re.compile(
    r"^\s*\[?(?:\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2})?(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?"
    r"|\d{2}:\d{2}:\d{2}(?:[.,]\d+)?|[A-Z][a-z]{2} [ \d]\d \d{2}:\d{2}:\d{2}|\d{10}(?:\.\d+)?)\]?"
)
_LEVEL = re.compile(
    r"(?<![\w-])(TRACE|DEBUG|INFO|NOTICE|WARN|WARNING|ERROR|CRITICAL|FATAL)(?![\w-])"
    r"|\[(?i:(trace|debug|info|notice|warn|warning|error|critical|fatal))\]"
    r"|\blevel=\"?(?i:(trace|debug|info|notice|warn|warning|error|critical|fatal))\b"
)
_CANONICAL = {"WARNING": "WARN", "CRITICAL": "FATAL"}
_HEAD = {"medium": 5, "heavy": 2}
_TAIL = {"medium": 5, "heavy": 3}


def _level(line: str) -> str | None:
    match = _LEVEL.search(line[:80])
    if not match:
        return None
    name = next(group for group in match.groups() if group).upper()
    return _CANONICAL.get(name, name)


def looks_like_log(lines: Sequence[str]) -> bool:
    """Whether at least 30% of the non-blank lines start with a timestamp or a level."""
    filled = list(filter(str.strip, lines[:2_000]))
    if len(filled) < 3:
        return False
    return at_least(filled, _stamped, 0.3 * len(filled))


def _stamped(line: str) -> bool:
    # `_level(line)` is truthy exactly when `_LEVEL` finds a level there.
    return _STAMP.match(line) is not None or _LEVEL.search(line[:80]) is not None


def level_counts(lines: Sequence[str]) -> Counter[str]:
    """How many lines carry each level."""
    counts: Counter[str] = Counter()
    for line in lines:
        level = _level(line)
        if level:
            counts[level] += 1
    return counts


def _distinct_errors(lines: Sequence[str]) -> tuple[list[int], int]:
    """Error lines whose message is new, and how many error lines there are in all."""
    seen: set[str] = set()
    distinct: list[int] = []
    total = 0
    for index, line in enumerate(lines):
        if not is_error_line(line):
            continue
        total += 1
        message = _STAMP.sub("", line, count=1).strip()
        if message not in seen:
            seen.add(message)
            distinct.append(index)
    return distinct, total


def _summary(lines: Sequence[str], errors: int, distinct: int) -> str:
    counts = level_counts(lines)
    order = ["FATAL", "ERROR", "WARN", "NOTICE", "INFO", "DEBUG", "TRACE"]
    levels = ", ".join(f"{name} {counts[name]:,}" for name in order if counts[name])
    parts = [plural(len(lines), "line")]
    if levels:
        parts.append(levels)
    if errors:
        repeated = f" ({distinct:,} distinct)" if distinct < errors else ""
        parts.append(f"{plural(errors, 'error/warning line')}{repeated}")
    return f"[log: {'; '.join(parts)}]"


def distill_log(doc: Doc) -> str:
    """Distill a log body."""
    count = len(doc.plain)
    filled = [i for i, line in enumerate(doc.plain) if line.strip()]
    distinct, errors = _distinct_errors(doc.plain)
    summary = _summary(doc.plain, errors, len(distinct))
    must = set(filled[: _HEAD[doc.level]]) | set(filled[-_TAIL[doc.level] :])
    must |= with_context(distinct, count, 1)
    rest = replace(doc, budget=doc.budget - doc.costs.of(summary))
    return f"{summary}\n{select(rest, must)}"
