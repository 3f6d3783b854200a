"""The orchestrator: when and in what order processors run, and how edits land safely.

So far: the double-buffered working graph (`WorkingGraph`), the invariant checker every
proposal passes before it is applied, and the command-line tool.
"""

from __future__ import annotations

from orchestrator.buffer import AuditEntry, Overlay, WorkingGraph, WorkingView
from orchestrator.invariants import RULES as INVARIANT_RULES
from orchestrator.invariants import check_proposal, enforce

__all__ = [
    "INVARIANT_RULES",
    "AuditEntry",
    "Overlay",
    "WorkingGraph",
    "WorkingView",
    "check_proposal",
    "enforce",
]
