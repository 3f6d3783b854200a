"""`Withdrawer`: a manager's withdrawals, with the compactions that stood for them undone.

A `Withdrawal` in the pristine record takes nodes out of every view of the graph, and
so out of the working view's units: a masked, truncated or dropped copy of a withdrawn
node goes with it. A summary a processor made is different: it stands for several
nodes, and its text may hold what a withdrawn one said. So before a batch with a
withdrawal is ingested, every summary in the view that stands for a withdrawn node and
for some node that stays is undone, as one `restore` proposal through the invariant
checker (audited and journaled like any edit): the nodes that stay come back as
recorded, and a later compaction summarizes them again without what was withdrawn. A
summary that stands only for withdrawn nodes leaves the view with them.

The batch is checked first, so a withdrawal the graph refuses undoes nothing; a restore
the invariant checker refuses is a `GraphError` naming the node and the summary, and
nothing is withdrawn.
"""

from __future__ import annotations

from collections.abc import Sequence

from context_graph.errors import GraphError, InvariantViolation
from context_graph.graph.events import AgentEvent, Withdrawal
from orchestrator.bus import EventBus
from orchestrator.counters import ProposalCounters
from orchestrator.persistence.manager_state import StateKeeper
from orchestrator.working import WorkingGraph, WorkingView
from orchestrator.working.restores import restore_proposal

__all__ = ["WITHDRAW_PROCESSOR", "Withdrawer", "summaries_over"]

#: The processor name of the restore a withdrawal applies (in the audit log).
WITHDRAW_PROCESSOR = "withdraw"


def summaries_over(view: WorkingView, withdrawn: Sequence[str]) -> dict[str, str]:
    """The summaries in `view` to undo before `withdrawn` goes: summary id -> a node.

    Each stands in the view for a node of `withdrawn` (named beside it) and for at
    least one recorded node that stays.
    """
    overlay = view.overlay
    pristine = view.pristine
    gone = set(withdrawn)
    found: dict[str, str] = {}
    for node_id in withdrawn:
        now, via_summary = overlay.resolve(node_id)
        if not via_summary or now in found or not view.is_current(now):
            continue
        if any(r not in gone and not pristine.is_withdrawn(r) for r in view.roots(now)):
            found[now] = node_id
    return found


class Withdrawer:
    """Prepares a manager's batches that hold withdrawals.

    Args:
        working: The manager's working graph (its pristine graph checks the batch).
        counters: Counts the restore, applied or refused.
        keeper: Writes the state with the applied restore, as one step.
        bus: Where the restore is reported (`proposal_applied` / `proposal_rejected`).
    """

    def __init__(
        self, working: WorkingGraph, counters: ProposalCounters, keeper: StateKeeper, bus: EventBus
    ) -> None:
        self._working = working
        self._counters = counters
        self._keeper = keeper
        self._bus = bus

    def prepare(self, batch: Sequence[AgentEvent]) -> None:
        """Check a batch that withdraws nodes, then undo the summaries standing for them.

        Raises:
            IngestError: the graph would refuse the batch; nothing changed.
            GraphError: a summary standing for a withdrawn node cannot be undone (names
                both); nothing changed.
        """
        withdrawn = [i for e in batch if isinstance(e, Withdrawal) for i in e.node_ids]
        if not withdrawn:
            return
        self._working.pristine.check(batch)
        view = self._working.view
        found = summaries_over(view, withdrawn)
        if not found:
            return
        proposal = restore_proposal(view, tuple(found), WITHDRAW_PROCESSOR)
        with self._keeper.atomic():
            try:
                entry = self._working.apply(proposal)
            except InvariantViolation as exc:
                self._counters.count(rejected=1)
                self._bus.emit("proposal_rejected", proposal=proposal, reason=str(exc))
                summary, node_id = next(iter(found.items()))
                msg = (
                    f"withdraw: node `{node_id}` is compacted into the summary `{summary}`, "
                    f"which cannot be undone ({exc}); nothing was withdrawn"
                )
                raise GraphError(msg) from exc
            self._counters.count(applied=1)
            self._keeper.save()
        self._bus.emit("proposal_applied", proposal=proposal, entry=entry)
