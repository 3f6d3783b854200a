"""Which pipelines a batch of firings runs, in what order, and on which nodes.

Node triggers name the nodes that fired: their pipeline runs on just those nodes, first
(the edits are small and aimed). Graph-level triggers (budget ratios, counts, boundaries,
manual) run their pipelines over the whole view, in the order they fired, each until the
request fits its target. A request that does not fit at all runs the default pipeline
too, last, if no firing named it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from orchestrator.compaction.triggers import Firing

__all__ = ["Step", "plan_runs"]


@dataclass(frozen=True, slots=True)
class Step:
    """One pipeline run of a plan."""

    pipeline: str
    """The pipeline's name."""
    only: frozenset[str] | None = None
    """The node ids a node trigger named; `None` for the whole view."""


def plan_runs(
    firings: Sequence[Firing], default: str, *, overflow: bool = False
) -> tuple[Step, ...]:
    """The runs that handle `firings`; the default pipeline when nothing else runs.

    Args:
        firings: What fired, in order.
        default: The name of the default pipeline.
        overflow: The request does not fit its budget: the default pipeline must run.
    """
    aimed: dict[str, set[str]] = {}
    whole: list[str] = []
    for firing in firings:
        if firing.targets:
            aimed.setdefault(firing.pipeline, set()).update(firing.targets)
        elif firing.pipeline not in whole:
            whole.append(firing.pipeline)
    if default not in whole and (overflow or not (aimed or whole)):
        whole.append(default)
    steps = [Step(name, frozenset(ids)) for name, ids in aimed.items()]
    steps.extend(Step(name) for name in whole)
    return tuple(steps)
