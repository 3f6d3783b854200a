"""The working graph: the double-buffered view the model is shown.

`WorkingGraph` holds the current `WorkingView`: the pristine record read through the
`Overlay` of applied edits. Every proposal is checked against the invariants (`RULES`,
`check_proposal`, `enforce`) before it is applied, and each applied one is recorded as an
`AuditEntry`. Triggers read a view's `ViewFigures`.
"""

from __future__ import annotations

from orchestrator.working.buffer import AuditEntry, WorkingGraph
from orchestrator.working.figures import ViewFigures
from orchestrator.working.invariants import RULES, check_proposal, enforce
from orchestrator.working.overlay import Overlay
from orchestrator.working.view import WorkingView

__all__ = [
    "RULES",
    "AuditEntry",
    "Overlay",
    "ViewFigures",
    "WorkingGraph",
    "WorkingView",
    "check_proposal",
    "enforce",
]
