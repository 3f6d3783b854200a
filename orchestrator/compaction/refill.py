"""Refill: a run that landed under its target takes back its own cuts of outputs.

A run compacts in steps, each sized to what is still over the target, and each frees
more than that: an output stage takes outputs holding twice the excess (a processor
frees only part of what it is handed), a summary takes whole units and room for itself.
So a run often lands well under its target, and an output it cut on the way (the file
the agent just read, distilled as it arrived, before the summary freed the room after
all) was cut for nothing. The request then holds less than the policy allows, and less
of what the agent acts on next.

`refill` undoes the run's own cuts, one level at a time (`Restore.whole=False`: a
distillation of a truncation gives the truncation back first), newest output first, each
only when the request with it restored still fits the target, measured as the renderer
makes it; the first that does not fit ends it (an older output does not take the room a
newer one could not). Cuts of earlier runs stay: the model was already sent them as
they are, and the cache holds them so. What comes back is not pinned; the next run may cut it again.

Only a run that the budget alone asked for refills (`Compactor`): what a node's trigger,
a task boundary or a count asked for is cut on purpose. Measured in docs/orchestrator.md
(Refill).
"""

from __future__ import annotations

from collections.abc import Collection

from context_graph.errors import InvariantViolation
from context_graph.graph.nodes import ANSWER_KINDS, Node
from orchestrator.bus import EventBus
from orchestrator.compaction.meter import calibrated
from orchestrator.compaction.renderers import RequestRenderer
from orchestrator.working import WorkingGraph, WorkingView
from orchestrator.working.restores import restore_proposal

__all__ = ["REFILL_PROCESSOR", "refill"]

#: The name the audit log gives a refill's restores.
REFILL_PROCESSOR = "refill"


def refill(
    working: WorkingGraph,
    renderer: RequestRenderer,
    target: int,
    before: Collection[str],
    bus: EventBus,
) -> int:
    """Undo the run's cuts of outputs, newest first, while the request fits `target`.

    Args:
        working: The working graph the run compacted.
        renderer: Renders the request the target is measured on.
        target: The run's target, in request tokens (calibrated, as the meter counts).
        before: The ids of the view's nodes before the run: a cut of one of those is an
            earlier run's, and stays.
        bus: Where each restore is reported (`proposal_made`, `proposal_applied`, or
            `proposal_rejected` when the checker refuses it).

    Returns:
        How many restores were applied.
    """
    applied = 0
    refused: set[str] = set()
    while True:
        view = working.view
        node = next(iter(_cuts(view, before, refused)), None)
        if node is None:
            return applied
        proposal = restore_proposal(view, (node.id,), REFILL_PROCESSOR, whole=False)
        if _request(renderer, view.with_proposal(proposal)) > target:
            # Newest first: an older output does not take the room a newer one could not.
            return applied
        bus.emit("proposal_made", proposal=proposal)
        try:
            entry = working.apply(proposal)
        except InvariantViolation as exc:
            refused.add(node.id)
            bus.emit("proposal_rejected", proposal=proposal, reason=str(exc))
            continue
        bus.emit("proposal_applied", proposal=proposal, entry=entry)
        applied += 1


def _request(renderer: RequestRenderer, view: WorkingView) -> int:
    return calibrated(renderer, renderer.preview(view).tokens)


def _cuts(view: WorkingView, before: Collection[str], refused: set[str]) -> list[Node]:
    """The outputs in the view that the run made, newest first (none a redaction)."""
    overlay = view.overlay
    return [
        node
        for node in reversed(view.answers())
        if node.kind in ANSWER_KINDS
        and node.id in overlay.derived
        and node.id not in overlay.kept
        and node.id not in before
        and node.id not in refused
        and node.replaces is not None
    ]
