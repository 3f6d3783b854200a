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
from collections.abc import Iterable
from functools import lru_cache

__all__ = ["critical_entities", "missing_entities"]

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
    found: dict[str, None] = {}
    covered_to = -1
    for _start, end, value in spans:
        if end <= covered_to:
            continue
        covered_to = max(covered_to, end)
        found.setdefault(value)
    return tuple(found)


def missing_entities(required: Iterable[str], text: str) -> list[str]:
    """The entities of `required` that do not appear verbatim in `text`, in order."""
    return [entity for entity in dict.fromkeys(required) if entity not in text]
