"""`ToolOffer`: which of the agent tools a request carries, and when it goes without them.

Every tool definition counts inside the budget, so what the agent tools cost is history
that does not fit. Two rules keep that cost where it helps:

- `context_expand` is offered from the first compaction on (nothing can be expanded
  before; a call to it in the history brings it too), and from then on in every
  request: a tool set that changes from one request to the next breaks the provider's
  prompt cache, which starts at the tools.
- The agent tools never push the floor out: when the latest turn's outputs must be cut
  for the request to fit, they are cut as far as the request needs without the agent
  tools (`lean`), and the request goes without them (`agent_tools_withheld`).
"""

from __future__ import annotations

from collections.abc import Sequence

from context_graph.graph.nodes import ToolCallNode
from context_graph.render.tools import ToolSpec
from orchestrator.agent_tools.specs import EXPAND_TOOL
from orchestrator.working import WorkingGraph

__all__ = ["ToolOffer"]


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

    def held_back(self, tools: Sequence[ToolSpec]) -> tuple[ToolSpec, ...] | None:
        """`tools` without `context_expand` while nothing was ever compacted; else `None`.

        A session that holds a call to an agent tool gets them all (some providers
        refuse a call to a tool the request does not define).

        `None` means: send `tools` as they are. Once something was compacted it stays
        `None` for the manager's life (the tool set stays the same from then on).
        """
        if self._expand_offered:
            return None
        if self.compacted() or self._ever_called():
            self._expand_offered = True
            return None
        kept = tuple(spec for spec in tools if spec.name != EXPAND_TOOL)
        return kept if len(kept) < len(tools) else None

    def compacted(self) -> bool:
        """Whether an edit ever took something out of the view that `context_expand` restores."""
        overlay = self._working.view.overlay
        # Redacted copies (`kept`) are derived too, but never restored.
        return len(overlay.derived) > len(overlay.kept) or bool(overlay.dropped or overlay.undone)

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
