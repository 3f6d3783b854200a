"""`context_expand`: a compacted piece back in the view, as one checked, audited edit.

`plan_restore` finds what stands in the view for the id the model passed (the id a
placeholder names, or the derived node's own) and builds a `restore` proposal: one
`Restore` per compacted piece, and for a dropped node every dropped piece of its units,
so no unit comes back in part. `Expander` checks that the content fits under the render
budget, applies the proposal through the invariant checker (the audit log and the
session journal record it like any edit) and pins what came back for
`expand_pin_turns` user turns (its `Pins`), so compaction does not take it again at once. When the
whole does not fit, one level (`Restore.whole=False`: a summary's units with their
outputs still compacted, each naming its own id) comes back if that fits; else the
call is refused with the sizes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from context_graph.errors import BudgetExceededError, InvariantViolation
from context_graph.render import Renderer
from context_graph.tokens.counting import ProviderFormat
from orchestrator.agent_tools.calls import Refusal, shown
from orchestrator.agent_tools.pins import Pins
from orchestrator.agent_tools.specs import EXPAND_TOOL
from orchestrator.bus import EventBus
from orchestrator.compaction.renderers import RendererCache
from orchestrator.counters import ProposalCounters
from orchestrator.persistence.manager_state import StateKeeper
from orchestrator.working import WorkingGraph, WorkingView
from orchestrator.working.restores import restore_proposal
from processors.base import Proposal

__all__ = ["ExpandSettings", "Expander", "RestorePlan", "plan_restore"]


@dataclass(frozen=True, slots=True)
class RestorePlan:
    """The restore that brings back what one id stands for."""

    proposal: Proposal
    """The `restore` proposal."""
    restored: tuple[str, ...]
    """The ids that come back into the view (pristine nodes, or redacted copies)."""
    units: int
    """How many pristine units they belong to."""
    compacted: int = 0
    """How many of `restored` are still compacted pieces (a restore of one level)."""


def plan_restore(view: WorkingView, node_id: str, *, whole: bool = True) -> RestorePlan | Refusal:
    """The restore of what `node_id` stands for in `view`, or why there is none."""
    if node_id not in view:
        return Refusal(
            f"{EXPAND_TOOL}: no node has id {shown(node_id)}; pass the id a placeholder "
            "names (`call context_expand with id <id> ...`)"
        )
    overlay = view.overlay
    # What a withdrawal took out of the session never comes back (`Withdrawal`).
    kept = [r for r in view.roots(node_id) if not view.pristine.is_withdrawn(r)]
    if not kept:
        return Refusal(
            f"{EXPAND_TOOL}: {shown(node_id)} was withdrawn from the session; its content "
            "is not part of this context and cannot be restored"
        )
    if node_id in overlay.undone:
        # Taken away by an earlier restore: what stands for its originals now counts.
        node_id = kept[0]
    now, _ = overlay.resolve(node_id)
    if now in overlay.dropped:
        targets = _dropped_with(view, now)
    elif not view.is_current(now):
        return Refusal(
            f"{EXPAND_TOOL}: {shown(node_id)} is covered by a compaction imported with the "
            "session; its content is not part of this context and cannot be restored"
        )
    elif now not in overlay.derived or now in overlay.kept:
        what = "redacted for safety" if now in overlay.kept else "shown in full"
        return Refusal(f"{EXPAND_TOOL}: {shown(node_id)} is {what} already; nothing to restore")
    else:
        targets = (now,)
    proposal = restore_proposal(view, targets, EXPAND_TOOL, whole=whole)
    restored = tuple(i for t in targets for i in overlay.undone_by(t, whole=whole)[1])
    pristine = view.pristine
    heads = {pristine.unit_of(root).head for i in restored for root in view.roots(i)}
    compacted = sum(i in overlay.derived and i not in overlay.kept for i in restored)
    return RestorePlan(proposal, restored, len(heads), compacted)


def _dropped_with(view: WorkingView, dropped: str) -> tuple[str, ...]:
    """Every dropped piece in the pristine units of `dropped`, so they come back whole."""
    overlay = view.overlay
    found: dict[str, None] = {dropped: None}
    for root in view.roots(dropped):
        for member in view.pristine.unit_of(root).node_ids:
            now, _ = overlay.resolve(member)
            if now in overlay.dropped:
                found[now] = None
    return tuple(found)


class ExpandSettings(Protocol):
    """What `Expander` reads of the manager's options.

    Declared here, not imported: the options module imports agent_tools/'s specs, and
    the two would import each other (issue 32).
    """

    @property
    def format(self) -> ProviderFormat:
        """The wire format the restored request is measured in."""

    @property
    def budget(self) -> int | None:
        """The render budget a restore must fit under (`None`: no budget)."""

    @property
    def expand_pin_turns(self) -> int:
        """How many user turns what came back stays pinned."""


class Expander:
    """Runs `context_expand` for a manager.

    Args:
        working: The working graph the restore is applied to.
        counters: Counts the restore, applied or refused.
        keeper: Writes the state (the pins) with the applied restore, as one step.
        bus: Where the applied restore is reported (`proposal_applied`).
        options: The manager's options (format, budget, `expand_pin_turns`).
        renderers: The manager's renderers, to measure the request's floor (and their
            calibrator, to measure it as the provider counts).
    """

    def __init__(
        self,
        working: WorkingGraph,
        counters: ProposalCounters,
        keeper: StateKeeper,
        bus: EventBus,
        options: ExpandSettings,
        renderers: RendererCache,
    ) -> None:
        self._working = working
        self._counters = counters
        self._keeper = keeper
        self._bus = bus
        self._options = options
        self._renderers = renderers
        self._pins = Pins()

    @property
    def pins(self) -> Pins:
        """What came back, pinned for `expand_pin_turns` user turns (compaction spares it)."""
        return self._pins

    def expand(self, node_id: str) -> str:
        """Restore what `node_id` stands for; the tool result the model reads.

        When the whole does not fit but what a summary was made from does (its units
        with their outputs still compacted), that comes back instead, and the result
        says so: each piece still compacted names its own id.
        """
        view = self._working.view
        plan = plan_restore(view, node_id)
        if isinstance(plan, Refusal):
            return plan.text
        short = self._shortfall(plan)
        if short is None:
            return self._apply(node_id, plan)
        smaller = plan_restore(view, node_id, whole=False)
        if isinstance(smaller, RestorePlan) and smaller.compacted and not self._shortfall(smaller):
            size, room = short
            done = self._apply(node_id, smaller)
            if not done.startswith(f"{EXPAND_TOOL}: restored"):
                return done
            return (
                f"{done}. The whole would take {size:,} tokens and {room:,} are free, so it "
                f"came back one level: {smaller.compacted} piece(s) in it are still "
                "compacted; each names the id to expand it"
            )
        return self._refusal(node_id, plan, *short)

    def _apply(self, node_id: str, plan: RestorePlan) -> str:
        proposal = plan.proposal
        with self._keeper.atomic():
            try:
                entry = self._working.apply(proposal)
            except InvariantViolation as exc:
                self._counters.count(rejected=1)
                self._bus.emit("proposal_rejected", proposal=proposal, reason=str(exc))
                return f"{EXPAND_TOOL}: {shown(node_id)} cannot be restored: {exc}"
            self._counters.count(applied=1)
            pins = self._options.expand_pin_turns
            if pins:
                self._pins.pin(plan.restored, self._working.view.turns + pins)
            self._keeper.save()
        self._bus.emit("proposal_applied", proposal=proposal, entry=entry)
        kept = f", kept for {pins} user turn(s)" if pins else ""
        return (
            f"{EXPAND_TOOL}: restored {shown(node_id)}: {len(plan.restored)} node(s) of "
            f"{plan.units} turn(s), {proposal.tokens_after:,} tokens, in the context from "
            f"the next request on{kept}"
        )

    def _shortfall(self, plan: RestorePlan) -> tuple[int, int] | None:
        """`(size, room)` when the restored content cannot fit the budget; else `None`."""
        budget = self._options.budget
        if budget is None:
            return None
        # A renderer of its own: the manager's keep state from one render to the next
        # (kept drops, the cache marks of the previous assembly) that this must not move.
        renderer = Renderer(
            format=self._options.format, tools=self._renderers.get(self._options.format).tools
        )
        try:
            # Budget 0 fails at once with the floor's size.
            floor = renderer.render(self._working, budget=0).tokens
        except BudgetExceededError as exc:
            floor = exc.required
        calibrator = self._renderers.calibrator
        grows = plan.proposal.tokens_after
        if calibrator.apply(floor + grows) <= budget:
            return None
        return calibrator.apply(grows), max(0, budget - calibrator.apply(floor))

    def _refusal(self, node_id: str, plan: RestorePlan, size: int, room: int) -> str:
        budget = self._options.budget or 0
        if plan.units > 1:
            advice = (
                f"a summary comes back whole, and its {plan.units} turns do not fit; work "
                "from the summary, or make room first (fewer outputs in view)"
            )
        else:
            advice = (
                "it cannot be expanded whole; run the tool again for just the part you "
                "need (a line range, a narrower query)"
            )
        return (
            f"{EXPAND_TOOL} refused: {shown(node_id)} stands for {size:,} tokens, but only "
            f"{room:,} of the {budget:,}-token budget are free beside what every request "
            f"keeps; {advice}. Nothing was changed."
        )
