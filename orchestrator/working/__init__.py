"""The working graph: the double-buffered view the model is shown.

It holds the overlay of applied edits over the pristine record and checks every proposal
against the invariants.
"""

from __future__ import annotations

from orchestrator.working.buffer import AuditEntry, WorkingGraph, WorkingView

__all__ = ["AuditEntry", "WorkingGraph", "WorkingView"]
