"""`ProposalCounters`: how many proposals the session applied and refused (`stats()`).

Four collaborators apply proposals (the compactor, the redaction screen, the withdrawer
and `context_expand`'s expander), so they share this one tally instead of each keeping a
count the keeper would have to add up: a compaction run the store takes back restores
the tally as it was before the run (`Compactor`), redactions made during the run
included, since the store took those back with it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from pydantic import JsonValue

from orchestrator.persistence import state_values

__all__ = ["ProposalCounters"]


class ProposalCounters:
    """Proposals applied, and refused (plus processor runs that failed), since the start.

    Its store key is `counters` (`StateOwner`).
    """

    __slots__ = ("_applied", "_rejected")

    def __init__(self) -> None:
        self._applied = 0
        self._rejected = 0

    @property
    def applied(self) -> int:
        """Proposals applied since the session began."""
        return self._applied

    @property
    def rejected(self) -> int:
        """Proposals refused, plus processor runs that failed."""
        return self._rejected

    def count(self, *, applied: int = 0, rejected: int = 0) -> None:
        """Add to the counts (a proposal a rebase dropped moves from applied to refused)."""
        self._applied += applied
        self._rejected += rejected

    def state(self) -> dict[str, JsonValue]:
        """`counters`: both counts."""
        return {"counters": {"applied": self._applied, "rejected": self._rejected}}

    def read(self, values: Mapping[str, Any]) -> Callable[[], None]:
        """Check `counters` of a stored state; what takes it (see `StateOwner.read`)."""
        if "counters" not in values:
            return lambda: None
        counters = state_values.mapping(values["counters"], "counters")
        applied = state_values.count(counters["applied"], "counters.applied")
        rejected = state_values.count(counters["rejected"], "counters.rejected")

        def take() -> None:
            self._applied, self._rejected = applied, rejected

        return take

    def load(self, values: Mapping[str, Any]) -> None:
        """Take `counters` from a stored state."""
        self.read(values)()
