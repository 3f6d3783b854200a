"""`CompactionCauses`: why each applied proposal ran, heard on the manager's bus.

The audit log says what a proposal did, not what set it off. A run handles every firing
that waited for it (`trigger_fired` since the last `compaction_done`), so each proposal
applied in between is put down to those triggers by name (`budget_soft`, `size`, ...).
A compaction with no firing waiting ran because the request did not fit its budget (a
render's overflow run, or the floor's truncation after it). Redaction (`safety`) and
restores (`context_expand`, a withdrawal, a run's refill) are named as such.
"""

from __future__ import annotations

from dataclasses import dataclass

from orchestrator.bus import EventBus
from orchestrator.compaction.triggers import Firing
from orchestrator.working.buffer import AuditEntry
from processors.base import Proposal

__all__ = ["OVER_BUDGET", "Cause", "CompactionCauses"]

#: The cause of a compaction no trigger asked for.
OVER_BUDGET = "over budget"


@dataclass(frozen=True, slots=True)
class Cause:
    """What set one applied proposal off."""

    trigger: str
    """The triggers' names (`budget_hard, size`), `over budget`, `redaction` or `restore`."""
    reason: str = ""
    """The firings' own explanations, with their numbers; empty for the others."""


class CompactionCauses:
    """Listens on `bus` from now on; `of(entry)` is the cause of an applied proposal."""

    def __init__(self, bus: EventBus) -> None:
        self._waiting: list[Firing] = []
        self._causes: dict[int, Cause] = {}
        bus.connect("trigger_fired", self._fired)
        bus.connect("compaction_done", self._handled)
        bus.connect("compaction_deferred", self._deferred)
        bus.connect("proposal_applied", self._applied)

    def of(self, entry: AuditEntry) -> Cause:
        """The cause of `entry` (by its version); `unknown` for one applied before."""
        return self._causes.get(entry.version, Cause("unknown"))

    def _fired(self, sender: object, *, firing: Firing, **_: object) -> None:
        self._waiting.append(firing)

    def _handled(self, sender: object, **_: object) -> None:
        self._waiting = []  # a run takes every firing that waited

    def _deferred(self, sender: object, *, floor: bool, **_: object) -> None:
        if not floor:
            self._waiting = []  # another worker's run handles them

    def _applied(
        self, sender: object, *, proposal: Proposal, entry: AuditEntry, **_: object
    ) -> None:
        if proposal.purpose == "safety":
            cause = Cause("redaction")
        elif proposal.purpose == "restore":
            cause = Cause("restore")
        elif self._waiting:
            names = dict.fromkeys(firing.name for firing in self._waiting)
            reasons = dict.fromkeys(firing.reason for firing in self._waiting)
            cause = Cause(", ".join(names), "; ".join(reasons))
        else:
            cause = Cause(OVER_BUDGET)
        self._causes[entry.version] = cause
