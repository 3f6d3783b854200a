"""After a compaction: the auto-continue line, and the latest user turn replayed.

Seed 004's two answers to "the model lost its place":

- **auto-continue**: after a compaction the engine started on its own (a trigger, an
  overflow; not the caller's `compact()`) that summarized history (a run that only
  masked or cut tool outputs leaves the conversation in place), the next request ends
  with a short notice saying the history was compacted and the task goes on. Once: the
  request after it is back to the view alone. A manual compaction waits for the
  caller's next word instead.
- **replay**: when the latest user turn is no longer in the request because a summary
  stands for it (one this engine made, or Anthropic's own compaction sent back to
  Anthropic; not a compaction imported with a transcript, see `_replay_of`), and the
  model has not answered it yet (no assistant turn without tool calls came after it),
  every request ends with that turn again, verbatim, until the model answers it or a
  newer user turn arrives, so the model still reads the request it is working on.

Both are added at render time to a read-only view over the working graph (`_Extended`),
as user-role nodes at its end: nothing is written to the record or the session store,
and the renderer places them as any user turn (merged with a user neighbour in the
formats that alternate roles), counted inside the budget.
"""

from __future__ import annotations

from collections.abc import Sequence

from context_graph.graph.anchors import unit_kind
from context_graph.graph.content import TextPart
from context_graph.graph.nodes import Node, UserNode
from context_graph.graph.units import Unit
from context_graph.render import RenderResult
from context_graph.render.turns import RenderSource
from context_graph.tokens.counting import ProviderFormat
from orchestrator.bus import EventBus
from orchestrator.working import WorkingGraph

__all__ = ["AUTO_CONTINUE_TEXT", "Continuation"]

_REPLAY = "~replay"
_CONTINUE = "auto-continue~"

#: What the model reads after an automatic compaction.
AUTO_CONTINUE_TEXT = (
    "[Context note: the earlier conversation was compacted automatically to fit the "
    "context window; a summary stands in for it above. Carry on with the task in "
    "progress from where it stopped. If the next step is unclear, ask the user.]"
)


class _Extended:
    """A view with nodes of its own after its last unit (a `RenderSource`)."""

    def __init__(self, view: RenderSource, extra: Sequence[Node]) -> None:
        self._view = view
        self._extra = {node.id: node for node in extra}
        self._units = tuple(Unit(node.id, unit_kind(node), (node.id,)) for node in extra)
        self._version = hash((view.version, "continuation", *self._extra))

    @property
    def added(self) -> tuple[str, ...]:
        """The ids of the nodes added after the view's units."""
        return tuple(self._extra)

    @property
    def version(self) -> int:
        """Another version than the view's: the renderer caches by it."""
        return self._version

    def units(self) -> tuple[Unit, ...]:
        """The view's units, then one unit per added node."""
        return (*self._view.units(), *self._units)

    def __getitem__(self, node_id: str) -> Node:
        found = self._extra.get(node_id)
        return found if found is not None else self._view[node_id]

    def answer_to(self, call_node_id: str) -> Node | None:
        return self._view.answer_to(call_node_id)

    def first_call_with_id(self, tool_call_id: str) -> str | None:
        return self._view.first_call_with_id(tool_call_id)


class Continuation:
    """Decides what a request carries after its view: the auto-continue line, a replay.

    Args:
        bus: Where `auto_continued` and `user_turn_replayed` are reported.
        enabled: Whether the auto-continue line is added at all (replay always is).
    """

    def __init__(self, bus: EventBus, *, enabled: bool = True) -> None:
        self._bus = bus
        self._enabled = enabled
        self._due = False
        self._sent = 0

    @property
    def due(self) -> bool:
        """Whether the next request carries the auto-continue line."""
        return self._due

    def compacted(self, *, automatic: bool, summarized: bool) -> None:
        """Note a finished run: one the engine started that summarized history is announced.

        A run that only masked or cut tool outputs left the conversation in place: the
        model has not lost it, and nothing is said.
        """
        if automatic and summarized and self._enabled:
            self._due = True

    def source(self, graph: WorkingGraph, fmt: ProviderFormat) -> RenderSource:
        """What to render for `graph` in `fmt`: it, or it with the nodes added at its end."""
        extra: list[Node] = []
        replayed = _replay_of(graph, fmt)
        if replayed is not None:
            extra.append(replayed)
        if self._due:
            extra.append(
                UserNode(
                    id=f"{_CONTINUE}{self._sent}",
                    content=(TextPart(text=AUTO_CONTINUE_TEXT),),
                    notice=True,
                )
            )
        return graph if not extra else _Extended(graph, extra)

    def rendered(self, fmt: ProviderFormat, source: RenderSource, result: RenderResult) -> None:
        """Report what the request carried; the auto-continue line is spent."""
        if not isinstance(source, _Extended):
            return
        for node_id in source.added:
            if node_id in result.dropped:
                continue
            if node_id.startswith(_CONTINUE):
                self._due = False
                self._sent += 1
                self._bus.emit("auto_continued", format=fmt, text=AUTO_CONTINUE_TEXT)
            else:
                original = node_id.removesuffix(_REPLAY)
                self._bus.emit("user_turn_replayed", format=fmt, node_id=original)


def _latest_user(graph: WorkingGraph) -> UserNode | None:
    """The latest user turn the record holds, while the model is still working on it.

    A notice or a withdrawn turn is not one; a turn the model answered already (an
    assistant turn with no tool call after it) needs no replay: the next request brings
    the user's next turn.
    """
    pristine = graph.pristine
    for unit in reversed(pristine.units()):
        if unit.kind == "assistant" and len(unit.node_ids) == 1:
            return None
        if unit.kind == "user":
            node = pristine[unit.head]
            return node if isinstance(node, UserNode) else None
    return None


def _replay_of(graph: WorkingGraph, fmt: ProviderFormat) -> UserNode | None:
    """A copy of the latest user turn when a summary takes it out of the `fmt` request.

    Two summaries do: one this engine made that took the turn in, and Anthropic's own
    compaction sent back to Anthropic (which drops what the block stands for; the
    Responses API's compacted window keeps the user's messages, and the renderer sends
    them). A compaction summary imported with a transcript does not count: the harness
    that wrote it carried the agent on itself, as the transcript shows.
    """
    latest = _latest_user(graph)
    if latest is None:
        return None
    ids = graph.current_ids()
    if graph.is_current(latest.id):
        if fmt != "anthropic":
            return None
        natives = (i for i in ids if _native_to(graph, i) == fmt)
        # A native block may be shown as an edited copy (redacted): what it stands
        # for is what its pristine roots stand for.
        hidden = any(
            latest.id in graph.pristine.covered(root) for i in natives for root in graph.roots(i)
        )
        return _copy(latest) if hidden else None
    derived = [i for i in ids if graph.pristine.get(i) is None]
    if any(graph.roots(i) == (latest.id,) for i in derived):
        return None  # a shortened copy of it is in the view
    if not any(latest.id in graph.roots(i) for i in derived):
        return None  # no summary of this engine's stands for it
    return _copy(latest)


def _native_to(graph: WorkingGraph, node_id: str) -> str | None:
    """The provider a node of the view is a compaction artifact of, if it is one."""
    native = getattr(graph[node_id], "native", None)
    return None if native is None else str(native.provider)


def _copy(latest: UserNode) -> UserNode:
    return latest.model_copy(update={"id": f"{latest.id}{_REPLAY}", "seq": None})
