"""After a compaction: the auto-continue line, and the latest user turn replayed.

Seed 004's two answers to "the model lost its place":

- **auto-continue**: after a compaction the engine started on its own (a trigger, an
  overflow; not the caller's `compact()`) that summarized history (a run that only
  masked or cut tool outputs leaves the conversation in place), the next request ends
  with a short notice saying the history was compacted and the task goes on. The
  notice then stays where it was first sent, after the same unit, until the next
  compaction that summarizes: every later request extends the one that carried it, so
  the provider's prompt cache keeps serving that prefix (dropped, the notice would
  change the message it was merged into, and the cache would miss from there on). A
  manual compaction waits for the caller's next word instead.
- **replay**: when the latest user turn is no longer in the request because a summary
  stands for it (one this engine made, or a provider's own compaction sent back to a
  provider that drops what it stands for; not a compaction imported with a transcript,
  see `_replay_of`), and the
  model has not answered it yet (no assistant turn without tool calls came after it),
  every request ends with that turn again, verbatim, until the model answers it or a
  newer user turn arrives, so the model still reads the request it is working on.

Both are added at render time to a read-only view over the working graph (`_Extended`),
as user-role nodes (the replay at its end, the notice after its unit): nothing is
written to the record or the session store, and the renderer places them as any user
turn (merged with a user neighbour in the formats that alternate roles), counted inside
the budget.
"""

from __future__ import annotations

from collections.abc import Sequence

from context_graph.formats.wires import WIRES
from context_graph.graph.anchors import unit_kind
from context_graph.graph.content import TextPart
from context_graph.graph.context_graph import ContextGraph
from context_graph.graph.nodes import Node, SummaryNode, UserNode
from context_graph.graph.units import Unit
from context_graph.render import RenderResult
from context_graph.render.turns import RenderSource
from context_graph.tokens.counting import ProviderFormat
from orchestrator.bus import EventBus
from orchestrator.working import WorkingGraph
from orchestrator.working.overlay import Overlay

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
    """A view with nodes of its own after its last unit (a `RenderSource`).

    `placed` is `(unit head, node)`: that node goes right after that unit instead, when
    the unit is in the view (an edit that replaced it leaves the node out).
    """

    def __init__(
        self,
        view: RenderSource,
        extra: Sequence[Node],
        placed: tuple[str, Node] | None = None,
    ) -> None:
        self._view = view
        nodes = [*([placed[1]] if placed is not None else []), *extra]
        self._extra = {node.id: node for node in nodes}
        self._units = tuple(Unit(node.id, unit_kind(node), (node.id,)) for node in extra)
        self._placed = placed
        self._version = hash((view.version, "continuation", *self._extra, placed and placed[0]))

    @property
    def added(self) -> tuple[str, ...]:
        """The ids of the nodes added after the view's units."""
        return tuple(self._extra)

    @property
    def version(self) -> int:
        """Another version than the view's: the renderer caches by it."""
        return self._version

    def units(self) -> tuple[Unit, ...]:
        """The view's units with the placed node after its unit, then one unit per node."""
        units = self._view.units()
        if self._placed is None:
            return (*units, *self._units)
        after, node = self._placed
        own = Unit(node.id, unit_kind(node), (node.id,))
        index = next((i for i, unit in enumerate(units) if unit.head == after), None)
        if index is None:
            return (*units, *self._units)
        return (*units[: index + 1], own, *units[index + 1 :], *self._units)

    @property
    def last_unit(self) -> str | None:
        """The head of the view's own last unit."""
        units = self._view.units()
        return units[-1].head if units else None

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
        self._after: str | None = None
        """The unit the notice was first sent after, while it stays there."""
        self._artifacts = _Artifacts()

    @property
    def due(self) -> bool:
        """Whether the next request carries the auto-continue line."""
        return self._due

    def compacted(self, *, automatic: bool, summarized: bool) -> None:
        """Note a finished run: one the engine started that summarized history is announced.

        A run that only masked or cut tool outputs left the conversation in place: the
        model has not lost it, and nothing is said.
        """
        if summarized:
            self._after = None  # the history it followed was rewritten
        if automatic and summarized and self._enabled:
            self._due = True
            self._sent += 1

    def source(self, graph: WorkingGraph, fmt: ProviderFormat) -> RenderSource:
        """What to render for `graph` in `fmt`: it, or it with the nodes added at its end."""
        extra: list[Node] = []
        replayed = _replay_of(graph, fmt, self._artifacts)
        if replayed is not None:
            extra.append(replayed)
        notice = UserNode(
            id=f"{_CONTINUE}{self._sent}",
            content=(TextPart(text=AUTO_CONTINUE_TEXT),),
            notice=True,
        )
        placed = None
        if self._due:
            extra.append(notice)
        elif self._after is not None:
            placed = (self._after, notice)
        if not extra and placed is None:
            return graph
        return _Extended(graph, extra, placed)

    def rendered(self, fmt: ProviderFormat, source: RenderSource, result: RenderResult) -> None:
        """Report what the request carried; the auto-continue line is spent."""
        if not isinstance(source, _Extended):
            return
        for node_id in source.added:
            if node_id in result.dropped:
                continue
            if node_id.startswith(_CONTINUE) and self._due:
                self._due = False
                self._after = source.last_unit  # where it stays from now on
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
    for unit in pristine.units_newest_first():
        if unit.kind == "assistant" and len(unit.node_ids) == 1:
            return None
        if unit.kind == "user":
            node = pristine[unit.head]
            return node if isinstance(node, UserNode) else None
    return None


def _replay_of(
    graph: WorkingGraph, fmt: ProviderFormat, found: _Artifacts | None = None
) -> UserNode | None:
    """A copy of the latest user turn when a summary takes it out of the `fmt` request.

    Two summaries do: one this engine made that took the turn in, and a provider's own
    compaction sent back to it when that provider drops what the artifact stands for
    (`NativeArtifact.keeps_user_turns` false; where it is true the renderer sends the
    user's messages beside the artifact). A compaction summary imported with a
    transcript does not count: the harness
    that wrote it carried the agent on itself, as the transcript shows.

    `found`: the index of the nodes it looks among, kept from render to render (read
    afresh when not given: the same answer).
    """
    latest = _latest_user(graph)
    if latest is None:
        return None
    found = _Artifacts() if found is None else found
    if graph.is_current(latest.id):
        native = WIRES[fmt].native
        if native is None or native.keeps_user_turns:
            return None
        # A native block may be shown as an edited copy (redacted): what it stands
        # for is what its pristine roots stand for.
        hidden = any(
            latest.id in graph.pristine.covered(root)
            for i in found.natives(graph, fmt)
            for root in graph.roots(i)
        )
        return _copy(latest) if hidden else None
    derived = found.derived(graph)
    if any(graph.roots(i) == (latest.id,) for i in derived):
        return None  # a shortened copy of it is in the view
    if not any(latest.id in graph.roots(i) for i in derived):
        return None  # no summary of this engine's stands for it
    return _copy(latest)


class _Artifacts:
    """The nodes `_replay_of` looks among, kept as the record and the applied edits grow.

    It asks which nodes of the view are a provider's compaction artifacts, and which are
    not pristine. Reading every node of the view for that on each render cost a
    100k-token session more than the rest of its render. A node of the view is a
    pristine one or one an applied edit added (`Overlay.derived`), and only a summary
    carries an artifact: so this keeps each pristine summary's provider once read (a
    pristine node never changes), and, for the overlay of the last render (immutable:
    applying a proposal makes a new one), its derived nodes and their providers. Each
    render then asks the view only whether those nodes are in it, not for every node.
    """

    def __init__(self) -> None:
        self._pristine: ContextGraph | None = None
        self._providers: dict[str, str | None] = {}
        """Each pristine summary's artifact provider (`None`: not an artifact)."""
        self._overlay: Overlay | None = None
        self._derived: tuple[tuple[str, str | None], ...] = ()
        """The overlay's derived nodes that are not pristine, with their provider."""

    def natives(self, graph: WorkingGraph, fmt: ProviderFormat) -> list[str]:
        """The nodes of the view that are compaction artifacts of `fmt`."""
        overlay = self._read(graph)
        providers = self._providers
        found = []
        for node_id in graph.pristine.by_kind("summary"):
            if node_id not in providers:
                providers[node_id] = _provider(graph.pristine[node_id])
            provider = providers[node_id]
            # The view reads an id through the overlay first: an edit's node wins.
            if provider == fmt and overlay.node(node_id) is None and graph.is_current(node_id):
                found.append(node_id)
        found += (i for i, p in self._derived if p == fmt and graph.is_current(i))
        return found

    def derived(self, graph: WorkingGraph) -> list[str]:
        """The nodes of the view that are not in the pristine record."""
        self._read(graph)
        return [i for i, _ in self._derived if graph.is_current(i)]

    def _read(self, graph: WorkingGraph) -> Overlay:
        """Bring the index up to `graph`: read its overlay's nodes when it is a new one."""
        pristine, overlay = graph.pristine, graph.view.overlay
        if pristine is not self._pristine:
            self._pristine, self._providers, self._overlay = pristine, {}, None
        if overlay is not self._overlay:
            self._overlay = overlay
            self._derived = tuple(
                (i, _provider(node))
                for i, node in overlay.derived.items()
                if pristine.get(i) is None
            )
        return overlay


def _provider(node: Node) -> str | None:
    """The provider a node is a compaction artifact of, if it is one."""
    native = node.native if isinstance(node, SummaryNode) else None
    return None if native is None else str(native.provider)


def _copy(latest: UserNode) -> UserNode:
    return latest.model_copy(update={"id": f"{latest.id}{_REPLAY}", "seq": None})
