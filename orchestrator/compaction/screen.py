"""`SecretScreen`: every view a processor or a render gets is scanned for secrets first.

With `redact_secrets`, each node of the working view not scanned yet goes through the
session's `Redactor` before anyone reads it: the stages of a run take their views from
`SecretScreen.snapshot` (`StageSettings.snapshot`), and the manager calls it before and
after the compaction of a render. The secrets found so far in the session are redacted
in every new node too, where a later turn repeats one without what gave it away. Without
a redactor a snapshot is just a snapshot.

The ids already scanned are the screen's state in the session store (`scanned`), so a
resumed session does not scan its record again.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from pydantic import JsonValue

from context_graph.errors import InvariantViolation
from context_graph.graph.nodes import Node
from orchestrator.bus import EventBus
from orchestrator.counters import ProposalCounters
from orchestrator.persistence import state_values
from orchestrator.working import WorkingGraph, WorkingView
from processors.base import ProcessorContext, Redactor, run_processor

__all__ = ["SecretScreen"]

#: Redaction passes before giving up on a view that changes under each one: a pass
#: redacts, the next finds nothing new (or redacts what arrived meanwhile).
_REDACT_ATTEMPTS = 5


class SecretScreen:
    """Hands out frozen views in which every node was scanned for secrets.

    Args:
        working: The working graph the redactions are applied to.
        bus: Where each redaction is reported, as for any proposal.
        redactor: The redactor; `None` turns the screen off.
        counters: Counts each redaction applied.
    """

    def __init__(
        self,
        working: WorkingGraph,
        bus: EventBus,
        redactor: Redactor | None,
        counters: ProposalCounters,
    ) -> None:
        self._working = working
        self._bus = bus
        self._redactor = redactor
        self._counters = counters
        self._scanned: set[str] = set()
        # The session's secrets (text -> type), kept in memory only, never in the store;
        # learned from the pristine record at the first scan (a restored session too).
        self._known: dict[str, str] | None = None

    async def snapshot(self) -> WorkingView:
        """A frozen view in which every node was scanned for secrets (with a redactor).

        Every processor of a run reads the view this returns, so a node that arrived
        while an earlier stage awaited a model, or while a render waited for the run
        slot, is redacted before any summarizer sees it. The view is returned only once
        a check with no await before the freeze finds nothing unscanned in it.

        Raises:
            RuntimeError: the view kept changing while it was redacted.
        """
        redactor = self._redactor
        if redactor is None:
            return self._working.snapshot()
        scanned = self._scanned
        for _attempt in range(_REDACT_ATTEMPTS):
            snapshot = self._working.snapshot()
            ids = snapshot.current_ids()
            if scanned.issuperset(ids):
                return snapshot  # the usual case, checked without a loop over the view
            new = [snapshot[i] for i in ids if i not in scanned]
            ctx = ProcessorContext(graph=snapshot, tokens=self._working.token_cache)
            proposal = await run_processor(self._knowing(redactor, new), new, ctx)
            if proposal.empty:
                scanned.update(node.id for node in new)
                continue  # scan again: nodes may have arrived while the redactor ran
            self._bus.emit("proposal_made", proposal=proposal)
            try:
                entry = self._working.apply(proposal)
            except InvariantViolation as exc:
                # A compaction replaced a target meanwhile: scan the new view again.
                self._bus.emit("proposal_rejected", proposal=proposal, reason=str(exc))
                continue
            self._counters.count(applied=1)
            self._bus.emit("proposal_applied", proposal=proposal, entry=entry)
            scanned.update(node.id for node in new)
            scanned.update(entry.added)
        msg = "redact_secrets: the view kept changing while it was being redacted"
        raise RuntimeError(msg)

    def state(self) -> dict[str, JsonValue]:
        """`scanned`: the ids of the nodes scanned for secrets, sorted."""
        return {"scanned": list[JsonValue](sorted(self._scanned))}

    def read(self, values: Mapping[str, Any]) -> Callable[[], None]:
        """Check `scanned` of a stored state; what takes it (see `StateOwner.read`)."""
        if "scanned" not in values:
            return lambda: None
        scanned = set(state_values.texts(values["scanned"], "scanned"))

        def take() -> None:
            self._scanned = scanned

        return take

    def load(self, values: Mapping[str, Any]) -> None:
        """Take `scanned` from a stored state."""
        self.read(values)()

    def _knowing(self, redactor: Redactor, new: list[Node]) -> Redactor:
        """`redactor` knowing every secret of the session so far, `new`'s included."""
        if self._known is None:
            fresh = {node.id for node in new}
            before = [node for node in self._working.pristine if node.id not in fresh]
            self._known = redactor.secrets(before)
        for secret, kind in redactor.secrets(new).items():
            self._known.setdefault(secret, kind)
        return redactor.knowing(self._known)
