"""The orchestrator: when and in what order processors run, and how edits land safely.

So far: the double-buffered working graph (`WorkingGraph`), the invariant checker every
proposal passes before it is applied, the trigger evaluator, the event bus, and the
command-line tool. The `ContextManager` that ties them together comes next.
"""

from __future__ import annotations

from orchestrator.buffer import AuditEntry, Overlay, WorkingGraph, WorkingView
from orchestrator.bus import SIGNALS, EventBus, RecordedEvent, Recorder
from orchestrator.invariants import RULES as INVARIANT_RULES
from orchestrator.invariants import check_proposal, enforce
from orchestrator.triggers import Firing, TriggerConfig, TriggerState, evaluate

__all__ = [
    "INVARIANT_RULES",
    "SIGNALS",
    "AuditEntry",
    "EventBus",
    "Firing",
    "Overlay",
    "RecordedEvent",
    "Recorder",
    "TriggerConfig",
    "TriggerState",
    "WorkingGraph",
    "WorkingView",
    "check_proposal",
    "enforce",
    "evaluate",
]
