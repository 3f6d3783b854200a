"""Critical entities: the exact strings an agent needs later and a summary must not garble.

Identifiers (ticket keys, reservation codes, hashes, UUIDs, snake/camel names), file
paths, URLs, numbers with their units, error names and quoted strings. Processors use
them to check that a candidate kept what matters (`missing_entities`), and the
benchmarks use them to measure fact retention.

The rules are deliberately plain regular expressions: deterministic, fast, and the same
for every contender they are used to judge.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Iterable
from functools import lru_cache
from itertools import accumulate

__all__ = ["clear_cache", "critical_entities", "missing_entities"]

_END = r"(?!\w|\.\w)"  # a word ends here; a sentence's full stop may follow

_FILE_EXTENSIONS = (
    r"(?:py|js|ts|tsx|go|rs|java|rb|md|json|ya?ml|toml|txt|cfg|ini|sh|sql|html|css|ex|exs|c|h|"
    r"cpp|hpp|lock)\b"
)
# File names with a known extension: main.py, setup.cfg
_FILE_NAME = r"\b[\w-]+\." + _FILE_EXTENSIONS
# A path with a directory: src/app/main.py, ./x.sh, /etc/hosts. It never starts right
# after a path character: wherever it could, it could from that character too, which
# the scan tried first (the guard spares rescanning every suffix of a long word).
_DIRECTORY_PATH = r"(?<![\w.-])(?:\.{0,2}/)?(?:[\w.-]+/)+[\w.-]+"

# Each rule: the characters every match holds ("" for none), its pattern, and the
# pattern for texts without them (None: no match). A plain `in` costs far less than a scan.
_RULES: tuple[tuple[str, re.Pattern[str], re.Pattern[str] | None], ...] = (
    # Dates and times: 2024-05-20, 2024-05-20T10:00:00Z
    (
        "-",
        re.compile(r"\b\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2})?(?:\.\d+)?Z?)?" + _END),
        None,
    ),
    # URLs
    ("://", re.compile(r"https?://[^\s\"'<>)\]]+"), None),
    # Paths with a directory or an extension: src/app/main.py, ./x.sh, /etc/hosts
    ("/", re.compile(_DIRECTORY_PATH + "|" + _FILE_NAME), re.compile(_FILE_NAME)),
    # Error and exception names: ValueError, E1101, TS2345
    ("", re.compile(r"\b[A-Z][A-Za-z]*(?:Error|Exception|Warning|Fault)\b"), None),
    # Ticket keys and codes with digits: ABC-1234, HAT170, 8DQ3ZP, v2.3.1
    ("-", re.compile(r"\b[A-Z][A-Z0-9]{1,9}-\d+\b"), None),
    ("", re.compile(r"\b(?=[A-Z0-9]*\d)(?=[A-Z0-9]*[A-Z])[A-Z0-9]{5,12}\b"), None),
    (".", re.compile(r"\bv?\d+\.\d+(?:\.\d+)+\b"), None),
    # Hex hashes and UUIDs
    ("", re.compile(r"\b[0-9a-f]{7,40}\b"), None),
    (
        "-",
        re.compile(
            r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b"
        ),
        None,
    ),
    # Code identifiers: snake_case with an underscore, camelCase with an inner capital
    ("_", re.compile(r"\b[a-z][a-z0-9]*(?:_[a-z0-9]+)+\b"), None),
    ("", re.compile(r"\b[a-z]+(?:[A-Z][a-z0-9]+)+\b"), None),
    # Numbers of three or more digits (amounts, ids, line numbers), with decimals
    (
        "",
        re.compile(r"(?<![\w.])\$?\d[\d,]{2,}(?:\.\d+)?" + _END + r"|(?<![\w.])\d+\.\d+" + _END),
        None,
    ),
    # Email addresses
    ("@", re.compile(r"\b[\w.+-]+@[\w-]+\.[\w.-]+\b"), None),
)


def critical_entities(text: str, *, limit: int | None = None) -> list[str]:
    """The critical entities in `text`, each once, in order of first appearance.

    A match inside a longer one (the path inside a URL, the number inside a ticket
    key) is not reported on its own.

    Args:
        text: Any text.
        limit: Keep at most this many (the first ones).
    """
    ordered = _entities(text)
    return list(ordered[:limit] if limit is not None else ordered)


# Processors ask about the same texts again and again (each compaction re-reads the
# outputs it may shorten); the answer depends on the text alone.
@lru_cache(maxsize=16384)
def _entities(text: str) -> tuple[str, ...]:
    # No rule matches across a newline, and a newline looks to every rule's edge
    # assertions like the start or end of the text: a text's entities are its lines'
    # entities, in line order. Texts a processor derives (a truncation, a distillate,
    # a summary) mostly reuse lines already scanned, so only the new lines are scanned,
    # all at once (one pass per rule, not one per line).
    lines = text.split("\n")
    known: dict[str, tuple[str, ...]] = {}
    fresh: list[str] = []
    for line in lines:
        if line not in known:
            found = _LINES.get(line)
            if found is None:
                fresh.append(line)
            else:
                known[line] = found
    if fresh:
        fresh = list(dict.fromkeys(fresh))
        if len(_LINES) + len(fresh) > _LINES_KEPT:
            _LINES.clear()
        for line, found in zip(fresh, _scan_lines(fresh), strict=True):
            known[line] = _LINES[line] = found
    if len(lines) == 1:
        return known[text]
    return tuple(dict.fromkeys(entity for line in lines for entity in known[line]))


# The entities of each line scanned lately (cleared whole when full).
_LINES: dict[str, tuple[str, ...]] = {}
_LINES_KEPT = 65536


def clear_cache() -> None:
    """Forget the entities remembered for the texts and lines scanned so far.

    `critical_entities` depends on its text alone, so this changes no answer: it frees
    the memory and makes the next scan of each text pay in full, as in a new process.
    """
    _entities.cache_clear()
    _LINES.clear()


def _scan_lines(lines: list[str]) -> list[tuple[str, ...]]:
    """The entities of each of `lines` (none holding a newline), from one scan of them."""
    starts = list(accumulate((len(line) + 1 for line in lines[:-1]), initial=0))
    found: list[dict[str, None]] = [{} for _ in lines]
    for start, value in _spans("\n".join(lines)):
        found[bisect_right(starts, start) - 1].setdefault(value)
    return [tuple(values) for values in found]


def _spans(text: str) -> list[tuple[int, str]]:
    """Each rule's matches not inside a longer one, as (start, value), in text order."""
    spans: list[tuple[int, int, str]] = []
    for needs, pattern, otherwise in _RULES:
        if needs not in text:
            if otherwise is None:
                continue
            pattern = otherwise
        for match in pattern.finditer(text):
            value = match.group(0).rstrip(".,;:")
            if len(value) >= 3:
                spans.append((match.start(), match.start() + len(value), value))
    spans.sort(key=lambda span: (span[0], -span[1]))
    kept: list[tuple[int, str]] = []
    covered_to = -1
    for start, end, value in spans:
        if end <= covered_to:
            continue
        covered_to = max(covered_to, end)
        kept.append((start, value))
    return kept


def missing_entities(required: Iterable[str], text: str) -> list[str]:
    """The entities of `required` that do not appear verbatim in `text`, in order."""
    return [entity for entity in dict.fromkeys(required) if entity not in text]
