"""The orchestrator: when and in what order processors run, and how edits land safely.

`ContextManager` is the one object an agent loop holds: it records events, compacts the
double-buffered working graph (`WorkingGraph`) through checked proposals, and renders.
Exported here: the manager and its configuration (its `Policy`, triggers, guards), what an
observer receives (the event bus, its signals and their payloads), the `SessionStore`
protocol with its SQLite implementation, and `replay`. The command-line tool is
`orchestrator.cli`; docs/api.md lists the public names by job. Any other name is
internal: importable from its own module, free to move.
"""

from __future__ import annotations

#: Marks this `__init__.py` as context-graph's (see `orchestrator._own`): a same-named package
#: of another distribution, installed into the same folder, replaces the file and the mark.
__distribution__ = "context-graph"

# First: names a module that shadows `processors` or a package that replaced ours, before an
# import below fails far from the cause.
import orchestrator._own  # noqa: F401
from orchestrator.bus import SIGNALS, EventBus, RecordedEvent, Recorder
from orchestrator.compaction.guards import GuardConfig
from orchestrator.compaction.pipeline import PipelineRun
from orchestrator.compaction.triggers import Firing, TriggerConfig
from orchestrator.manager import ContextManager, ManagerStats, default_pipeline
from orchestrator.persistence.protocol import RestoredSession, SessionStore
from orchestrator.persistence.sqlite.store import SQLiteStore
from orchestrator.policy import POLICIES, Policy, StageConfig, SummarizerConfig, get_policy
from orchestrator.replay import CallReport, ReplayReport, replay
from orchestrator.working import AuditEntry, WorkingGraph, WorkingView
from orchestrator.working.invariants import RULES as INVARIANT_RULES

__all__ = [
    "INVARIANT_RULES",
    "POLICIES",
    "SIGNALS",
    "AuditEntry",
    "CallReport",
    "ContextManager",
    "EventBus",
    "Firing",
    "GuardConfig",
    "ManagerStats",
    "PipelineRun",
    "Policy",
    "RecordedEvent",
    "Recorder",
    "ReplayReport",
    "RestoredSession",
    "SQLiteStore",
    "SessionStore",
    "StageConfig",
    "SummarizerConfig",
    "TriggerConfig",
    "WorkingGraph",
    "WorkingView",
    "default_pipeline",
    "get_policy",
    "replay",
]
