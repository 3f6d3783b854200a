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
only when the request with it restored still fits the target; the first that does not
fit ends it (an older output does not take the room a newer one could not). Cuts of
earlier runs stay: the model was already sent them as they are, and the cache holds them
so. What comes back is not pinned; the next run may cut it again.

Whether a restore fits is estimated before it is made, from the content tokens it brings
back scaled by the request's tokens per content token (as `RequestMeter.excess` scales
the other way); the ones that fit go back in one proposal, which the meter then measures.
Rendering or checking the whole request once per candidate made each compaction cost
more the longer the session (`python -m benchmarks.long_session`).

Only a run that the budget alone asked for refills (`Compactor`): what a node's trigger,
a task boundary or a count asked for is cut on purpose. Measured in docs/orchestrator.md
(Refill).
"""

from __future__ import annotations

import math

from context_graph.errors import InvariantViolation
from context_graph.graph.nodes import ANSWER_KINDS, Node
from orchestrator.bus import EventBus
from orchestrator.compaction.meter import RequestMeter
from orchestrator.compaction.renderers import RequestRenderer
from orchestrator.working import WorkingGraph, WorkingView
from orchestrator.working.restores import restore_proposal, restore_tokens

__all__ = ["REFILL_PROCESSOR", "refill"]

#: The name the audit log gives a refill's restores.
REFILL_PROCESSOR = "refill"


def refill(
    working: WorkingGraph,
    meter: RequestMeter,
    renderer: RequestRenderer,
    target: int,
    since: int,
    bus: EventBus,
) -> int:
    """Undo the run's cuts of outputs, newest first, while the request fits `target`.

    Args:
        working: The working graph the run compacted.
        meter: Measures its request (as it measured it for the run's stages).
        renderer: Renders the request the target is measured on.
        target: The run's target, in request tokens (calibrated, as the meter counts).
        since: How many entries the audit log held before the run: the nodes the
            entries after it added are the run's cuts (an earlier run's stay).
        bus: Where each restore is reported (`proposal_made`, `proposal_applied`, or
            `proposal_rejected` when the checker refuses it).

    Returns:
        How many restore proposals were applied (each undoes every cut that fit then;
        a later one undoes a level below a cut the first brought back).
    """
    applied = 0
    while True:
        targets = _fitting(working, meter, renderer, target, since)
        if not targets:
            return applied
        # One proposal for them all: the checker reads the whole view once per proposal.
        proposal = restore_proposal(working.view, targets, REFILL_PROCESSOR, whole=False)
        bus.emit("proposal_made", proposal=proposal)
        try:
            entry = working.apply(proposal)
        except InvariantViolation as exc:
            bus.emit("proposal_rejected", proposal=proposal, reason=str(exc))
            return applied
        bus.emit("proposal_applied", proposal=proposal, entry=entry)
        applied += 1
        if meter.tokens(renderer) >= target:
            return applied


def _fitting(
    working: WorkingGraph, meter: RequestMeter, renderer: RequestRenderer, target: int, since: int
) -> tuple[str, ...]:
    """The run's cuts to undo now, newest first, up to the first that would not fit."""
    view = working.view
    request = meter.tokens(renderer)
    per_content = request / max(1, working.total_tokens)  # the request's framing, scaled
    room = target - request
    chosen: list[str] = []
    for node in _cuts(working, since):
        taken, brought = restore_tokens(view, node.id, whole=False)
        grows = math.ceil((brought - taken) * per_content)  # request tokens it brings back
        if grows > room:
            break  # newest first: an older output does not take the room a newer one could not
        chosen.append(node.id)
        room -= grows
    return tuple(chosen)


def _cuts(working: WorkingGraph, since: int) -> list[Node]:
    """The outputs in the view that the run made, newest first (none a redaction).

    Read off the run's audit entries, not the whole view: a run is a few proposals, a
    view may hold thousands of nodes.
    """
    view = working.view
    overlay = view.overlay
    made = {
        node_id
        for entry in working.audit()[since:]
        if entry.processor != REFILL_PROCESSOR  # what a restore brings back is no cut
        for node_id in entry.added
    }
    cuts = [
        node
        for node_id in made
        if node_id not in overlay.kept
        and view.is_current(node_id)
        and (node := view[node_id]).kind in ANSWER_KINDS
        and node.replaces is not None
    ]
    return sorted(cuts, key=lambda node: _position(view, node), reverse=True)


def _position(view: WorkingView, node: Node) -> int:
    """Where `node` stands in the transcript: its pristine root's place."""
    pristine = view.pristine
    return max((pristine[root].seq or 0 for root in view.roots(node.id)), default=0)
