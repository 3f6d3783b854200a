"""The relief pass: compact what the model has not seen yet, before rewriting the history.

A budget level fires (or the request overflows) because of what arrived since the last
request, say one large tool output. Shrinking just that new material leaves every
message already sent unchanged, so the provider's prompt cache still holds the prefix;
a whole-view run rewrites it. So a run that only budget levels of the default pipeline
asked for first runs the default pipeline on the unsent outputs (`relieve`), and is over
when the request is back under the lowest level that fired (`relief_limit`).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Awaitable, Callable, Sequence

from orchestrator.compaction.guards import GuardConfig
from orchestrator.compaction.meter import RequestMeter
from orchestrator.compaction.pipeline import StageSettings
from orchestrator.compaction.plan import RunMode
from orchestrator.compaction.renderers import RequestRenderer
from orchestrator.compaction.triggers import Firing, TriggerConfig

__all__ = ["PassRunner", "relief_limit", "relieve"]

#: Runs the default pipeline with these settings, folding what it did into the run's
#: total: `(settings, *, done, guards, only)`.
PassRunner = Callable[..., Awaitable[None]]


def relief_limit(
    handled: Sequence[Firing], budget: int | None, mode: RunMode, config: TriggerConfig
) -> int | None:
    """The size under which compacting what the model has not seen yet is enough.

    The lowest level that fired (the hard level, or the budget, for an overflow), when
    only budget levels of the default pipeline fired. `None`: no such pre-pass (other
    firings, no budget).
    """
    if budget is None:
        return None
    if any(f.kind != "budget_ratio" or f.pipeline != config.default_pipeline for f in handled):
        return None
    levels = [config.hard_ratio if f.name == "budget_hard" else config.soft_ratio for f in handled]
    if mode is RunMode.OVERFLOW and not handled:
        levels.append(config.hard_ratio)
    ratio = min((level for level in levels if level is not None), default=1.0)
    return int(budget * min(ratio, 1.0))


async def relieve(
    meter: RequestMeter,
    renderer: RequestRenderer,
    relief: int,
    settings: StageSettings,
    guards: GuardConfig,
    *,
    run: PassRunner,
    spared: frozenset[str],
    unsent: frozenset[str],
) -> bool:
    """Run the default pipeline on the `unsent` outputs; whether the request fits `relief`.

    Guarded and recorded like any run: a stage that freed next to nothing from the
    new outputs stalls, so a whole-view run after it goes on to the stages that can
    still free something (the summary) instead of rewriting old outputs for little,
    once more per turn.

    With the cost guard (`GuardConfig.cost_aware`) the pass goes on down to the run's
    low-water mark (`settings.target`), not just under `relief`: its edits keep every
    message already sent, so going deeper rewrites nothing cached and the freed
    tokens are never written to the cache nor read from it (`cost_guard`), and it
    puts off the next compaction, which rewrites the cached history. It is still
    over once the request fits `relief`.

    `spared` are the live error and its resolution (`recency.live_outputs`): what the
    agent acts on next. When one of them is the new material, the whole-view run frees
    the room from older history instead.
    """
    goal = relief
    if guards.cost_aware and settings.target is not None:
        goal = min(relief, settings.target)
    # Lowest priority and oldest first, only as much as the goal asks for.
    settings = dataclasses.replace(
        settings,
        excess=functools.partial(meter.excess, renderer, goal),
        # A cut is sized to the low-water mark, not to the level that fired: cutting
        # an output no request carried costs no cache, and a request left just under
        # the level would fire it again at the next output.
        over=functools.partial(
            meter.over, renderer, goal if settings.target is None else settings.target
        ),
        # Set here, not only by `run_pipeline`'s first phase: this pass never cuts
        # them, also in the phase that would (a whole-view run does that instead).
        spared=spared,
    )
    done = functools.partial(meter.fits, renderer, goal)
    await run(settings, done=done, guards=guards, only=unsent)
    return meter.fits(renderer, relief)
