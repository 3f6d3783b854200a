"""Compaction: triggers and guards (when), the plan and pipeline (what), floor, background.

The floor is the last-resort truncation; the background runner compacts while the agent
goes on.
"""

from __future__ import annotations

from orchestrator.compaction.guards import GuardConfig, GuardState
from orchestrator.compaction.pipeline import PipelineRun
from orchestrator.compaction.plan import RunMode
from orchestrator.compaction.triggers import Firing, TriggerConfig, TriggerState

__all__ = [
    "Firing",
    "GuardConfig",
    "GuardState",
    "PipelineRun",
    "RunMode",
    "TriggerConfig",
    "TriggerState",
]
