"""What `benchmarks.fingerprint` and `benchmarks.signals` share: recordings of runs.

A recording is a JSON object that maps a run's key to the list of what it produced (a
request hash per call, a signal per bus event). Two recordings are compared run by run,
and a run that differs is named with its first differing position.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TypeVar

Item = TypeVar("Item")

#: How a differing run is told: (key, 0-based position, the two lists) -> one line.
Describe = Callable[[str, int, Sequence[Item], Sequence[Item]], str]


def first_difference(old: Sequence[Item], new: Sequence[Item]) -> int:
    """The first position where two lists differ (the shorter's length if one extends it)."""
    return next(
        (i for i, (a, b) in enumerate(zip(old, new, strict=False)) if a != b),
        min(len(old), len(new)),
    )


def run_differences(
    before: Mapping[str, Sequence[Item]],
    after: Mapping[str, Sequence[Item]],
    describe: Describe[Item],
) -> list[str]:
    """One line per run that differs or is only in one recording, sorted by key."""
    lines: list[str] = []
    for key in sorted(before.keys() | after.keys()):
        old, new = before.get(key), after.get(key)
        if old == new:
            continue
        if old is None or new is None:
            lines.append(f"{key}: only in the {'second' if old is None else 'first'}")
            continue
        lines.append(describe(key, first_difference(old, new), old, new))
    return lines


def load_recording(path: Path, kind: str, article: str = "a") -> dict[str, list[object]]:
    """Read a recording; exit with a message naming `kind` when it is unreadable."""
    try:
        data = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise SystemExit(f"cannot read {kind} {path}: {exc}") from None
    if not isinstance(data, dict) or not all(isinstance(v, list) for v in data.values()):
        raise SystemExit(f"{path} is not {article} {kind} (a JSON object of lists)")
    return data
