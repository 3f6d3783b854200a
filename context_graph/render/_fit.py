"""The budget floor: which units to keep when the whole history does not fit.

With no processors the guarantee is: keep the system prompt, pinned units, the user's
first request, and the latest user turn with everything after it; drop whole units,
oldest first, never half a unit; and say in one marker how many were left out. If even
that does not fit, the render fails with `BudgetExceededError` naming the minimum.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from context_graph.errors import BudgetExceededError

__all__ = ["FitPlan", "FitUnit", "fit_units", "marker_text"]


def marker_text(dropped: int) -> str:
    """The text of the marker that stands where units were left out."""
    noun = "turn" if dropped == 1 else "turns"
    return f"[{dropped} earlier {noun} omitted to fit the context budget]"


@dataclass(frozen=True, slots=True)
class FitUnit:
    """What the fitter needs to know about one unit."""

    cost: int
    kind: str
    pinned: bool


@dataclass(frozen=True, slots=True)
class FitPlan:
    """The outcome: which units are dropped, and where the marker goes."""

    dropped: tuple[int, ...]
    marker_at: int | None
    """Index of the first dropped unit (the marker takes its place), if any."""
    estimate: int
    """An upper bound of the rendered request's tokens."""


def protected_units(units: Sequence[FitUnit]) -> set[int]:
    """Indices the floor always keeps: pinned, the first request, the last user turn on."""
    keep = {i for i, u in enumerate(units) if u.pinned}
    users = [i for i, u in enumerate(units) if u.kind == "user"]
    if users:
        keep.add(users[0])
        keep.update(range(users[-1], len(units)))
    elif units:
        keep.add(len(units) - 1)
    return keep


def fit_units(
    units: Sequence[FitUnit], *, fixed: int, marker_cost: Callable[[], int], budget: int | None
) -> FitPlan:
    """Choose the units to drop so the request fits `budget`.

    Args:
        units: Every unit in order, with its cost (its messages, standing alone).
        fixed: Tokens that do not depend on the units (system, request overhead, and
            the leading user turn some formats may need).
        marker_cost: Returns the tokens of the omission marker (asked only when needed).
        budget: The budget; `None` keeps everything.

    Raises:
        BudgetExceededError: even the protected floor does not fit.
    """
    total = fixed + sum(u.cost for u in units)
    if budget is None or total <= budget:
        return FitPlan((), None, total)
    protected = protected_units(units)
    marker = marker_cost()
    running = total + marker
    dropped: list[int] = []
    for index, unit in enumerate(units):
        if running <= budget:
            break
        if index in protected:
            continue
        running -= unit.cost
        dropped.append(index)
    if running > budget:
        required = fixed + marker + sum(units[i].cost for i in protected)
        detail = "the system prompt, pinned turns, the first request and the latest turn"
        raise BudgetExceededError(budget, required, f"{detail} alone need that much")
    return FitPlan(tuple(dropped), dropped[0], running)
