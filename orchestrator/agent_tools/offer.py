"""`ToolOffer`: which of the agent tools a request carries, and when it goes without them.

Every tool definition counts inside the budget, so what the agent tools cost is history
that does not fit. Three rules keep that cost where it helps:

- `context_expand` is offered from the first request on, in every request, before
  anything is compacted: a tool set that changes from one request to the next breaks
  the provider's prompt cache, which starts at the tools, and the first compaction is
  often one that keeps every message already sent (new outputs only), whose cache a
  tool added then would lose. A call to it in the history brings it in any case.
- Not where a restore would find no room: when the budget leaves fewer than
  `MIN_ROOM` tokens beside the system prompt, the pinned notes and the first request
  (which every request keeps), `context_expand` is not offered and compacted pieces
  name no id (`hints`): the definition and the hints would take a large share of that room, and
  the expander would refuse nearly every restore. The rule reads only the budget and
  those first nodes, so it says the same at every render of a session and after it is
  reopened from its store.
- The agent tools never push the floor out: when the latest turn's outputs must be cut
  for the request to fit, they are cut as far as the request needs without the agent
  tools (`lean`), and the request goes without them (`agent_tools_withheld`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from context_graph.graph.nodes import ToolCallNode
from context_graph.render.tools import ToolSpec
from orchestrator.agent_tools.specs import EXPAND_TOOL
from orchestrator.working import WorkingGraph

__all__ = ["MIN_ROOM", "ToolOffer"]

#: Fewest tokens the budget must leave beside the system prompt, the pinned notes and
#: the first request for `context_expand` to be offered (and compacted pieces to name
#: their ids).
MIN_ROOM: Final = 1024


class ToolOffer:
    """The agent tools' part of a manager's tool set.

    Args:
        names: The agent tools the manager adds to its requests.
        working: The working graph, whose edits say whether anything can be expanded.
    """

    def __init__(self, names: tuple[str, ...], working: WorkingGraph) -> None:
        self._names = frozenset(names)
        self._working = working
        self._expand_offered = EXPAND_TOOL not in self._names
        self._seen = 0
        """The pristine record's size when `_ever_called` last read it."""
        self._scanned = 0
        """How many of its transcript nodes `_ever_called` has read."""
        self._kept = 0
        """Tokens of the system prompt, pinned notes and first request (`_kept_tokens`)."""
        self._units_read = 0
        self._first_read = False
        self._mark = working.view.pristine.unit_mark

    def held_back(
        self, tools: Sequence[ToolSpec], budget: int | None
    ) -> tuple[ToolSpec, ...] | None:
        """`tools` without `context_expand` while it is not offered; else `None`.

        It is offered when `budget` leaves room for a restore (`roomy`), from the first
        request on.

        A session that holds a call to an agent tool gets them all (some providers
        refuse a call to a tool the request does not define).

        `None` means: send `tools` as they are. Once it was `None`, it stays `None` for
        the manager's life (the tool set stays the same from then on).
        """
        if self._expand_offered:
            return None
        if self._ever_called() or self.roomy(budget):
            self._expand_offered = True
            return None
        kept = tuple(spec for spec in tools if spec.name != EXPAND_TOOL)
        return kept if len(kept) < len(tools) else None

    def hints(self, budget: int | None) -> bool:
        """Whether what a compaction under `budget` writes names the id to pass `context_expand`.

        Yes when the requests carry it, or will: the budget leaves room.
        """
        if EXPAND_TOOL not in self._names:
            return False
        return self._expand_offered or self.roomy(budget)

    def roomy(self, budget: int | None) -> bool:
        """Whether `budget` leaves `MIN_ROOM` tokens beside what every request keeps.

        That is what it keeps from the start: the system prompt, pinned notes, the first
        request (`_kept_tokens`).
        """
        return budget is None or budget - self._kept_tokens() >= MIN_ROOM

    def _kept_tokens(self) -> int:
        """Tokens of the system prompt, pinned notes and first request.

        Reads only the units that are new (all of them again after a withdrawal took
        units apart): those units are one node each and never grow.
        """
        pristine = self._working.view.pristine
        if pristine.units_reshaped_since(self._mark):
            self._kept, self._units_read, self._first_read = 0, 0, False
        self._mark = pristine.unit_mark
        new = pristine.units_from(self._units_read)
        count = pristine.token_cache.count_node
        for unit in new:
            first = unit.kind == "user" and not self._first_read
            if first or unit.kind == "system" or getattr(pristine[unit.head], "pinned", False):
                self._kept += sum(count(pristine[node_id]) for node_id in unit.node_ids)
                self._first_read = self._first_read or first
        self._units_read += len(new)
        return self._kept

    def lean(self, tools: Sequence[ToolSpec]) -> tuple[ToolSpec, ...] | None:
        """`tools` without the agent tools, when the request may go without them; else `None`.

        `None` when `tools` holds none of them, or when the view holds a call to one (a
        call to a tool the request does not define is refused by some providers).
        """
        kept = tuple(spec for spec in tools if spec.name not in self._names)
        if len(kept) == len(tools) or self.history_calls():
            return None
        return kept

    def _ever_called(self) -> bool:
        """Whether the session ever held a call to an agent tool (reads only what is new)."""
        pristine = self._working.view.pristine
        if len(pristine) == self._seen:
            return False
        self._seen = len(pristine)
        ids = pristine.transcript()
        fresh, self._scanned = ids[self._scanned :], len(ids)
        return any(self._is_call(pristine[node_id]) for node_id in fresh)

    def _is_call(self, node: object) -> bool:
        return isinstance(node, ToolCallNode) and node.name in self._names

    def history_calls(self) -> bool:
        """Whether the view holds a call to one of the agent tools."""
        view = self._working.view
        return any(self._is_call(view[node_id]) for node_id in view.current_ids())
