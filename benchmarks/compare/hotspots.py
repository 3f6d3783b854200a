"""Where context-graph's engine time goes: one replay under cProfile, per profile.

The functions of the library's own packages are ranked by their own time (time spent in
their body, not in what they call); the harness's measuring is left out. Profiling slows
everything down evenly enough to show where the time goes, not how much it is.
"""

from __future__ import annotations

import cProfile
import pstats
from dataclasses import dataclass
from pathlib import Path

from benchmarks.compare.contenders import ContenderSpec
from benchmarks.compare.runner import SessionSetup, replay
from context_graph import TiktokenCounter

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("context_graph", "processors", "orchestrator")


@dataclass(frozen=True)
class Hotspot:
    """One library function and its share of the library's own time."""

    function: str
    """`package/module.py:function`."""
    own: float
    """Share of the library's time spent in the function's own body."""
    inclusive: float
    """Share spent in it and in what it calls."""


def _library_path(filename: str) -> str | None:
    try:
        relative = Path(filename).resolve().relative_to(ROOT)
    except ValueError:
        return None
    return relative.as_posix() if relative.parts[0] in PACKAGES else None


def hotspots(
    spec: ContenderSpec,
    ctx: SessionSetup,
    budget_label: str,
    budget: int,
    counter: TiktokenCounter,
    *,
    top: int = 6,
) -> list[Hotspot]:
    """The `top` library functions by own time over one replay of `ctx`'s session."""
    profiler = cProfile.Profile()
    profiler.enable()
    try:
        replay(spec, ctx, budget_label, budget, counter, memory=False)
    finally:
        profiler.disable()
    stats = pstats.Stats(profiler)
    own: dict[str, float] = {}
    inclusive: dict[str, float] = {}
    for (filename, _line, name), row in stats.stats.items():  # type: ignore[attr-defined]
        path = _library_path(filename)
        if path is not None:
            key = f"{path}:{name}"
            own[key] = own.get(key, 0.0) + row[2]
            inclusive[key] = max(inclusive.get(key, 0.0), row[3])
    total = sum(own.values()) or 1.0
    # The entry points (ingest, render) hold nearly everything; below them, the functions
    # with the most time in and under them say where it goes.
    ranked = sorted(
        (key for key in inclusive if inclusive[key] < 0.6 * total),
        key=lambda key: inclusive[key],
        reverse=True,
    )[:top]
    return [Hotspot(key, own[key] / total, inclusive[key] / total) for key in ranked]
