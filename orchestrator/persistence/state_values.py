"""The values of a stored state, read back with the shapes they were saved with.

A state comes from a file or a database row another process wrote, so it is input like
any other: a value of another shape (a string where a count was, a float infinity, a
list where a mapping was) is refused with a `ValueError` that names the key, which
`StateKeeper.load` reports as the store being corrupt. Python's own conversions would
take some of them silently (`int(2.9)`, `set("ab")`) or fail with an error that names
nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["count", "mapping", "texts", "whole"]


def whole(value: Any, where: str) -> int:
    """`value`, a whole number (not a bool, not a float)."""
    if isinstance(value, bool) or not isinstance(value, int):
        msg = f"`{where}` must be a whole number, got {value!r}"
        raise ValueError(msg)
    return value


def count(value: Any, where: str) -> int:
    """`value`, a whole number >= 0."""
    number = whole(value, where)
    if number < 0:
        msg = f"`{where}` must be >= 0, got {number}"
        raise ValueError(msg)
    return number


def mapping(value: Any, where: str) -> Mapping[str, Any]:
    """`value`, a JSON object."""
    if not isinstance(value, Mapping):
        msg = f"`{where}` must be an object, got {value!r}"
        raise ValueError(msg)
    return value


def texts(value: Any, where: str) -> list[str]:
    """`value`, a list of strings."""
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        msg = f"`{where}` must be a list of strings, got {value!r}"
        raise ValueError(msg)
    return value
