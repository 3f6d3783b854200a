"""How `ContextManager` compacts: triggers, one run at a time, the plan, redaction.

Mixed into `ContextManager`; the attributes declared below are set by its constructor.
A run claims the one run slot (a render that must compact waits for the run in
progress instead of racing it over the same nodes), hands the pending firings to
`plan_runs`, and folds each pipeline's outcome into the manager's figures.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from typing import Any

import anyio

from context_graph.errors import InvariantViolation
from context_graph.render import Renderer, RenderResult
from context_graph.tokens.counting import ProviderFormat
from orchestrator.bus import EventBus
from orchestrator.compaction.guards import GuardConfig
from orchestrator.compaction.pipeline import PipelineRun, StageSettings, run_pipeline
from orchestrator.compaction.plan import plan_runs
from orchestrator.compaction.triggers import Firing, TriggerConfig, evaluate
from orchestrator.persistence.manager_state import PersistenceMethods
from orchestrator.working import WorkingGraph, WorkingView
from processors.base import Processor, ProcessorContext, Summarizer, run_processor
from processors.redact import SecretRedactor

__all__ = ["CompactionMethods"]

#: Redaction passes before giving up on a view that changes under each one: a pass
#: redacts, the next finds nothing new (or redacts what arrived meanwhile).
_REDACT_ATTEMPTS = 5


class CompactionMethods(PersistenceMethods):
    """Trigger evaluation, pipeline runs and redaction; mixed into `ContextManager`."""

    _working: WorkingGraph
    _bus: EventBus
    _config: TriggerConfig
    _pipelines: dict[str, tuple[Processor, ...]]
    _guards: GuardConfig
    _summarizer: Summarizer | None
    _clock: Callable[[], float]
    _compact_to: float
    _background_timeout: float | None
    _compaction_timeout: float | None
    _redactor: SecretRedactor | None
    _renderers: dict[ProviderFormat, Renderer]
    _cache_breakpoints: bool
    _last: RenderResult | None
    _busy: anyio.Event | None
    _unsent: set[str]

    def _renderer(self, format: ProviderFormat) -> Renderer:
        renderer = self._renderers.get(format)
        if renderer is None:
            renderer = Renderer(
                format=format,
                calibrator=self._calibrator,
                refit_to=self._compact_to,
                cache_breakpoints=self._cache_breakpoints,
            )
            self._renderers[format] = renderer
        return renderer

    def _fits(self, renderer: Renderer, budget: int | None) -> bool:
        if budget is None:
            return False
        tokens = renderer.render(self._working).tokens
        return self._calibrator.apply(tokens) <= budget

    def _fire(self, budget: int | None) -> list[Firing]:
        firings, self._state = evaluate(
            self._working.view, budget, self._state, config=self._config
        )
        tokens = self._working.total_tokens
        for firing in firings:
            self._bus.emit("trigger_fired", firing=firing)
            if firing.kind == "budget_ratio" and budget is not None:
                threshold = (
                    self._config.hard_ratio
                    if firing.name == "budget_hard"
                    else self._config.soft_ratio
                )
                self._bus.emit(
                    "budget_crossed", ratio=tokens / budget, threshold=threshold, tokens=tokens
                )
        return firings

    async def _claim(self) -> anyio.Event:
        """Wait until no pipeline runs, then hold the run slot (release with `.set()`)."""
        while self._busy is not None:
            await self._busy.wait()
        self._busy = anyio.Event()
        return self._busy

    def _release(self, busy: anyio.Event) -> None:
        if self._busy is busy:
            self._busy = None
        busy.set()

    async def _run(
        self,
        budget: int | None,
        instructions: str | None,
        renderer: Renderer | None,
        *,
        firings: Sequence[Firing] = (),
        manual: bool = False,
        overflow: bool = False,
        background: bool = False,
    ) -> PipelineRun:
        """Handle the pending firings and `firings`: the pipelines `plan_runs` picks.

        A whole-view run stops once the request fits `compact_to` of the budget (with a
        `renderer`; a manual run goes through every stage). One run at a time: this
        waits for a run in progress.
        """
        target = self._target(budget)
        settings = self._settings(budget, instructions, target)
        guards = self._guards
        if overflow:
            # The floor, the stall after little progress and the re-summarize cap spare
            # the prompt cache and the summary's fidelity when compaction is optional;
            # when the request does not fit at all, compaction is the only way to send
            # it, and a long session must be able to roll its summary again. The
            # failure limit still holds.
            guards = guards.model_copy(
                update={"floor_tokens": 0, "min_progress": 0.0, "max_resummarize": 1 << 30}
            )
        done = (
            None if manual or renderer is None else functools.partial(self._fits, renderer, target)
        )
        busy = await self._claim()
        # A run lands in the session file whole or not at all (`SessionStore.atomic`),
        # with the state it leaves: a crash between two of its proposals must not leave
        # a session that is neither before nor after it.
        with self._journal_run():
            # Whatever fired so far is handled by this run (or found moot by it).
            handled, self._pending = [*self._pending, *firings], []
            steps = plan_runs(handled, self._config.default_pipeline, overflow=overflow or manual)
            relief = None if manual else self._relief_limit(handled, budget, overflow)
            total = PipelineRun(guard_state=self._guard_state)
            try:
                # `background_timeout` cuts a background run, `compaction_timeout` one
                # that a render or `compact()` waits for, the same way: nothing of the
                # stage in progress is applied (a proposal lands whole, never while its
                # processor runs), and a render goes on from what the finished stages left.
                with anyio.move_on_after(self._time_limit(background)) as scope:
                    if relief is not None and renderer is not None and self._unsent:
                        if await self._relieve(renderer, relief, settings, guards, total):
                            steps = ()
                    for step in steps:
                        whole = step.only is None
                        await self._pipeline(
                            step.pipeline,
                            settings,
                            total,
                            done=done if whole else None,
                            guards=guards,
                            manual=manual,
                            only=step.only,
                        )
                total.timed_out = scope.cancelled_caught
            except anyio.get_cancelled_exc_class():
                # Cancelled from outside (the manager closed): the work is still due, and
                # the next render does it in the foreground.
                self._pending[:0] = handled
                self._bus.emit(
                    "compaction_done",
                    run=total,
                    background=background,
                    timed_out=False,
                    cancelled=True,
                )
                raise
            finally:
                self._release(busy)
            self._save_state()
        if total.timed_out:
            self._report_timeout(total, background=background, floor=False)
        self._bus.emit(
            "compaction_done",
            run=total,
            background=background,
            timed_out=total.timed_out,
            cancelled=False,
        )
        return total

    def _time_limit(self, background: bool) -> float | None:
        return self._background_timeout if background else self._compaction_timeout

    def _report_timeout(self, run: PipelineRun, *, background: bool, floor: bool) -> None:
        self._bus.emit(
            "compaction_timed_out",
            run=run,
            background=background,
            floor=floor,
            timeout=self._time_limit(background),
        )

    async def _pipeline(
        self, name: str, settings: StageSettings, total: PipelineRun, **options: Any
    ) -> None:
        """Run pipeline `name`; fold what it did into `total`, also when it is cut short.

        A stage applied before a time limit struck stays applied, so it is counted.
        """
        run = PipelineRun()
        try:
            await run_pipeline(
                self._pipelines[name],
                self._working,
                self._bus,
                settings,
                guard_state=self._guard_state,
                run=run,
                **options,
            )
        finally:
            self._count(total, run)

    def _journal_run(self) -> AbstractContextManager[None]:
        store = self._store
        if store is None or store.closed:
            return contextlib.nullcontext()
        return store.atomic()

    def _count(self, total: PipelineRun, run: PipelineRun) -> None:
        """Fold one pipeline's run into the manager's figures and the run's total."""
        if run.guard_state is not None:
            self._guard_state = total.guard_state = run.guard_state
        self._applied += run.applied
        self._rejected += run.rejected
        total.applied += run.applied
        total.rejected += run.rejected
        total.stages.extend(run.stages)
        total.skipped.extend(run.skipped)

    async def _relieve(
        self,
        renderer: Renderer,
        relief: int,
        settings: StageSettings,
        guards: GuardConfig,
        total: PipelineRun,
    ) -> bool:
        """Run the default pipeline on the unsent outputs; whether the request fits `relief`.

        (`_relief_limit` says when this pass runs and what `relief` is.)

        Guarded and recorded like any run: a stage that freed next to nothing from the
        new outputs stalls, so a whole-view run after it goes on to the stages that can
        still free something (the summary) instead of rewriting old outputs for little,
        once more per turn.
        """
        await self._pipeline(
            self._config.default_pipeline,
            settings,
            total,
            done=functools.partial(self._fits, renderer, relief),
            guards=guards,
            only=frozenset(self._unsent),
        )
        return self._fits(renderer, relief)

    def _relief_limit(
        self, handled: Sequence[Firing], budget: int | None, overflow: bool
    ) -> int | None:
        """The size under which compacting what the model has not seen yet is enough.

        A budget level fired (or the request overflowed) because of what arrived since
        the last request, say one large tool output. Shrinking just that new material
        leaves every message already sent unchanged, so the provider's prompt cache
        still holds the prefix; the whole-view run rewrites it. So a run that only
        budget levels of the default pipeline asked for first runs the default pipeline
        on the unsent outputs, and is over when the request is back under the lowest
        level that fired (the hard level, or the budget, for an overflow). `None`: no
        such pre-pass (other firings, no budget).
        """
        if budget is None:
            return None
        default = self._config.default_pipeline
        if any(f.kind != "budget_ratio" or f.pipeline != default for f in handled):
            return None
        levels = [
            self._config.hard_ratio if f.name == "budget_hard" else self._config.soft_ratio
            for f in handled
        ]
        if overflow and not handled:
            levels.append(self._config.hard_ratio)
        ratio = min((level for level in levels if level is not None), default=1.0)
        return int(budget * min(ratio, 1.0))

    def _target(self, budget: int | None) -> int | None:
        # Compact in one batch down to the low-water mark, not just under the budget, so
        # that the following turns fit without another rewrite of the prefix.
        return None if budget is None else max(1, int(budget * self._compact_to))

    def _settings(
        self, budget: int | None, instructions: str | None, target: int | None
    ) -> StageSettings:
        """What the stages of one run share; each takes its view from `_snapshot`."""
        return StageSettings(
            budget,
            self._summarizer,
            instructions,
            self._clock,
            target=target,
            snapshot=self._snapshot,
        )

    async def _redact_new(self) -> None:
        """Redact secrets in every view node not scanned yet (with `redact_secrets`)."""
        await self._snapshot()

    async def _snapshot(self) -> WorkingView:
        """A frozen view in which every node was scanned for secrets (with `redact_secrets`).

        Every processor of a run reads the view this returns (`StageSettings.snapshot`),
        so a node that arrived while an earlier stage awaited a model, or while a render
        waited for the run slot, is redacted before any summarizer sees it. The view is
        returned only once a check with no await before the freeze finds nothing
        unscanned in it.

        Raises:
            RuntimeError: the view kept changing while it was redacted.
        """
        redactor = self._redactor
        if redactor is None:
            return self._working.snapshot()
        for _attempt in range(_REDACT_ATTEMPTS):
            snapshot = self._working.snapshot()
            new = [snapshot[i] for i in snapshot.current_ids() if i not in self._scanned]
            if not new:
                return snapshot
            ctx = ProcessorContext(graph=snapshot, tokens=self._working.token_cache)
            proposal = await run_processor(redactor, new, ctx)
            if proposal.empty:
                self._scanned.update(node.id for node in new)
                continue  # scan again: nodes may have arrived while the redactor ran
            self._bus.emit("proposal_made", proposal=proposal)
            try:
                entry = self._working.apply(proposal)
            except InvariantViolation as exc:
                # A compaction replaced a target meanwhile: scan the new view again.
                self._bus.emit("proposal_rejected", proposal=proposal, reason=str(exc))
                continue
            self._applied += 1
            self._bus.emit("proposal_applied", proposal=proposal, entry=entry)
            self._scanned.update(node.id for node in new)
            self._scanned.update(entry.added)
        msg = "redact_secrets: the view kept changing while it was being redacted"
        raise RuntimeError(msg)
