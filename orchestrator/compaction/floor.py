"""The last resort before refusing a request: shrink the tool outputs in the floor.

The renderer never drops the floor (system prompt, pinned nodes, the first and latest
requests, the latest user turn and everything after it), and the summarize stage never
takes the last steps of the tool loop. With a small budget the outputs of those steps
alone can be larger than what is left, and the render would raise `BudgetExceededError`
although a shorter copy of one output would fit. Here the outputs after the latest user
turn are truncated, through the same checked path as every edit, to one common cap
chosen just low enough for the request to fit: the largest outputs lose the most, the
originals stay expandable, and the user's own words are never cut.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from context_graph.graph.nodes import Node
from orchestrator.bus import EventBus
from orchestrator.compaction.pipeline import (
    PipelineRun,
    StageSettings,
    output_targets,
    run_stage,
    stands_for,
)
from orchestrator.compaction.plan import RunMode
from orchestrator.working import WorkingGraph, WorkingView
from processors.base import Processor, Resizable
from processors.truncate import ToolOutputTruncator

__all__ = ["floor_outputs", "output_cap", "pipeline_truncator", "shrink_floor"]

#: No output is cut below this many tokens: its head still says what it was.
MIN_CAP = 64
#: Truncation markers and rounding cost a little; aim this much lower (a share of the
#: excess, plus a constant).
_MARGIN_SHARE = 0.15
_MARGIN_TOKENS = 24
_ATTEMPTS = 3


def floor_outputs(view: WorkingView) -> tuple[Node, ...]:
    """Unpinned tool outputs after the latest user turn (the renderer's floor).

    That turn is the latest request or a notice after it (`UserNode.notice`).
    """
    units = view.units()
    start = 0
    for index, unit in enumerate(units):
        if unit.kind in {"user", "notice", "system", "summary"}:
            start = index + 1
    return output_targets(view, units[start:])


def pipeline_truncator(stages: Sequence[Processor]) -> Resizable | None:
    """The pipeline's own resizable stage (its truncator), if any: the floor keeps its policies."""
    return next((stage for stage in stages if isinstance(stage, Resizable)), None)


def output_cap(sizes: Sequence[int], excess: int) -> int | None:
    """The largest common cap that frees at least `excess` tokens from `sizes`.

    `None` when even `MIN_CAP` frees too little (nothing is worth cutting then), or
    nothing needs freeing.
    """
    if excess <= 0 or not sizes:
        return None

    def freed(cap: int) -> int:
        return sum(size - cap for size in sizes if size > cap)

    if freed(MIN_CAP) < excess:
        return None
    low, high = MIN_CAP, max(sizes)  # freed(low) >= excess > freed(high) = 0
    while high - low > 1:
        middle = (low + high) // 2
        if freed(middle) >= excess:
            low = middle
        else:
            high = middle
    return low


def _with_margin(excess: int) -> int:
    return excess + int(excess * _MARGIN_SHARE) + _MARGIN_TOKENS if excess > 0 else 0


def _cap_for(
    view: WorkingView, outputs: tuple[Node, ...], excess: int
) -> tuple[tuple[Node, ...], int] | None:
    """`outputs` and the cap that frees `excess` (with a margin) from them, if one does."""
    cap = output_cap([view.tokens(node.id) for node in outputs], _with_margin(excess))
    return None if cap is None else (outputs, cap)


async def shrink_floor(
    working: WorkingGraph,
    bus: EventBus,
    settings: StageSettings,
    measure: Callable[[], int],
    budget: int,
    base: Resizable | None,
    required: Callable[[], int] | None = None,
    unsent: frozenset[str] = frozenset(),
    run: PipelineRun | None = None,
) -> PipelineRun:
    """Truncate the floor's outputs until the request (`measure()`) fits `budget`.

    Aims, in order, until one cap can free enough: the whole view with only the outputs
    no request has carried yet (`unsent`) cut, so every message already sent stays and
    the provider's prompt cache with it; the whole view with every output in the floor
    cut; and what the renderer needs at the least (`required()`, once it leaves out
    every unit outside the floor), so that the request is sent without those units
    rather than refused.

    Args:
        working: The working graph; edits go through its invariant checker.
        bus: Where the proposals are reported, as for any stage.
        settings: The run's shared settings.
        measure: The request's size now (rendered with no budget, calibrated).
        budget: The size to reach.
        base: The pipeline's own truncator, whose policies are kept; the default
            truncator when the pipeline has none.
        required: The least the renderer needs under `budget` now (calibrated; at most
            `budget` when the request fits), if known.
        unsent: Pristine ids of the nodes no request has carried yet.
        run: Where the outcomes are gathered (and returned); a fresh one when `None`,
            so that a caller that may cut this short reads what finished from it.
    """
    run = PipelineRun() if run is None else run
    for _ in range(_ATTEMPTS):
        excess = measure() - budget
        if excess <= 0:
            break
        view = working.view
        outputs = floor_outputs(view)
        fresh = tuple(node for node in outputs if stands_for(working, node, unsent))
        chosen = _cap_for(view, fresh, excess) or _cap_for(view, outputs, excess)
        if chosen is None and required is not None:
            chosen = _cap_for(view, outputs, required() - budget)
        if chosen is None:
            break
        group, cap = chosen
        truncator = (base or ToolOutputTruncator()).resized(cap)
        only = frozenset(node.id for node in group if view.tokens(node.id) > cap)
        outcome = await run_stage(
            truncator, working, bus, settings, run, mode=RunMode.OVERFLOW, only=only
        )
        if not outcome.applied:
            break
    return run
