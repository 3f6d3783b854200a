"""Running a processor pipeline on a working graph: targets, stages, proposals, the bus.

The manager decides *whether* to compact; this module does the compaction: for each
stage in order it picks the stage's targets from a fresh snapshot, runs the processor
(`run_processor`), and applies a non-empty proposal through `WorkingGraph.apply`. A
processor that fails and a proposal the invariant checker refuses are reported on the
bus as `proposal_rejected` (with the reason) and the next stage runs; cancellation is
never caught.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from context_graph.errors import InvariantViolation, ProcessorError
from context_graph.nodes import ANSWER_KINDS, Node
from orchestrator.buffer import WorkingGraph, WorkingView
from orchestrator.bus import EventBus
from processors.base import Processor, ProcessorContext, Summarizer, run_processor
from processors.summarize import HistorySummarizer

__all__ = [
    "PipelineRun",
    "StageSettings",
    "history_targets",
    "output_targets",
    "run_pipeline",
    "run_stage",
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


def _name(processor: Processor) -> str:
    name = getattr(processor, "name", None)
    return name if isinstance(name, str) and name else type(processor).__name__


def output_targets(view: WorkingView) -> tuple[Node, ...]:
    """Tool outputs, file reads and sub-agent answers in the view, unpinned, in order."""
    nodes = (view[node_id] for unit in view.units() for node_id in unit.node_ids)
    return tuple(node for node in nodes if node.kind in ANSWER_KINDS and not node.pinned)


def history_targets(view: WorkingView) -> tuple[Node, ...]:
    """The oldest run of whole, unpinned units between the first and the latest user turn.

    The user's first request, the latest user turn and everything after it are never
    summarized: they are the task and the work in progress.
    """
    units = view.units()
    users = [i for i, unit in enumerate(units) if unit.kind == "user"]
    if len(users) < 2:  # a first request and a later turn
        return ()
    run: list[Node] = []
    for unit in units[users[0] + 1 : users[-1]]:
        nodes = [view[node_id] for node_id in unit.node_ids]
        if any(node.pinned for node in nodes):
            if run:
                break
            continue
        run.extend(nodes)
    return tuple(run)


def _targets(processor: Processor, view: WorkingView) -> tuple[Node, ...]:
    if isinstance(processor, HistorySummarizer):
        return history_targets(view)
    return output_targets(view)


@dataclass(frozen=True, slots=True)
class StageSettings:
    """What every stage of one run shares."""

    budget: int | None
    summarizer: Summarizer | None
    instructions: str | None
    clock: Callable[[], float] = time.time


async def run_stage(
    processor: Processor,
    working: WorkingGraph,
    bus: EventBus,
    settings: StageSettings,
    run: PipelineRun,
) -> None:
    """Run one stage on a fresh snapshot and apply its proposal, or report why not."""
    snapshot = working.snapshot()
    targets = _targets(processor, snapshot)
    run.stages.append(_name(processor))
    if not targets:
        return
    ctx = ProcessorContext(
        graph=snapshot,
        tokens=working.token_cache,
        budget=settings.budget,
        summarizer=settings.summarizer,
        instructions=settings.instructions,
        clock=settings.clock,
    )
    try:
        proposal = await run_processor(processor, targets, ctx)
    except ProcessorError as exc:
        run.rejected += 1
        bus.emit("proposal_rejected", proposal=None, reason=str(exc), processor=_name(processor))
        return
    if proposal.empty:
        return
    bus.emit("proposal_made", proposal=proposal)
    try:
        entry = working.apply(proposal)
    except InvariantViolation as exc:
        run.rejected += 1
        bus.emit("proposal_rejected", proposal=proposal, reason=str(exc))
        return
    run.applied += 1
    bus.emit("proposal_applied", proposal=proposal, entry=entry)


async def run_pipeline(
    pipeline: Sequence[Processor],
    working: WorkingGraph,
    bus: EventBus,
    settings: StageSettings,
    *,
    done: Callable[[], bool] | None = None,
) -> PipelineRun:
    """Run the stages in order; stop early once `done()` says the view is small enough."""
    run = PipelineRun()
    for processor in pipeline:
        await run_stage(processor, working, bus, settings, run)
        if done is not None and done():
            break
    return run
