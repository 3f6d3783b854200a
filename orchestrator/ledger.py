"""`CallLedger`: what the model was sent, and what the provider said it used.

The manager keeps it: an ingest adds the new nodes to the unsent ones and a render
clears them (compaction reads them, to shrink what arrived since the last request
first and to keep it whole on the floor), the last request is what `report_usage`
calibrates against, and each call's usage is added to the session's totals.

Its store keys (`StateOwner`) are `sent`, the number of pristine nodes the last request
covered (the nodes ingested after it are the unsent ones, so that holds after a crash
too: every ingested batch is journaled), and `usage`, handed over once a call's usage
was recorded.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from pydantic import JsonValue

from context_graph.graph.context_graph import ContextGraph
from context_graph.render import RenderResult
from context_graph.tokens.usage import Usage, UsageTotals
from orchestrator.persistence import state_values

__all__ = ["CallLedger"]


class CallLedger:
    """The nodes not sent yet, the last request, and the session's usage.

    Args:
        raw: The pristine record (what was sent is counted in its nodes).
    """

    __slots__ = ("_beside", "_kept_usage", "_last", "_raw", "_timed_out", "_unsent", "_usage")

    def __init__(self, raw: ContextGraph) -> None:
        self._raw = raw
        # A set, not a frozenset: a session may ingest many batches before it renders.
        self._unsent: set[str] = set()
        self._last: RenderResult | None = None
        self._beside = 0
        self._timed_out = False
        self._usage = UsageTotals()
        self._kept_usage = False

    @property
    def unsent(self) -> frozenset[str]:
        """Nodes ingested since the last request was rendered: the model has not seen them."""
        return frozenset(self._unsent)

    @property
    def last(self) -> RenderResult | None:
        """The last rendered request (`None` before the first; not stored)."""
        return self._last

    @property
    def last_beside(self) -> int:
        """The tokens the last request carried beside its render (`render(sent_beside=)`)."""
        return self._beside

    @property
    def last_timed_out(self) -> bool:
        """A time limit cut short the compaction of the last render (not stored)."""
        return self._timed_out

    @property
    def usage(self) -> UsageTotals:
        """The provider's usage of the session's calls, summed."""
        return self._usage

    def arrived(self, node_ids: Iterable[str]) -> None:
        """New nodes are in the record: unsent until a request carries them."""
        self._unsent.update(node_ids)

    def rendered(self, result: RenderResult, *, timed_out: bool, beside: int = 0) -> None:
        """A request was rendered: it carries every node so far, and `beside` tokens more."""
        self._last, self._timed_out, self._beside = result, timed_out, beside
        self._unsent = set()

    def record(self, usage: Usage) -> UsageTotals:
        """Add one call's usage to the session's; the new totals."""
        self._usage = self._usage.add(usage)
        return self._usage

    def state(self) -> dict[str, JsonValue]:
        """`sent`, and `usage` once a call's usage was recorded."""
        values: dict[str, JsonValue] = {"sent": {"nodes": self._pristine() - len(self._unsent)}}
        if self._usage.calls or self._kept_usage:
            values["usage"] = self._usage.model_dump(mode="json")
        return values

    def load(self, values: Mapping[str, Any]) -> None:
        """Take `sent` and `usage` from a stored state (raises as `read`)."""
        self.read(values)()

    def read(self, values: Mapping[str, Any]) -> Callable[[], None]:
        """Check `sent` and `usage` of a stored state; what takes them (`StateOwner.read`).

        Raises:
            ValueError: `sent` counts more nodes than the record holds, or a value does
                not read.
        """
        unsent = self._unsent
        if "sent" in values:
            stored = state_values.mapping(values["sent"], "sent")
            sent = state_values.count(stored["nodes"], "sent.nodes")
            if not 0 <= sent <= self._pristine():
                msg = f"`sent` is {sent}, but the record has {self._pristine()} nodes"
                raise ValueError(msg)
            derived = set(self._raw.derived())
            pristine = [node.id for node in self._raw if node.id not in derived]
            unsent = set(pristine[sent:])
        usage = self._usage
        if "usage" in values:
            usage = UsageTotals.model_validate(values["usage"])
        kept = self._kept_usage or "usage" in values

        def take() -> None:
            self._unsent, self._usage, self._kept_usage = unsent, usage, kept

        return take

    def _pristine(self) -> int:
        return len(self._raw) - len(self._raw.derived())
