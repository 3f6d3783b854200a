"""Running a processor pipeline on a working graph: targets, stages, proposals, the bus.

The manager decides *whether* to compact; this module does the compaction: for each
stage in order it picks the stage's targets from a fresh snapshot (from
`StageSettings.snapshot` when given: the manager's redacts secrets first), runs the
processor (`run_processor`), and applies a non-empty proposal through `WorkingGraph.apply`. A
processor that fails and a proposal the invariant checker refuses are reported on the
bus as `proposal_rejected` (with the reason) and the next stage runs; cancellation is
never caught.

With a `GuardConfig` the loop guards (`orchestrator.compaction.guards`) are consulted before each
stage and fed its outcome after; the new `GuardState` comes back in `PipelineRun`. A
stage a guard skips is listed in `PipelineRun.skipped` with the reason, and not sent on
the bus: `proposal_rejected` reports a proposal that was refused, and a skipped stage
made none (it would also repeat on every render while the guard holds). The failure
that disables a stage is also logged as a warning on the `context_graph` logger, naming
the processor, its error and how long it stays off.

With `GuardConfig.cost_aware`, the cost guard (`orchestrator.compaction.cost_guard`)
weighs each proposal between `proposal_made` and its apply: one whose cache rewrite
costs more than it saves waits (listed in `PipelineRun.skipped`, sent as
`proposal_waited` with both dollar figures), unless the run must compact.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from itertools import pairwise

from context_graph.errors import InvariantViolation, ProcessorError
from context_graph.graph.anchors import floor_anchors, preamble_heads
from context_graph.graph.nodes import ANSWER_KINDS, Node, SummaryNode
from context_graph.graph.units import Unit
from orchestrator.bus import EventBus
from orchestrator.compaction.cost_guard import hold_back
from orchestrator.compaction.guards import (
    GuardConfig,
    GuardState,
    StageOutcome,
    allowed,
    disabled_notice,
    record,
    tick,
)
from orchestrator.compaction.plan import RunMode
from orchestrator.compaction.recency import live_outputs
from orchestrator.working import WorkingGraph, WorkingView
from processors.base import (
    Abstract,
    Processor,
    ProcessorContext,
    Proposal,
    Resizable,
    Summarizer,
    run_processor,
    scope_of,
)
from processors.summarize.targets import imported_text, rolling_run

logger = logging.getLogger("context_graph")

__all__ = [
    "PipelineRun",
    "StageSettings",
    "first_by_priority",
    "goal_prefix",
    "history_targets",
    "output_targets",
    "preamble_targets",
    "run_pipeline",
    "run_stage",
    "stage_goal",
    "stands_for",
    "summary_chain",
    "takes_spared",
]


@dataclass(slots=True)
class PipelineRun:
    """What one pipeline run did (per-run state, never kept on a processor)."""

    applied: int = 0
    """Proposals applied."""
    rejected: int = 0
    """Proposals refused by the invariant checker, plus processors that failed."""
    stages: list[str] = field(default_factory=list)
    """The names of the stages that ran, in order."""
    skipped: list[tuple[str, str]] = field(default_factory=list)
    """(stage name, reason) of the stages a guard skipped, in order."""
    guard_state: GuardState | None = None
    """The guard state after this run; `None` when the run had no guards."""
    partial: bool = False
    """The last stage's pass took only part of its targets (a goal-sized pass): if the
    request is still over the target, the stage runs again on all of them."""
    refilled: int = 0
    """Restore proposals that took back the run's own cuts of outputs, once it landed
    under its target (`refill`); counted in `applied` too."""
    timed_out: bool = False
    """A time limit (`background_timeout`, `compaction_timeout`) cut the run short: the
    stage in progress applied nothing, the stages before it stay applied."""


def _name(processor: Processor) -> str:
    name = getattr(processor, "name", None)
    return name if isinstance(name, str) and name else type(processor).__name__


def output_targets(view: WorkingView, units: Sequence[Unit] | None = None) -> tuple[Node, ...]:
    """Tool outputs, file reads and sub-agent answers in `units` (the view's), unpinned."""
    if units is None:
        return tuple(node for node in view.answers() if not node.pinned)
    nodes = (view[node_id] for unit in units for node_id in unit.node_ids)
    return tuple(node for node in nodes if node.kind in ANSWER_KINDS and not node.pinned)


def preamble_targets(view: WorkingView) -> tuple[Node, ...]:
    """The unpinned nodes of the notices before the user's first request (`preamble_heads`)."""
    heads = preamble_heads(view.units())
    nodes = (view[node_id] for head in heads for node_id in view.unit_of(head).node_ids)
    return tuple(node for node in nodes if not node.pinned)


MAX_SUMMARY_REPEATS = 2
"""How many more spans one run may summarize after the first, while the view is still
over the run's target."""

KEEP_RECENT_UNITS = 2
"""Units at the end of the view a summary never takes: the step in progress and the one
before it, whose results the model is acting on."""


def _whole_run(
    view: WorkingView, units: Sequence[Unit], held: frozenset[str] = frozenset()
) -> list[Node]:
    """The first run of units with no pinned (or `held`) node, as nodes in order.

    A provider's own compaction (`_native_summary`) ends a run as a pinned unit does.
    """
    run: list[Node] = []
    for unit in units:
        nodes = [view[node_id] for node_id in unit.node_ids]
        if (
            any(node.pinned for node in nodes)
            or not held.isdisjoint(unit.node_ids)
            or _native_summary(view, unit)
        ):
            if run:
                break
            continue
        run.extend(nodes)
    return run


def history_targets(
    view: WorkingView,
    *,
    keep_recent: int = KEEP_RECENT_UNITS,
    held: frozenset[str] = frozenset(),
    goal: int | None = None,
) -> tuple[Node, ...]:
    """The oldest run of whole, unpinned units that a summary may stand for.

    First the units between the user's first request and the latest user turn (split at
    the latest request when a notice, `UserNode.notice`, came after it); when those
    spans hold nothing new (no units, or only the summary already written there), the
    finished steps of the current tool loop: the units after the latest user turn but
    the last `keep_recent`. An agent working on one request for hundreds of steps would
    otherwise never be summarized, and its request would stop fitting.

    A span's earlier summaries are in its run: the new summary absorbs them, with the
    requests between them (`rolling_run`), so a session of many requests keeps one
    summary of its past, and the view stays bounded however many requests came.

    Never taken: the user's first request, the latest request, the latest user turn,
    the last `keep_recent` units, every pinned node and every unit holding a `held` one
    (content the model brought back with `context_expand`). A session continued from
    another tool's compaction starts with that tool's summary; the first compaction
    absorbs it into the brief (its earlier-summary block, clipped to what the budget
    leaves) instead of carrying it whole at every later call: with no request since, it
    leads the tool loop's run; with requests since, it is a span of its own, the first.

    With a `goal` (content tokens the summary must take), only the oldest whole units
    of the run that hold that much are taken: the newer steps stay verbatim, so a
    compaction lands near its target instead of far below it, and the latest errors and
    results the model acts on are the last thing summarized (`goal_prefix`).
    """
    units = view.units()
    anchors = floor_anchors([unit.kind for unit in units])
    if anchors is not None:
        bounds = sorted(set(anchors))
        spans = [units[start + 1 : end] for start, end in pairwise(bounds)]
        loop = bounds[-1] + 1
        # A session continued from another tool's compaction, with requests since: the
        # summary before the first request is a span of its own, taken first (its brief
        # claims room as the user's words do, `processors.summarize.room.words_room`).
        lead = _first_imported_summary(view, units[: bounds[0]])
        if lead is not None:
            spans.insert(0, units[lead : min(bounds[0], len(units) - keep_recent)])
    else:
        # No request: a tool loop after the system prompt, or after the summary a
        # session continued from another tool's compaction starts with. That summary
        # (Claude Code's of a whole conversation runs to thousands of tokens) leads the
        # loop's run, as an earlier summary of ours would.
        spans, loop = [], 0
        while loop < len(units) and (
            units[loop].kind == "system" or _native_summary(view, units[loop])
        ):
            loop += 1
    spans.append(units[loop : max(loop, len(units) - keep_recent)])
    for span in spans:
        # A span can hold several summaries (one of the tool loop after each request
        # that came since): the summary takes the whole run and absorbs them all.
        run = rolling_run(_whole_run(view, span, held))
        if run:
            return run if goal is None else goal_prefix(view, run, goal)
    return ()


def _native_summary(view: WorkingView, unit: Unit) -> bool:
    """Whether `unit` is a summary holding a provider's own compaction artifact.

    It goes back verbatim to its provider (and another format sends the record it stands
    for): a brief of ours never takes it.
    """
    node = view[unit.head]
    return isinstance(node, SummaryNode) and node.native is not None


def _first_imported_summary(view: WorkingView, units: Sequence[Unit]) -> int | None:
    """The index in `units` of the first summary another tool wrote as text, if any."""
    return next((i for i, unit in enumerate(units) if imported_text(view[unit.head])), None)


def goal_prefix(view: WorkingView, run: Sequence[Node], goal: int) -> tuple[Node, ...]:
    """The shortest run of `run`'s oldest whole units holding `goal` content tokens.

    Earlier summaries lead a run (`rolling_run`) and are always in it, with at least one
    unit of new material: a prefix of summaries alone would summarize nothing new.
    """
    taken: list[Node] = []
    tokens = 0
    fresh = False
    for unit in _units_of(view, run):
        if tokens >= goal and fresh:
            break
        taken.extend(unit)
        tokens += sum(view.tokens(node.id) for node in unit)
        fresh = fresh or any(node.kind != "summary" for node in unit)
    return tuple(taken)


def _units_of(view: WorkingView, run: Sequence[Node]) -> list[list[Node]]:
    """`run` (whole units in order) grouped by the unit each node belongs to."""
    groups: list[list[Node]] = []
    head: str | None = None
    for node in run:
        unit = view.unit_of(node.id).head
        if groups and unit == head:
            groups[-1].append(node)
        else:
            groups.append([node])
            head = unit
    return groups


def _targets(
    processor: Processor,
    view: WorkingView,
    working: WorkingGraph,
    only: frozenset[str] | None,
    held: frozenset[str] = frozenset(),
    goal: int | None = None,
    spared: frozenset[str] = frozenset(),
) -> tuple[Node, ...]:
    """The stage's targets, by the scope it declares (`processors.base.Scope`).

    With `only`, just the nodes that are or stand for those ids; never one of `held`
    (`StageSettings.held`), nor one that is or stands for a transcript node in `spared`.

    A node trigger names the nodes that fired; an earlier stage may have replaced one
    (a masked copy), so a node matches when any of its pristine roots is named. A
    summary stands for whole units, not for nodes that fired, so a restricted run hands
    a `history` processor nothing.
    """
    scope = scope_of(processor)
    if scope == "history":
        return () if only is not None else history_targets(view, held=held, goal=goal)
    nodes = (
        output_targets(view)
        if scope == "outputs"
        else preamble_targets(view)
        if scope == "preamble"
        else _every_node(view)
    )
    return tuple(
        node
        for node in nodes
        if node.id not in held
        and (only is None or stands_for(working, node, only))
        and not (spared and stands_for(working, node, spared))
    )


def _every_node(view: WorkingView) -> tuple[Node, ...]:
    """The view's unpinned nodes but system prompts, in order (scope `all`)."""
    nodes = (view[node_id] for node_id in view.current_ids())
    return tuple(node for node in nodes if not node.pinned and node.kind != "system")


def _roots(view: WorkingView, ids: frozenset[str]) -> frozenset[str]:
    """The transcript nodes `ids` stand for (those of them the view knows)."""
    return frozenset(root for i in ids if i in view for root in view.roots(i))


def stands_for(working: WorkingGraph, node: Node, ids: frozenset[str]) -> bool:
    """Whether `node` is one of `ids` or an edited copy of one (through its pristine roots)."""
    if node.id in ids:
        return True
    if node.seq is not None and working.view.overlay.node(node.id) is None:
        return False  # a pristine transcript node: its only root is itself
    return working.view.stands_for_any(node.id, ids)


@dataclass(frozen=True, slots=True)
class StageSettings:
    """What every stage of one run shares."""

    budget: int | None
    summarizer: Summarizer | None
    instructions: str | None
    clock: Callable[[], float] = time.time
    target: int | None = None
    """The low-water mark a whole-view run compacts to (`compact_to` of the budget)."""
    snapshot: Callable[[], Awaitable[WorkingView]] | None = None
    """Takes the view a stage hands its processor (`working.snapshot()` when `None`).

    Every stage asks it afresh, so whatever screens that view (the manager redacts the
    secrets in it first, `redact_secrets`) holds for every processor of every run, also
    for nodes that arrived while an earlier stage awaited a model.
    """
    held: frozenset[str] = frozenset()
    """Nodes no stage may take: what the model restored with `context_expand`, while its
    pin lasts (`expand_pin_turns`). Checked on apply too, as protected nodes."""
    expand_hints: bool = False
    """Processors name the id to pass `context_expand` (`ProcessorContext.expand_hints`)."""
    unsent: frozenset[str] = frozenset()
    """Nodes no request has carried yet: the cost guard counts the cache as holding the
    view up to the first of them (what follows is written at the next call anyway)."""
    spared: frozenset[str] = frozenset()
    """Outputs the output stages leave as they are (a summary may still take them): the
    live error and its resolution (`recency.live_outputs`) in the first phase of a run
    that compacts to its target. A stage that caps each output (`Resizable`, the
    truncator) still cuts them down to its cap (`takes_spared`)."""
    excess: Callable[[], int] | None = None
    """How many tokens the request is over `target` now (a whole-view run's). With it a
    summary takes just the oldest history that brings the request down to the target,
    with room for itself (`summary_goal`), not the whole run."""
    over: Callable[[], int] | None = None
    """The same excess in request tokens: `excess` is in content tokens, scaled by their
    share of the request (a node taken whole frees its framing too), while a cut frees
    content one for one. What a processor that sizes its edit is told to free
    (`ProcessorContext.to_free`)."""


SUMMARY_RESERVE = 0.15
"""The share of the budget a goal-sized summary keeps for itself: taken on top of the
excess, so the summary has that much room and the request lands near the target."""


OUTPUT_GOAL_FACTOR = 2
"""A stage's first pass takes outputs holding this many times the excess: a processor
frees part of what it is handed (a mask almost all, a distillation half or more)."""


def takes_spared(processor: Processor) -> bool:
    """Whether a stage may take the spared outputs (`StageSettings.spared`).

    A summary may: the brief quotes the error's line and the line that showed the fix.
    So may a stage that caps each output (`Resizable`): it cuts nothing under its cap,
    and the coding policy's truncator keeps a shell output's error lines first. Sparing
    a failed run whole let one test log of 10,000 characters hold its place at an 8k
    budget while the file the agent had just read was distilled to its outline.
    """
    return scope_of(processor) == "history" or isinstance(processor, Resizable)


def stage_goal(settings: StageSettings, scope: str) -> int | None:
    """Content tokens a stage's goal-sized pass should take (`None`: all its targets).

    A history stage takes the excess and room for the summary itself; an output stage
    `OUTPUT_GOAL_FACTOR` times the excess.
    """
    if settings.excess is None or settings.budget is None:
        return None
    excess = settings.excess()
    if excess <= 0:
        return None
    if scope == "history":
        return excess + int(settings.budget * SUMMARY_RESERVE)
    return excess * OUTPUT_GOAL_FACTOR


def first_by_priority(view: WorkingView, nodes: Sequence[Node], goal: int) -> tuple[Node, ...]:
    """The nodes a goal-sized pass takes, handed on in their view order.

    Lowest `priority` first, oldest first within a priority, until they hold `goal`
    content tokens.
    """
    place = {node.id: index for index, node in enumerate(nodes)}
    chosen: set[str] = set()
    tokens = 0
    for node in sorted(nodes, key=lambda n: (n.priority, place[n.id])):
        if tokens >= goal:
            break
        chosen.add(node.id)
        tokens += view.tokens(node.id)
    return tuple(node for node in nodes if node.id in chosen)


async def run_stage(
    processor: Processor,
    working: WorkingGraph,
    bus: EventBus,
    settings: StageSettings,
    run: PipelineRun,
    *,
    mode: RunMode = RunMode.SOFT,
    only: frozenset[str] | None = None,
    guards: GuardConfig | None = None,
    rewritten_from: int | None = None,
    sized: bool = False,
    to_target: bool = False,
) -> StageOutcome:
    """Run one stage on a fresh snapshot and apply its proposal, or report why not.

    With `sized` (and `settings.excess`), the stage takes only what brings the request
    to the run's target (`stage_goal`): a summary the oldest history, an output stage
    the outputs of lowest priority, oldest first (`first_by_priority`). In a run that
    compacts `to_target` (every pass of it, sized or not), the processor is told how
    far over the target the request is (`ProcessorContext.to_free`).
    With `only`, the stage takes just those nodes (see `_targets`). The snapshot comes
    from `settings.snapshot` when given (the one place a processor's view is taken).
    The outcome is marked manual in `RunMode.MANUAL` (the guards record it as such).
    With `guards.cost_aware` the proposal may wait (`cost_guard.hold_back`);
    `rewritten_from` is where the run's earlier stages rewrote the view from.
    """
    snapshot = working.snapshot() if settings.snapshot is None else await settings.snapshot()
    tokens = snapshot.total_tokens
    nothing = StageOutcome(view_tokens=tokens, manual=mode is RunMode.MANUAL)
    scope = scope_of(processor)
    goal = stage_goal(settings, scope) if sized else None
    over = settings.over if sized or to_target else None
    to_free = None if over is None else max(0, over())
    # By their transcript roots: a stage that takes them (the truncator) replaces them
    # with copies of other ids, which the stages after it must still leave alone.
    spared = frozenset() if takes_spared(processor) else _roots(snapshot, settings.spared)
    targets = _targets(processor, snapshot, working, only, settings.held, goal, spared)
    run.partial = False
    if goal is not None and scope != "history":
        part = first_by_priority(snapshot, targets, goal)
        run.partial = len(part) < len(targets)
        targets = part
    run.stages.append(_name(processor))
    if not targets:
        return nothing
    ctx = ProcessorContext(
        graph=snapshot,
        tokens=working.token_cache,
        budget=settings.budget,
        summarizer=settings.summarizer,
        instructions=settings.instructions,
        clock=settings.clock,
        target=settings.target,
        expand_hints=settings.expand_hints,
        to_free=to_free,
    )
    try:
        proposal = await run_processor(processor, targets, ctx)
    except ProcessorError as exc:
        run.rejected += 1
        bus.emit("proposal_rejected", proposal=None, reason=str(exc), processor=_name(processor))
        return nothing.model_copy(update={"failed": True, "error": str(exc)})
    if proposal.empty:
        return nothing
    bus.emit("proposal_made", proposal=proposal)
    if guards is not None and guards.cost_aware:
        must = mode in {RunMode.MANUAL, RunMode.OVERFLOW}  # a run that must compact
        wait, rewritten_from = hold_back(
            proposal,
            working,
            bus,
            guards,
            budget=settings.budget,
            must=must,
            rewritten_from=rewritten_from,
            protected=settings.held,
            unsent=settings.unsent,
        )
        if wait is not None:
            run.skipped.append((_name(processor), wait))
            return nothing.model_copy(update={"waited": True})
    try:
        entry = working.apply(proposal, protected=settings.held)
    except InvariantViolation as exc:
        run.rejected += 1
        bus.emit("proposal_rejected", proposal=proposal, reason=str(exc))
        return nothing.model_copy(update={"rejected": True, "error": str(exc)})
    run.applied += 1
    bus.emit("proposal_applied", proposal=proposal, entry=entry)
    return nothing.model_copy(
        update={
            "applied": True,
            "freed": entry.tokens_saved,
            "chain_length": summary_chain(working.view, proposal),
            "rewritten_from": rewritten_from,
        }
    )


def summary_chain(view: WorkingView, proposal: Proposal) -> int:
    """The longest summary chain among the summaries `proposal` added (0: it added none).

    A summary of plain nodes is a chain of length 1; a summary that abstracts a summary
    of length n has length n + 1. `view` must already hold the applied proposal.
    """
    # The overlay keeps each summary's length as it is made (`Overlay.chains`), from
    # its parts' lengths: a rolling summary absorbs the previous one at every
    # compaction, so a walk down the chain would grow with the session.
    chains = view.overlay.chains
    added = (edit.summary.id for edit in proposal.edits if isinstance(edit, Abstract))
    return max((chains.get(i, 0) for i in added), default=0)


async def run_pipeline(
    pipeline: Sequence[Processor],
    working: WorkingGraph,
    bus: EventBus,
    settings: StageSettings,
    *,
    done: Callable[[], bool] | None = None,
    guards: GuardConfig | None = None,
    guard_state: GuardState | None = None,
    mode: RunMode = RunMode.SOFT,
    only: frozenset[str] | None = None,
    run: PipelineRun | None = None,
    spare_while: Callable[[], bool] | None = None,
) -> PipelineRun:
    """Run the stages in order; stop early once `done()` says the view is small enough.

    Args:
        pipeline: The processors, cheapest first.
        working: The working graph the proposals are applied to.
        bus: Where proposals, applies and rejections are reported.
        settings: What every stage shares.
        done: Whether the view is small enough to stop.
        guards: The loop guards; `None` runs every stage (as without guards).
        guard_state: The state the previous run returned; `GuardState()` when `None`.
        mode: Why the run happens; in `RunMode.MANUAL` (`compact()`) every guard is
            bypassed, the outcomes still recorded.
        only: Restrict every stage to these nodes (the ones a node trigger named).
        run: Where the outcomes are gathered (and returned); a fresh `PipelineRun` when
            `None`. A caller that may cut the run short reads what finished from it.
        spare_while: Whether the view, still over `done`'s size after every stage,
            may keep the live error and its resolution as they are (`done` when
            `None`): a run that lands just over its target leaves them alone rather
            than cut what the agent acts on next for a few tokens.
    """
    run = PipelineRun() if run is None else run
    state = None if guards is None else tick(GuardState() if guard_state is None else guard_state)
    sized = done is not None and settings.excess is not None
    # A run that compacts to a target leaves the live error and its resolution
    # (`recency.live_outputs`) to the last: every stage first frees the room from the
    # rest, and only a run still over after all of them takes them too.
    live = live_outputs(working.view) - settings.held if sized else frozenset()
    phases = [dataclasses.replace(settings, spared=live), settings] if live else [settings]
    enough = done if spare_while is None else spare_while
    for phase in phases:
        state = await _run_stages(
            pipeline, working, bus, phase, run, state, done, guards, mode, only
        )
        if done is None or done() or (phase.spared and enough is not None and enough()):
            break
    run.guard_state = state if guards is not None else guard_state
    return run


async def _run_stages(
    pipeline: Sequence[Processor],
    working: WorkingGraph,
    bus: EventBus,
    settings: StageSettings,
    run: PipelineRun,
    state: GuardState | None,
    done: Callable[[], bool] | None,
    guards: GuardConfig | None,
    mode: RunMode,
    only: frozenset[str] | None,
) -> GuardState | None:
    """The stages in order, once (see `run_pipeline`); the guards' state after them."""
    rewritten: int | None = None  # where this run's applied proposals rewrote the view from
    for processor in pipeline:
        name = _name(processor)
        if guards is not None and state is not None:
            manual = mode is RunMode.MANUAL
            ok, reason = allowed(name, state, working.total_tokens, manual, config=guards)
            if not ok:
                run.skipped.append((name, reason))
                continue
        # One summary covers one contiguous span; when the older span is summarized and
        # the view is still over the target, the finished steps of the current tool loop
        # are the next span (`history_targets`), so the stage may run again on them.
        # Any other stage first takes just what the excess asks for (`stage_goal`), and
        # all its targets only if that was not enough.
        history = scope_of(processor) == "history"
        again = history and only is None and done is not None
        sized = done is not None and settings.excess is not None
        passes = 1 + MAX_SUMMARY_REPEATS if again else (2 if sized else 1)
        for number in range(passes):
            outcome = await run_stage(
                processor,
                working,
                bus,
                settings,
                run,
                mode=mode,
                only=only,
                guards=guards,
                rewritten_from=rewritten,
                sized=sized and (history or number == 0),
                to_target=sized,
            )
            if outcome.rewritten_from is not None:
                rewritten = outcome.rewritten_from
            if guards is not None and state is not None:
                state = record(state, name, outcome)
                notice = disabled_notice(state, name, outcome, guards)
                if notice is not None:
                    logger.warning("%s", notice)
            if done is None or done() or not (outcome.applied if history else run.partial):
                break
        if done is not None and done():
            break
    return state
