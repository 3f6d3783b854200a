"""The preamble: what comes before the user's first request, and that no stage can take.

A harness may put text in the user's role before the task: SWE-agent sends a whole
demonstration trajectory (thousands of tokens) ahead of the issue, marked as a notice.
No compaction stage takes it: the summarize stage takes the spans after the first request
(a demonstration summarized would read as work done), the output stages take tool output;
`trim_preamble_trees` only cuts a harness's folder tree in it to its top levels
(`processors.preamble_trees`), which leaves the unit in place.
The renderer's fitter may leave it out, oldest unit first, as it may any unit outside the
floor (`context_graph.render.fit`).

So when a request does not fit only because of the preamble, compacting the work after
the request cannot help: the request still does not fit, the renderer leaves the preamble
out anyway, and every call would summarize the session's newest steps away (SWE-agent's
pydicom session at half its size: every call summarized, requests at a third of the
budget). `fits_leaving_out_preamble` tells the manager that leaving out some of the
preamble is enough; then nothing is compacted, and the renderer's kept drops
(`Renderer.kept_drops`) leave the same units out call after call, so the prefix holds.
"""

from __future__ import annotations

from context_graph.errors import BudgetExceededError
from context_graph.graph.anchors import floor_anchors
from context_graph.graph.nodes import ANSWER_KINDS
from context_graph.render.fit import FitUnit, droppable_units
from orchestrator.compaction.meter import calibrated
from orchestrator.compaction.renderers import RequestRenderer
from orchestrator.working import WorkingGraph, WorkingView

__all__ = ["fits_leaving_out_preamble", "preamble_units"]


def preamble_units(view: WorkingView) -> dict[str, int]:
    """The units before the user's first request that no stage takes: head -> tokens.

    Not the system prompt, not a unit with a pinned node, not one with a tool's output
    (the output stages take those); empty when the view has no user-role unit.
    """
    units = view.units()
    anchors = floor_anchors([unit.kind for unit in units])
    if anchors is None:
        return {}
    loose: dict[str, int] = {}
    for unit in units[: anchors[0]]:
        nodes = [view[node_id] for node_id in unit.node_ids]
        if unit.kind == "system" or any(node.pinned or node.kind in ANSWER_KINDS for node in nodes):
            continue
        loose[unit.head] = sum(view.tokens(node_id) for node_id in unit.node_ids)
    return loose


def _unshrinkable_floor(view: WorkingView) -> int:
    """Content tokens of the floor that no stage shrinks.

    All of it but tool outputs and the steps after the latest user-role unit but the
    newest. The floor is what the renderer never leaves out (`render.fit.droppable_units`):
    system prompts, pinned units, the first and latest requests, the latest user turn
    and what follows. What follows is the agent's work on that turn: the output stages
    take its tool outputs, and the summarize stage its steps but the newest (a Codex
    session is one request and a tool loop of hundreds of steps: counted whole, the floor
    alone was over the budget, so the preamble before the request was left out instead of
    compacting the loop, and it came back at the next call's compaction).
    """
    units = view.units()
    fits = [
        FitUnit(0, unit.kind, any(view[node_id].pinned for node_id in unit.node_ids))
        for unit in units
    ]
    droppable = set(droppable_units(fits))
    anchors = floor_anchors([unit.kind for unit in units])
    latest = anchors[2] if anchors is not None else len(units) - 1
    kept = (
        u
        for i, u in enumerate(units)
        if u.kind == "system"
        or fits[i].pinned
        or (i not in droppable and (i <= latest or i == len(units) - 1))
    )
    nodes = (view[node_id] for unit in kept for node_id in unit.node_ids)
    return sum(view.tokens(node.id) for node in nodes if node.kind not in ANSWER_KINDS)


def fits_leaving_out_preamble(
    working: WorkingGraph, renderer: RequestRenderer, budget: int
) -> bool:
    """Whether leaving out preamble units is both enough and unavoidable.

    Enough: `renderer` fits the request in `budget` leaving out preamble units only.
    Unavoidable: those units and the floor's content that no stage shrinks are over the
    budget by themselves, so no compaction could keep them (otherwise compacting the
    work is the better trade: a session's context notes stay).
    """
    view = working.view
    loose = preamble_units(view)
    if not loose:
        return False
    try:
        # A preview: when the answer is no, the compaction's render must start from the
        # previous call's kept drops, not from the count this trial chose.
        fitted = renderer.preview(working, budget=budget)
    except BudgetExceededError:
        return False
    tokens = calibrated(renderer, fitted.tokens)
    if not fitted.dropped or not loose.keys() >= set(fitted.dropped) or tokens > budget:
        return False
    return _unshrinkable_floor(view) + sum(loose[head] for head in fitted.dropped) > budget
