"""Why a compaction runs (`RunMode`), and which pipelines it runs, in what order, on which nodes.

Node triggers name the nodes that fired: their pipeline runs on just those nodes, first
(the edits are small and aimed). Graph-level triggers (budget ratios, counts, boundaries,
manual) run their pipelines over the whole view, in the order they fired, each until the
request fits its target. A request that does not fit at all, and a manual run, run the
default pipeline too, last, if no firing named it.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass

from orchestrator.compaction.triggers import Firing

__all__ = ["RunMode", "Step", "plan_runs"]


class RunMode(enum.Enum):
    """Why a compaction runs: what it must run, which guards hold, which time limit cuts it."""

    MANUAL = "manual"
    """`compact()`: every stage of the default pipeline, every guard bypassed (the
    outcomes still recorded); under `compaction_timeout`."""
    OVERFLOW = "overflow"
    """A render whose request does not fit its budget: the default pipeline must run,
    and the guards that spare the prompt cache (the floor, the stall, the re-summarize
    cap) are lifted; under `compaction_timeout`."""
    SOFT = "soft"
    """A trigger asked while the request still fits, and the render waits for the run
    (outside `async with`); every guard holds; under `compaction_timeout`."""
    BACKGROUND = "background"
    """As `SOFT`, in a task of its own inside `async with`; under `background_timeout`."""


@dataclass(frozen=True, slots=True)
class Step:
    """One pipeline run of a plan."""

    pipeline: str
    """The pipeline's name."""
    only: frozenset[str] | None = None
    """The node ids a node trigger named; `None` for the whole view."""


def plan_runs(
    firings: Sequence[Firing], default: str, mode: RunMode = RunMode.SOFT
) -> tuple[Step, ...]:
    """The runs that handle `firings`; the default pipeline when nothing else runs.

    Args:
        firings: What fired, in order.
        default: The name of the default pipeline.
        mode: Why the run happens; `MANUAL` and `OVERFLOW` must run the default pipeline.
    """
    must = mode in {RunMode.MANUAL, RunMode.OVERFLOW}
    aimed: dict[str, set[str]] = {}
    whole: list[str] = []
    for firing in firings:
        if firing.targets:
            aimed.setdefault(firing.pipeline, set()).update(firing.targets)
        elif firing.pipeline not in whole:
            whole.append(firing.pipeline)
    if default not in whole and (must or not (aimed or whole)):
        whole.append(default)
    steps = [Step(name, frozenset(ids)) for name, ids in aimed.items()]
    steps.extend(Step(name) for name in whole)
    return tuple(steps)
