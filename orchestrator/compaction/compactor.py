"""`Compactor`: how the manager compacts, one run at a time.

It evaluates the triggers and keeps what fired until a run handles it; a run claims the
one run slot (a render that must compact waits for the run in progress instead of racing
it over the same nodes), hands the pending firings to `plan_runs`, runs the pipelines
under the mode's time limit and folds their outcomes into its state. When
compaction cannot bring a request under its budget, `shrink_floor` truncates the floor's
outputs (`orchestrator.compaction.floor`) as one more run in the same slot. Both hold
the session store's lease: while another worker holds it, this one does not compact
(`compaction_deferred`); a run that raced another worker's append is rebased by the
store, and what the newer log made invalid is reported as refused. A run a render or a
background task made whose result cannot be kept (the log kept moving through every
rebase, or the lease was taken over) is taken back and deferred the same way: a render
is a read for its caller, and answers from what it has (`shrink_floor` then fits the
request in a detached copy, written nowhere).

The compactor owns the trigger and guard state and the firings not handled yet, and
hands them to the session store as `triggers`, `guards` and `pending` (`StateOwner`).
It measures requests with a `RequestMeter` (`meter`), and a run that budget levels
asked for starts with the relief pass over what the model has not seen yet
(`orchestrator.compaction.relief`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import anyio
from pydantic import JsonValue

from context_graph.errors import BudgetExceededError, StoreConflictError
from orchestrator.bus import EventBus
from orchestrator.compaction.continuation import Continuation
from orchestrator.compaction.floor import pipeline_truncator, shrink_floor
from orchestrator.compaction.guards import GuardConfig, GuardState
from orchestrator.compaction.hooks import CompactionHooks, Prepared
from orchestrator.compaction.meter import RequestMeter, calibrated
from orchestrator.compaction.pipeline import PipelineRun, StageSettings, run_pipeline
from orchestrator.compaction.plan import RunMode, plan_runs
from orchestrator.compaction.recency import live_outputs
from orchestrator.compaction.refill import refill
from orchestrator.compaction.relief import relief_limit, relieve
from orchestrator.compaction.renderers import RequestRenderer
from orchestrator.compaction.screen import SecretScreen
from orchestrator.compaction.settings import CompactionSettings
from orchestrator.compaction.slot import RunSlot
from orchestrator.compaction.triggers import Firing, TriggerState, evaluate
from orchestrator.counters import ProposalCounters
from orchestrator.persistence.manager_state import StateKeeper
from orchestrator.persistence.protocol import Rebased
from orchestrator.working import WorkingGraph

__all__ = ["Compactor"]


class Compactor:
    """Trigger evaluation and compaction runs over a working graph.

    Args:
        working: The working graph the proposals are applied to.
        bus: Where triggers, proposals and runs are reported.
        options: The manager's options (triggers, pipelines, guards, time limits).
        keeper: Writes the state after each run, and makes a run one transaction.
        screen: Gives every stage its view, scanned for secrets.
        counters: Where the proposals a run applies and refuses are counted.
        unsent: The nodes the model was not sent yet (compacted first, kept on the floor).
        held: The nodes `context_expand` pinned, at a number of user turns (spared).
        hints: Whether what a run under a budget writes names the id to pass
            `context_expand` (the manager's `ToolOffer.hints`); the options say by default.
        hooks: Called before and after each run (`orchestrator.compaction.hooks`).
        continuation: Told of each finished run, for the auto-continue line.
    """

    def __init__(
        self,
        working: WorkingGraph,
        bus: EventBus,
        options: CompactionSettings,
        keeper: StateKeeper,
        screen: SecretScreen,
        counters: ProposalCounters,
        *,
        unsent: Callable[[], frozenset[str]],
        held: Callable[[int], frozenset[str]],
        hints: Callable[[int | None], bool] | None = None,
        hooks: CompactionHooks | None = None,
        continuation: Continuation | None = None,
    ) -> None:
        self._working = working
        self._hooks = hooks
        self._continuation = continuation
        self._hints = hints
        self._bus = bus
        self._options = options
        self._keeper = keeper
        self._screen = screen
        self._counters = counters
        self._unsent = unsent
        self._held = held
        self._trigger_state = TriggerState()
        self._guard_state = GuardState()
        self._pending: list[Firing] = []
        """Firings seen that no pipeline run has handled yet."""
        self.meter = RequestMeter(working)
        """How big the working view's request is (`fits`, `excess`, `over`)."""
        self.slot = RunSlot()
        """The one run slot (a background run holds it while it works)."""

    # -- triggers ------------------------------------------------------------------------

    @property
    def due(self) -> bool:
        """Whether firings wait for a run."""
        return bool(self._pending)

    @property
    def triggers(self) -> TriggerState:
        """The trigger evaluator's state now (a new value after each change)."""
        return self._trigger_state

    def check(self, budget: int | None) -> list[Firing]:
        """Evaluate the triggers; what fires waits for the next run (and is returned)."""
        firings = self._fire(budget)
        self._pending.extend(firings)
        return firings

    def mark_boundary(self, label: str) -> None:
        """Mark the end of a task: the `boundary` trigger fires at the next check."""
        self._trigger_state = self._trigger_state.mark_boundary(label)

    async def compact(self, budget: int | None, instructions: str | None) -> PipelineRun:
        """The manual run (`compact()`): the default pipeline, whatever the triggers say."""
        self._trigger_state = self._trigger_state.request_manual()
        self._fire(budget)
        return await self.run(RunMode.MANUAL, budget, None, instructions)

    def _fire(self, budget: int | None) -> list[Firing]:
        config = self._options.triggers
        firings, self._trigger_state = evaluate(
            self._working.view, budget, self._trigger_state, config=config
        )
        tokens = self._working.total_tokens
        for firing in firings:
            self._bus.emit("trigger_fired", firing=firing)
            if firing.kind == "budget_ratio" and budget is not None:
                threshold = config.hard_ratio if firing.name == "budget_hard" else config.soft_ratio
                self._bus.emit(
                    "budget_crossed", ratio=tokens / budget, threshold=threshold, tokens=tokens
                )
        return firings

    def state(self) -> dict[str, JsonValue]:
        """`triggers`, `guards` and `pending`, as the session store keeps them."""
        return {
            "triggers": self._trigger_state.model_dump(mode="json"),
            "guards": self._guard_state.model_dump(mode="json"),
            "pending": [firing.model_dump(mode="json") for firing in self._pending],
        }

    def load(self, values: Mapping[str, Any]) -> None:
        """Take `triggers`, `guards` and `pending` from a stored state (raises as `read`)."""
        self.read(values)()

    def read(self, values: Mapping[str, Any]) -> Callable[[], None]:
        """Check `triggers`, `guards` and `pending` of a stored state; what takes them.

        Raises:
            ValueError: a value does not read (pydantic's `ValidationError`).
        """
        triggers, guards, pending = self._trigger_state, self._guard_state, self._pending
        if "triggers" in values:
            triggers = TriggerState.model_validate(values["triggers"])
        if "guards" in values:
            guards = GuardState.model_validate(values["guards"])
        if "pending" in values:
            pending = [Firing.model_validate(item) for item in values["pending"]]

        def take() -> None:
            self._trigger_state, self._guard_state, self._pending = triggers, guards, pending

        return take

    # -- runs ----------------------------------------------------------------------------

    async def run(
        self,
        mode: RunMode,
        budget: int | None,
        renderer: RequestRenderer | None = None,
        instructions: str | None = None,
    ) -> PipelineRun:
        """Handle the pending firings: the pipelines `plan_runs` picks for `mode`.

        A whole-view run stops once the request fits `compact_to` of the budget (with a
        `renderer`; a manual run goes through every stage). One run at a time: this
        waits for a run in progress.
        """
        busy = await self.slot.claim()
        rebases: list[Rebased] = []
        try:
            # One worker compacts a shared session at a time: while another holds the
            # store's lease, this call renders from what it has (`compaction_deferred`).
            with self._keeper.leased(self._lease_ttl(mode)) as held_by:
                if held_by is not None:
                    return self._defer(mode, held_by, floor=False)
                prepared = await self._prepare(mode, budget, instructions)
                if prepared is not None and prepared.deferred:
                    return PipelineRun(guard_state=self._guard_state)  # what fired stays due
                told = instructions if prepared is None else prepared.instructions
                total = await self._run_atomic(mode, budget, renderer, told, busy, rebases)
                self._take_back_dropped(rebases, total)
        except StoreConflictError as exc:
            if mode is RunMode.MANUAL:
                raise  # `compact()` was asked to compact: it says why it could not
            return self._lost_race(mode, exc, floor=False)
        finally:
            self.slot.release(busy)  # the run released it already, unless it never began
        if total.timed_out:
            self._report_timeout(total, mode, floor=False)
        self._report_done(total, mode, cancelled=False)
        if self._hooks is not None and prepared is not None:
            done = self._hooks.changes(mode, prepared, total)
            if self._continuation is not None:
                automatic = mode is not RunMode.MANUAL
                self._continuation.compacted(automatic=automatic, summarized=bool(done.summaries))
            await self._hooks.after(done)
        return total

    async def _prepare(
        self, mode: RunMode, budget: int | None, instructions: str | None
    ) -> Prepared | None:
        """Call the before-hooks on what fired (`None` without hooks)."""
        if self._hooks is None:
            return None
        return await self._hooks.before(mode, self._pending, budget, instructions)

    async def _run_atomic(
        self,
        mode: RunMode,
        budget: int | None,
        renderer: RequestRenderer | None,
        instructions: str | None,
        busy: anyio.Event,
        rebases: list[Rebased],
    ) -> PipelineRun:
        """The run in one store transaction; a race with another writer is rebased."""
        self.meter.forget()  # a run taken back may leave an old version number reused
        target = self._target(budget, self._pending)
        settings = self._settings(budget, instructions, target)
        guards = self._guards(mode)
        done = (
            None
            if mode is RunMode.MANUAL or renderer is None
            else functools.partial(self.meter.fits, renderer, target)
        )
        if done is not None and renderer is not None and target is not None:
            # A summary takes just the history that brings the request to the target.
            excess = functools.partial(self.meter.excess, renderer, target)
            over = functools.partial(self.meter.over, renderer, target)
            settings = dataclasses.replace(settings, excess=excess, over=over)
        # A run lands in the session file whole or not at all (`SessionStore.atomic`),
        # with the state it leaves: a crash between two of its proposals must not leave
        # a session that is neither before nor after it.
        with self._kept_back(), self._keeper.atomic(rebased=rebases.append):
            # Whatever fired so far is handled by this run (or found moot by it).
            handled, self._pending = [*self._pending], []
            steps = plan_runs(handled, self._options.triggers.default_pipeline, mode)
            relief = (
                None
                if mode is RunMode.MANUAL
                else relief_limit(handled, budget, mode, self._options.triggers)
            )
            spare_while = None
            if done is not None and renderer is not None and budget is not None:
                # The live error and its resolution go only for a request still over
                # the level that fired (or the budget), not one a little over the target.
                limit = budget if relief is None else relief
                spare_while = functools.partial(self.meter.fits, renderer, limit)
            total = PipelineRun(guard_state=self._guard_state)
            try:
                # `background_timeout` cuts a background run, `compaction_timeout` one
                # that a render or `compact()` waits for, the same way: nothing of the
                # stage in progress is applied (a proposal lands whole, never while its
                # processor runs), and a render goes on from what the finished stages left.
                with anyio.move_on_after(self._time_limit(mode)) as scope:
                    since = len(self._working.audit())  # what the run applies comes after
                    if relief is not None and renderer is not None and self._unsent():
                        if await self._relieve(renderer, relief, settings, guards, total, mode):
                            steps = ()
                    for step in steps:
                        await self._pipeline(
                            step.pipeline,
                            settings,
                            total,
                            done=done if step.only is None else None,
                            guards=guards,
                            mode=mode,
                            only=step.only,
                            spare_while=spare_while,
                        )
                    if steps and relief is not None and renderer is not None and target:
                        # A run only the budget asked for is sized to its target, and its
                        # stages free in steps: what they cut of the outputs for nothing
                        # comes back. (What another trigger asked for is cut on purpose.)
                        restored = refill(
                            self._working, self.meter, renderer, target, since, self._bus
                        )
                        # Counted like a stage's proposals: a rebase may drop them too.
                        self._count(total, PipelineRun(applied=restored))
                        total.refilled += restored
                total.timed_out = scope.cancelled_caught
            except anyio.get_cancelled_exc_class():
                # Cancelled from outside (the manager closed): the work is still due, and
                # the next render does it in the foreground.
                self._pending[:0] = handled
                self._report_done(total, mode, cancelled=True)
                raise
            finally:
                self.slot.release(busy)
            self._keeper.save()
        return total

    @contextlib.contextmanager
    def _kept_back(self) -> Iterator[None]:
        """On a run the store refused (and took back), the state as before the run.

        What fired is still due, and the counters and guards count no run that is not
        in the session.
        """
        pending, guards, counted = [*self._pending], self._guard_state, self._counters.state()
        try:
            yield
        except StoreConflictError:
            self._guard_state = guards
            self._counters.load(counted)
            self._pending[:0] = [f for f in pending if f not in self._pending]
            raise

    def _take_back_dropped(self, rebases: list[Rebased], total: PipelineRun) -> None:
        """Report the run's proposals a rebase dropped, and count them as refused.

        Another worker appended while the run worked; its proposals were checked again
        against the newer log and written after it, except these, which it made invalid.
        """
        dropped = [item for rebase in rebases for item in rebase.dropped]
        for proposal, reason in dropped:
            self._bus.emit("proposal_rejected", proposal=proposal, reason=reason)
        if dropped:
            self._count(total, PipelineRun(applied=-len(dropped), rejected=len(dropped)))
            self._keeper.save()

    def _defer(self, mode: RunMode, held_by: str, *, floor: bool) -> PipelineRun:
        """Leave compaction to the worker holding the lease; what fired is moot here."""
        self._pending = []
        background = mode is RunMode.BACKGROUND
        self._bus.emit("compaction_deferred", background=background, floor=floor, reason=held_by)
        return PipelineRun(guard_state=self._guard_state)

    def _lost_race(self, mode: RunMode, refused: StoreConflictError, *, floor: bool) -> PipelineRun:
        """Report a run the store refused and took back; what fired stays due."""
        reason = f"its result was not kept (what fired stays due): {refused}"
        background = mode is RunMode.BACKGROUND
        self._bus.emit("compaction_deferred", background=background, floor=floor, reason=reason)
        return PipelineRun(guard_state=self._guard_state)

    def _lease_ttl(self, mode: RunMode) -> float:
        # Longer than the run may take (its time limit), so that only a worker that
        # stalled loses its lease; a run without a limit gets ten minutes.
        limit = self._time_limit(mode)
        return (540.0 if limit is None else limit) + 60.0

    async def shrink_floor(
        self, renderer: RequestRenderer, budget: int
    ) -> tuple[bool, WorkingGraph]:
        """Truncate the outputs after the latest user turn until the request fits.

        The last resort of a render that overflows (see `floor.shrink_floor`): the
        default pipeline's truncator lends its policies (errors first for test runs,
        ...). It runs in the run slot under `compaction_timeout`, like the run before it,
        and lands in the store as one block (rebased over other workers' appends).

        When it may not write (another worker holds the lease, or the block was refused
        after its rebases), the truncation is made in a detached copy of the working
        graph instead: the request fits, and nothing is written (`compaction_deferred`).

        Returns:
            Whether the time limit cut it short (what it applied before stays), and the
            graph to render: the working graph, or that detached copy.
        """
        settings = self._settings(budget, None, budget)
        run = PipelineRun()
        busy = await self.slot.claim()
        source, timed_out = self._working, False
        try:
            try:
                with self._keeper.leased(self._lease_ttl(RunMode.OVERFLOW)) as held_by:
                    if held_by is None:
                        timed_out = await self._shrink_kept(renderer, budget, settings, run)
                    else:
                        self._defer(RunMode.OVERFLOW, held_by, floor=True)
                        source = self._working.detached()
            except StoreConflictError as exc:
                run = PipelineRun()  # the store took the block back
                self._lost_race(RunMode.OVERFLOW, exc, floor=True)
                source = self._working.detached()
            if source is not self._working:
                alone = dataclasses.replace(settings, snapshot=None)  # the copy's own view
                scratch = PipelineRun()  # the session counts none of it
                timed_out = await self._truncate(
                    source, EventBus(), renderer, budget, alone, scratch
                )
        finally:
            self.slot.release(busy)
            self._counters.count(applied=run.applied, rejected=run.rejected)
        if run.applied:
            self._keeper.save()
        if timed_out:
            run.timed_out = True
            self._report_timeout(run, RunMode.OVERFLOW, floor=True)
        return timed_out, source

    async def _shrink_kept(
        self, renderer: RequestRenderer, budget: int, settings: StageSettings, run: PipelineRun
    ) -> bool:
        """The floor's truncation in the session, one store block; whether it timed out."""
        rebases: list[Rebased] = []
        with self._keeper.atomic(rebased=rebases.append):
            timed_out = await self._truncate(
                self._working, self._bus, renderer, budget, settings, run
            )
        for proposal, reason in (item for rebase in rebases for item in rebase.dropped):
            self._bus.emit("proposal_rejected", proposal=proposal, reason=reason)
            run.applied, run.rejected = run.applied - 1, run.rejected + 1
        return timed_out

    async def _truncate(
        self,
        working: WorkingGraph,
        bus: EventBus,
        renderer: RequestRenderer,
        budget: int,
        settings: StageSettings,
        run: PipelineRun,
    ) -> bool:
        """`floor.shrink_floor` on `working` under the time limit; whether it timed out."""

        # Previews: measuring leaves the renderer's kept drops and cache marks to the
        # render that is sent.
        def measure() -> int:
            return calibrated(renderer, renderer.preview(working).tokens)

        def required() -> int:
            try:
                return renderer.preview(working, budget=budget).tokens
            except BudgetExceededError as exc:
                return exc.required

        with anyio.move_on_after(self._time_limit(RunMode.OVERFLOW)) as scope:
            await shrink_floor(
                working,
                bus,
                settings,
                measure,
                budget,
                pipeline_truncator(self._options.default_stages),
                required,
                self._unsent(),
                run=run,
            )
        return scope.cancelled_caught

    def _guards(self, mode: RunMode) -> GuardConfig:
        guards = self._options.guards
        if mode is not RunMode.OVERFLOW:
            return guards
        # The floor, the stall after little progress and the re-summarize cap spare the
        # prompt cache and the summary's fidelity when compaction is optional; when the
        # request does not fit at all, compaction is the only way to send it, and a long
        # session must be able to roll its summary again. The failure limit still holds.
        return guards.model_copy(
            update={"floor_tokens": 0, "min_progress": 0.0, "max_resummarize": 1 << 30}
        )

    def _time_limit(self, mode: RunMode) -> float | None:
        if mode is RunMode.BACKGROUND:
            return self._options.background_timeout
        return self._options.compaction_timeout

    def _report_done(self, run: PipelineRun, mode: RunMode, *, cancelled: bool) -> None:
        self._bus.emit(
            "compaction_done",
            run=run,
            background=mode is RunMode.BACKGROUND,
            timed_out=False if cancelled else run.timed_out,
            cancelled=cancelled,
        )

    def _report_timeout(self, run: PipelineRun, mode: RunMode, *, floor: bool) -> None:
        self._bus.emit(
            "compaction_timed_out",
            run=run,
            background=mode is RunMode.BACKGROUND,
            floor=floor,
            timeout=self._time_limit(mode),
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
                self._options.pipelines[name],
                self._working,
                self._bus,
                settings,
                guard_state=self._guard_state,
                run=run,
                **options,
            )
        finally:
            self._count(total, run)

    def _count(self, total: PipelineRun, run: PipelineRun) -> None:
        """Fold one pipeline's run into the guard state, the counters and the run's total."""
        if run.guard_state is not None:
            self._guard_state = total.guard_state = run.guard_state
        self._counters.count(applied=run.applied, rejected=run.rejected)
        total.applied += run.applied
        total.rejected += run.rejected
        total.stages.extend(run.stages)
        total.skipped.extend(run.skipped)

    async def _relieve(
        self,
        renderer: RequestRenderer,
        relief: int,
        settings: StageSettings,
        guards: GuardConfig,
        total: PipelineRun,
        mode: RunMode,
    ) -> bool:
        """The relief pass (`relief.relieve`) over the unsent outputs, counted in `total`."""
        run = functools.partial(
            self._pipeline,
            self._options.triggers.default_pipeline,
            total=total,
            mode=mode,  # an overflow's relief must compact too (the cost guard lets it)
        )
        return await relieve(
            self.meter,
            renderer,
            relief,
            settings,
            guards,
            run=run,
            spared=live_outputs(self._working.view),
            unsent=self._unsent(),
        )

    def _target(self, budget: int | None, firings: Sequence[Firing] = ()) -> int | None:
        """The size a whole-view run compacts down to: `compact_to` of the budget.

        Compact in one batch down to the low-water mark, not just under the budget, so
        that the following turns fit without another rewrite of the prefix. A budget
        level that fired below the mark (a soft ratio under `compact_to`) is aimed under
        instead, at its rearm point: a run sized to stop at the mark would otherwise
        free nothing for it, or leave the level crossed.
        """
        if budget is None:
            return None
        config = self._options.triggers
        ratio = self._options.compact_to
        levels = {"budget_soft": config.soft_ratio, "budget_hard": config.hard_ratio}
        for firing in firings:
            level = levels.get(firing.name)
            if firing.kind == "budget_ratio" and level is not None and level < ratio:
                ratio = max(level - config.hysteresis, 0.0)
        return max(1, int(budget * ratio))

    def _settings(
        self, budget: int | None, instructions: str | None, target: int | None
    ) -> StageSettings:
        """What the stages of one run share; each takes its view from the screen."""
        return StageSettings(
            budget,
            self._options.summarizer,
            instructions,
            self._options.clock,
            target=target,
            snapshot=self._screen.snapshot,
            held=self._held(self._working.view.turns),
            expand_hints=self._options.expand_hints if self._hints is None else self._hints(budget),
            unsent=self._unsent(),
        )
