"""The budget floor: which units to keep when the whole history does not fit.

With no processors the guarantee is: keep the system prompt, pinned units, the user's
first request, their latest request, and the latest user turn with everything after it
(that turn is the latest request, or a notice after it: `UserNode.notice`); drop whole
units, oldest first, never half a unit; and say in one marker how many were left out.
If even that does not fit, the render fails with `BudgetExceededError` naming the
minimum.

Units are costed standing alone, which over-counts a little for formats that merge
neighbours, so the cost sum only brackets the answer: the exact size of a candidate
(measured by assembling it) decides, with a binary search over how many units to drop.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from context_graph.errors import BudgetExceededError
from context_graph.graph.anchors import floor_anchors

__all__ = ["FitUnit", "droppable_units", "fewest_drops", "marker_text"]

FLOOR = "the system prompt, pinned turns, the first and latest requests and the latest turn"


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


def droppable_units(units: Sequence[FitUnit]) -> list[int]:
    """Indices that may be dropped, oldest first: all but the protected floor."""
    keep = {i for i, u in enumerate(units) if u.pinned}
    anchors = floor_anchors([u.kind for u in units])
    if anchors is not None:
        first, request, latest = anchors
        keep.update((first, request))
        keep.update(range(latest, len(units)))
    elif units:
        keep.add(len(units) - 1)
    return [i for i in range(len(units)) if i not in keep]


def fewest_drops(
    units: Sequence[FitUnit],
    droppable: Sequence[int],
    *,
    budget: int,
    bound: int,
    exact: Callable[[int], int],
) -> int:
    """The smallest number of droppable units (oldest first) whose loss fits `budget`.

    Args:
        units: Every unit, with its standalone cost.
        droppable: `droppable_units(units)`.
        budget: The budget.
        bound: Tokens the cost sum leaves out but a render may need (the marker, a
            leading user turn); with it the sum is an upper bound of the exact size.
        exact: The exact size of the render that drops the first k droppable units.

    Raises:
        BudgetExceededError: even dropping every droppable unit does not fit.
    """
    total = sum(u.cost for u in units) + bound
    upper = len(droppable)
    for k, index in enumerate(droppable, start=1):
        total -= units[index].cost
        if total <= budget:
            upper = k
            break
    if exact(upper) > budget:
        floor = exact(len(droppable))
        if floor > budget:
            raise BudgetExceededError(budget, floor, f"{FLOOR} alone need that much")
        upper = len(droppable)
    # The estimate is close (merging only saves a few tokens per merge), so gallop down
    # from it before bisecting: a render under pressure usually costs two assemblies.
    step = 1
    low = max(1, upper - step)
    while low > 1 and exact(low) <= budget:
        upper = low
        step *= 2
        low = max(1, upper - step)
    while low < upper:
        middle = (low + upper) // 2
        if exact(middle) <= budget:
            upper = middle
        else:
            low = middle + 1
    return upper
