"""The orchestrator: when and in what order processors run, and how edits land safely.

The double-buffered working graph (`WorkingGraph`), the invariant checker every proposal
passes before it is applied, the trigger evaluator, the event bus, profiles, the session
store and the command-line tool, tied together by `ContextManager`: the one object an
agent loop holds.
"""

from __future__ import annotations

#: Marks this `__init__.py` as context-graph's (see `orchestrator._own`): a same-named package
#: of another distribution, installed into the same folder, replaces the file and the mark.
__distribution__ = "context-graph"

# First: names a module that shadows `processors` or a package that replaced ours, before an
# import below fails far from the cause.
import orchestrator._own  # noqa: F401
from orchestrator.bus import SIGNALS, EventBus, RecordedEvent, Recorder
from orchestrator.compaction.guards import GuardConfig, GuardState
from orchestrator.compaction.triggers import Firing, TriggerConfig, TriggerState, evaluate
from orchestrator.manager import ContextManager, ManagerStats, default_pipeline
from orchestrator.persistence.protocol import RestoredSession, SessionStore
from orchestrator.persistence.sqlite_store import JournalEntry, SQLiteStore
from orchestrator.profiles import PROFILES, Profile, StageConfig, get_profile, load_profile
from orchestrator.replay import CallReport, ReplayReport, replay
from orchestrator.working import AuditEntry, Overlay, WorkingGraph, WorkingView
from orchestrator.working.invariants import RULES as INVARIANT_RULES
from orchestrator.working.invariants import check_proposal, enforce

__all__ = [
    "INVARIANT_RULES",
    "PROFILES",
    "SIGNALS",
    "AuditEntry",
    "CallReport",
    "ContextManager",
    "EventBus",
    "Firing",
    "GuardConfig",
    "GuardState",
    "JournalEntry",
    "ManagerStats",
    "Overlay",
    "Profile",
    "RecordedEvent",
    "Recorder",
    "ReplayReport",
    "RestoredSession",
    "SQLiteStore",
    "SessionStore",
    "StageConfig",
    "TriggerConfig",
    "TriggerState",
    "WorkingGraph",
    "WorkingView",
    "check_proposal",
    "default_pipeline",
    "enforce",
    "evaluate",
    "get_profile",
    "load_profile",
    "replay",
]
