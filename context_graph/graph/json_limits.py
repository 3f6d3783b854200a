"""Bounds on JSON-like values, so that anything accepted can be written and read back.

An event's `meta` (and any other free-form JSON it carries) travels through pydantic's
JSON encoder and decoder (the session journal, the rendered request bodies) and through
Python's `json` module (node ids, tool arguments). Each has limits the others lack: the
pydantic decoder refuses nesting deeper than about 200 levels, Python refuses to turn an
integer of more than 4,300 digits into text, and neither JSON nor UTF-8 has room for NaN
or a lone surrogate. A value past one of them is accepted in memory and then fails far
away (a session file that no longer opens). `check_json_value` refuses it at the door,
naming the path of the first bad part (`meta.usage.0.tokens`).

The defaults sit well inside every one of those limits:

- `MAX_DEPTH = 64`: real metadata nests a handful of levels (a Claude Code `usage`
  record, 3); 64 leaves a wide margin under the decoder's ~200, the SDKs' JSON parsers
  and Python's recursion limit, with room for the levels the event itself adds.
- `MAX_INT_DIGITS = 4_000`: Python's `int`/`str` conversion limit is 4,300 digits
  (`sys.get_int_max_str_digits`); no counter, id or timestamp comes near either.
- `MAX_STRING = 16 MiB` (characters): a few large tool outputs' worth; with up to 4 bytes
  a character, a string stays far under SQLite's 1 GB limit on one journal row.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from context_graph.errors import IngestError, SourceLocation

__all__ = ["MAX_DEPTH", "MAX_INT_DIGITS", "MAX_STRING", "check_json_value", "unencodable_text"]

MAX_DEPTH = 64
"""The most containers a value may nest, the outermost counted (`{"a": [1]}` has 2)."""
MAX_INT_DIGITS = 4_000
"""Integers with more decimal digits than this are refused."""
MAX_STRING = 16 * 1024 * 1024
"""Strings (values and keys) longer than this many characters are refused."""

# 10**k has k + 1 digits; comparing magnitudes avoids `str(int)`, which is itself what
# raises past Python's limit.
_INT_BOUND = 10**MAX_INT_DIGITS


def check_json_value(
    value: Any,
    *,
    path: str,
    location: SourceLocation | None = None,
    max_depth: int = MAX_DEPTH,
    max_int_digits: int = MAX_INT_DIGITS,
    max_string: int = MAX_STRING,
) -> None:
    """Refuse a JSON-like value that could not be written and read back unchanged.

    Walks `value` (dicts with string keys, lists, tuples, strings, numbers, booleans,
    `None`) without recursion, so a value nested far too deep is refused, not a crash.

    Args:
        value: The value to check.
        path: Its name, the start of every reported path (`meta`).
        location: Where the record came from; the path is added to it.
        max_depth: The deepest nesting of containers allowed.
        max_int_digits: The most decimal digits an integer may have.
        max_string: The most characters a string (or a key) may have.

    Raises:
        IngestError: naming the path of the first part that is too deep, too long, not
            finite, not encodable as UTF-8, or not JSON at all.
    """
    bound = _INT_BOUND if max_int_digits == MAX_INT_DIGITS else 10**max_int_digits
    stack: list[tuple[Any, str, int]] = [(value, path, 0)]
    while stack:
        item, where, depth = stack.pop()
        problem = _scalar_problem(item, max_string, bound, max_int_digits)
        if problem is None and isinstance(item, Mapping | list | tuple):
            if depth >= max_depth:
                problem = f"is nested more than {max_depth} levels deep"
            else:
                problem = _push_children(item, where, depth + 1, stack, max_string)
        if problem is not None:
            _refuse(where, problem, location)


def _scalar_problem(item: Any, max_string: int, bound: int, digits: int) -> str | None:
    """What is wrong with a scalar (`None` when it is fine or a container)."""
    if item is None or isinstance(item, bool):
        return None
    if isinstance(item, int):
        if -bound < item < bound:
            return None
        return f"is an integer of more than {digits:,} digits"
    if isinstance(item, float):
        return None if math.isfinite(item) else f"is {item}, which JSON cannot hold"
    if isinstance(item, str):
        return _string_problem(item, max_string)
    if isinstance(item, Mapping | list | tuple):
        return None
    return f"is a {type(item).__name__}, not JSON (use dicts, lists, strings, numbers)"


def _string_problem(text: str, max_string: int) -> str | None:
    if len(text) > max_string:
        return f"is a string of {len(text):,} characters (at most {max_string:,})"
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        return (
            f"holds a lone surrogate ({text[exc.start]!r} at {exc.start}), which has no "
            "UTF-8 form; repair or drop it"
        )
    return None


def _push_children(
    item: Mapping[Any, Any] | list[Any] | tuple[Any, ...],
    where: str,
    depth: int,
    stack: list[tuple[Any, str, int]],
    max_string: int,
) -> str | None:
    """Queue a container's children (first child on top); a problem with a key, if any."""
    children: list[tuple[Any, str, int]] = []
    if isinstance(item, Mapping):
        for key, child in item.items():
            if not isinstance(key, str):
                return f"has the key {key!r}, which is not a string"
            problem = _string_problem(key, max_string)
            if problem is not None:
                return f"has a key that {problem}"
            children.append((child, f"{where}.{key}", depth))
    else:
        children = [(child, f"{where}.{index}", depth) for index, child in enumerate(item)]
    stack.extend(reversed(children))
    return None


def _refuse(where: str, problem: str, location: SourceLocation | None) -> None:
    base = location if location is not None else SourceLocation()
    raise IngestError(f"the value {problem}", base.with_path(where))


def unencodable_text(data: Any, path: str = "") -> str:
    """Say which text in `data` has no UTF-8 form (a lone surrogate), for an `IngestError`."""
    found = _surrogate_path(data, path)
    where = f" at `{found}`" if found else ""
    return f"text holds a lone surrogate, which has no UTF-8 form{where}; repair or drop it"


def _surrogate_path(data: Any, path: str) -> str | None:
    if isinstance(data, str):
        try:
            data.encode("utf-8")
        except UnicodeEncodeError:
            return path
        return None
    items: Any = ()
    if isinstance(data, dict):
        items = data.items()
    elif isinstance(data, list | tuple):
        items = enumerate(data)
    for key, value in items:
        found = _surrogate_path(value, f"{path}.{key}" if path else str(key))
        if found is not None:
            return found
    return None
