"""The manager's last resort before refusing a request (see `orchestrator.compaction.floor`).

Mixed into `ContextManager`: when compaction could not bring the request under the
budget, the tool outputs in the renderer's floor are truncated to fit, as one more
checked run in the run slot, under `compaction_timeout`.
"""

from __future__ import annotations

import anyio

from context_graph.errors import BudgetExceededError
from context_graph.render import Renderer
from orchestrator.compaction.compactor import CompactionMethods
from orchestrator.compaction.floor import shrink_floor
from orchestrator.compaction.pipeline import PipelineRun
from processors.truncate import ToolOutputTruncator

__all__ = ["FloorMethods"]


class FloorMethods(CompactionMethods):
    """`_shrink_floor`; mixed into `ContextManager`."""

    async def _shrink_floor(self, renderer: Renderer, budget: int) -> bool:
        """Truncate the outputs after the latest user turn until the request fits.

        The default pipeline's truncator lends its policies (errors first for test
        runs, ...); a pipeline without one uses the default truncator. It runs under
        `compaction_timeout`, like the run before it.

        Returns:
            Whether the time limit cut it short (what it applied before stays).
        """
        base = next(
            (
                stage
                for stage in self._pipelines[self._config.default_pipeline]
                if isinstance(stage, ToolOutputTruncator)
            ),
            None,
        )

        def measure() -> int:
            return self._calibrator.apply(renderer.render(self._working).tokens)

        def required() -> int:
            try:
                return renderer.render(self._working, budget=budget).tokens
            except BudgetExceededError as exc:
                return exc.required

        settings = self._settings(budget, None, budget)
        run = PipelineRun()
        busy = await self._claim()
        try:
            with anyio.move_on_after(self._time_limit(background=False)) as scope:
                await shrink_floor(
                    self._working,
                    self._bus,
                    settings,
                    measure,
                    budget,
                    base,
                    required,
                    frozenset(self._unsent),
                    run=run,
                )
        finally:
            self._release(busy)
            self._applied += run.applied
            self._rejected += run.rejected
        run.timed_out = scope.cancelled_caught
        if run.applied:
            self._save_state()
        if run.timed_out:
            self._report_timeout(run, background=False, floor=True)
        return run.timed_out
