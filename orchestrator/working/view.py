"""The working view: a pristine graph read through an overlay of applied edits.

The pristine `ContextGraph` is never written to; what applied edits did lives in an
immutable `Overlay` (`orchestrator.working.overlay`). A `WorkingView` pairs the two and answers
every query by reading the pristine graph through the overlay, so an event ingested
after an edit is in the view with nothing to sync.

The view's units, for each pristine unit in order:

- each member is followed through the overlay to the node that stands for it now (a
  replacement of a replacement ..., a summary, or nothing when dropped);
- members that stand as replacements keep their unit: the pristine unit with each node
  swapped for its current replacement, headed by the current head;
- members abstracted into a summary appear once, as a unit of kind `summary` holding
  only the summary node, at the place of the first unit the summary abstracts;
- a unit whose members were all dropped is left out.

A member that joined its unit after the unit was dropped or abstracted (the late result
of a call that was open then) stands as a unit of its own, which the renderer sends as
plain text: nothing new is lost, and no result appears without its call.

Units that an imported compaction in the pristine record covers are left out the way
the renderer leaves them out, judged by their pristine ids.

The units are projected by the view's `Projector` (`orchestrator.working.projection`),
which says how they are built, extended and reused after edits.
"""

from __future__ import annotations

from collections.abc import Iterator
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import Any

from context_graph.errors import UnknownNodeError
from context_graph.graph.context_graph import ContextGraph
from context_graph.graph.node_tokens import NodeTokenCache
from context_graph.graph.nodes import AnswerNode, Node, ToolCallNode
from context_graph.graph.units import Unit
from orchestrator.working.figures import ViewFigures
from orchestrator.working.overlay import Overlay
from orchestrator.working.projection import Projector
from processors.base import GraphView, Proposal

__all__ = ["WorkingView"]


@dataclass(frozen=True, slots=True)
class _Frozen:
    """Where a snapshot stopped: transcript length, version and user turns then."""

    limit: int
    version: int
    turns: int


def _lineage(node: Node) -> tuple[str, ...]:
    return (*((node.replaces,) if node.replaces is not None else ()), *node.abstracts)


class WorkingView(GraphView):
    """The working graph as processors and the renderer read it; a `GraphView`.

    `units()`, `unit_of`, `answer_to`, `call_of`, `first_call_with_id`, `is_current`,
    `current_ids` and `by_path` describe the current view. Lookups (`view[id]`, `in`,
    `tokens`) reach every node the view can explain: pristine nodes (also those compacted
    away) and derived ones. `transcript()`, `turns`, `len()` and the edges (`targets`,
    `sources`) are the pristine record's, plus the overlay's `derived_from` lineage.

    A live view (held by `WorkingGraph`) follows the pristine graph as it grows; a frozen
    one (`WorkingGraph.snapshot()`) sees only the transcript as it was when frozen, so
    it reads the same however the session and the working graph move on.
    """

    __slots__ = ("_frozen", "_overlay", "_projector")

    def __init__(
        self,
        pristine: ContextGraph,
        overlay: Overlay,
        *,
        interned: dict[Unit, Unit] | None = None,
        _frozen: _Frozen | None = None,
        _projector: Projector | None = None,
    ) -> None:
        super().__init__(pristine)
        self._overlay = overlay
        self._frozen = _frozen
        if _projector is None:
            limit = None if _frozen is None else _frozen.limit
            _projector = Projector(pristine, overlay, limit, interned)
        self._projector = _projector

    # -- identity ----------------------------------------------------------------------

    @property
    def version(self) -> int:
        """Changes with every applied proposal and every pristine edit (frozen: fixed)."""
        if self._frozen is not None:
            return self._frozen.version
        return self._graph.version + self._overlay.applied

    @property
    def pristine(self) -> ContextGraph:
        """The pristine graph underneath (read it, never write to it through here)."""
        return self._graph

    @property
    def overlay(self) -> Overlay:
        """The applied edits this view reads the pristine graph through."""
        return self._overlay

    @property
    def frozen(self) -> bool:
        """Whether this view is a snapshot that no later change reaches."""
        return self._frozen is not None

    @property
    def token_cache(self) -> NodeTokenCache:
        """The pristine graph's token cache (the renderer counts with it)."""
        return self._graph.token_cache

    def freeze(self) -> WorkingView:
        """This view as an immutable snapshot (itself when already frozen)."""
        if self._frozen is not None:
            return self
        graph = self._graph
        # Transcript length without copying the transcript: derived nodes are the rest.
        frozen = _Frozen(len(graph) - len(graph.derived()), self.version, graph.turns)
        projector = self._projector.snapshot(frozen.limit)
        return WorkingView(graph, self._overlay, _frozen=frozen, _projector=projector)

    def with_proposal(self, proposal: Proposal) -> WorkingView:
        """The view with `proposal` applied, unchecked (`WorkingGraph.apply` checks first)."""
        version = self.version + 1
        safety = proposal.purpose == "safety"
        overlay = self._overlay.with_edits(
            proposal.edits, version, safety=safety, kind_of=self._pristine_kind
        )
        frozen = self._frozen
        if frozen is not None:
            frozen = _Frozen(frozen.limit, version, frozen.turns)
        projector = self._projector.after(proposal, overlay)
        return WorkingView(self._graph, overlay, _frozen=frozen, _projector=projector)

    def _pristine_kind(self, node_id: str) -> str | None:
        node = self._graph.get(node_id)
        return None if node is None else node.kind

    def fresh_copy(self) -> WorkingView:
        """This view with nothing projected yet: it projects its units from scratch.

        It reads exactly as this view does; what this view keeps up to date
        incrementally must equal it.
        """
        return WorkingView(self._graph, self._overlay, _frozen=self._frozen)

    # -- nodes -------------------------------------------------------------------------

    def _within(self, node: Node) -> bool:
        frozen = self._frozen
        return frozen is None or node.seq is None or node.seq < frozen.limit

    def get(self, node_id: str) -> Node | None:
        """Any node the view can explain (pristine or derived), or `None`."""
        # `Overlay.node` and `_within`, inlined: every lookup of a compaction comes here.
        overlay = self._overlay
        node = overlay.derived.get(node_id)
        if node is None:
            node = overlay.undone.get(node_id)
        if node is not None:
            return node
        node = self._graph.get(node_id)
        if node is None:
            return None
        frozen = self._frozen
        if frozen is None or node.seq is None or node.seq < frozen.limit:
            return node
        return None

    def __getitem__(self, node_id: str) -> Node:
        node = self.get(node_id)
        if node is None:
            msg = f"node {node_id!r} is in neither the pristine nor the working graph"
            raise UnknownNodeError(msg)
        return node

    def __contains__(self, node_id: object) -> bool:
        return isinstance(node_id, str) and self.get(node_id) is not None

    def is_current(self, node_id: str) -> bool:
        """Whether `node_id` is in the current view (a unit holds it)."""
        return self._projector.holds(node_id)

    def current_ids(self) -> tuple[str, ...]:
        """The ids of the current view's nodes, in order."""
        return tuple(i for unit in self.units() for i in unit.node_ids)

    def tokens(self, node_id: str) -> int:
        """The content tokens of any node the view can explain."""
        derived = self._overlay.node(node_id)
        if derived is not None:
            return self._graph.token_cache.count_node(derived)
        # `self[node_id]` past the overlay, which was just asked: a goal-sized stage
        # asks this of every output it weighs.
        node = self._graph.get(node_id)
        if node is None or not self._within(node):
            msg = f"node {node_id!r} is in neither the pristine nor the working graph"
            raise UnknownNodeError(msg)
        return self._graph.tokens(node_id)  # counted once, at ingest

    @property
    def total_tokens(self) -> int:
        """The content tokens of every node in the current view."""
        return self.figures().tokens

    def figures(self) -> ViewFigures:
        """What the triggers read of the current view (do not change it)."""
        return self._projector.figures()

    def departure(self, node_id: str) -> tuple[str, int] | None:
        """How and at which version `node_id` left the view, or `None` if it did not."""
        version = self._overlay.left_at.get(node_id)
        if version is None:
            return None
        overlay = self._overlay
        if node_id in overlay.replaced_by:
            how = f"replaced by `{overlay.replaced_by[node_id]}`"
        elif node_id in overlay.abstracted_by:
            how = f"abstracted into `{overlay.abstracted_by[node_id]}`"
        else:
            how = "dropped"
        return how, version

    # -- the record --------------------------------------------------------------------

    @property
    def turns(self) -> int:
        """How many user turns the pristine record had (when frozen, then)."""
        return self._frozen.turns if self._frozen is not None else self._graph.turns

    def transcript(self) -> tuple[str, ...]:
        """The pristine transcript's node ids in order (when frozen, as it was then)."""
        transcript = self._graph.transcript()
        return transcript if self._frozen is None else transcript[: self._frozen.limit]

    # -- units -------------------------------------------------------------------------

    def units(self) -> tuple[Unit, ...]:
        """The current view's interaction units, in order."""
        return self._projector.units()

    def answers(self) -> tuple[Node, ...]:
        """The current view's tool outputs, file reads and sub-agent answers, in order."""
        return self._projector.answers(self.__getitem__)

    def unit_of(self, node_id: str) -> Unit:
        """The current view's unit that holds `node_id`."""
        unit = self._projector.unit_of(node_id)
        if unit is None:
            msg = f"node {node_id!r} is not in the current working view"
            raise UnknownNodeError(msg)
        return unit

    # -- pairing -----------------------------------------------------------------------

    def _root(self, node: Node) -> str | None:
        """The pristine node a chain of replacements leads back to, if it is one."""
        overlay = self._overlay
        while overlay.node(node.id) is not None:
            if node.replaces is None:
                return None
            node = self[node.replaces]
        return node.id

    def standing_for(self, pristine_id: str) -> Node | None:
        """The current node standing for a pristine node alone, or `None`.

        The node itself or what replaced it; `None` when a summary took it in or it left
        the view.
        """
        now = self._overlay.unsummarized(pristine_id)
        if now is None or not self.is_current(now):
            return None
        return self[now]

    def answer_to(self, call_node_id: str) -> Node | None:
        """The current node answering the call `call_node_id`, or `None`."""
        call = self[call_node_id]
        root = self._root(call) if isinstance(call, ToolCallNode) else None
        if root is None or root not in self._graph:
            return None
        answer = self._graph.answer_to(root)
        if answer is None or not self._within(answer):
            return None
        return self.standing_for(answer.id)

    def call_of(self, answer_node_id: str) -> ToolCallNode | None:
        """The current call node that `answer_node_id` answers, or `None`."""
        answer = self[answer_node_id]
        root = self._root(answer) if isinstance(answer, AnswerNode) else None
        if root is None or root not in self._graph:
            return None
        call = self._graph.call_of(root)
        current = self.standing_for(call.id) if call is not None else None
        return current if isinstance(current, ToolCallNode) else None

    def first_call_with_id(self, tool_call_id: str) -> str | None:
        """The id standing for the session's first call with `tool_call_id` now.

        When that call left the view its pristine id is returned, so later calls that
        reuse the id keep the provider ids they had (renders stay byte-stable).
        """
        first = self._graph.first_call_with_id(tool_call_id)
        if first is None or not self._within(self._graph[first]):
            return None
        current = self.standing_for(first)
        return current.id if current is not None else first

    def is_superseded(self, node_id: str) -> bool:
        """Whether a later read of the same file covers the file this node stands for."""
        root = self._root(self[node_id])
        if root is None or root not in self._graph:
            return False
        return any(self._within(self._graph[s]) for s in self._graph.sources(root, "supersedes"))

    def by_path(self, path: str) -> tuple[str, ...]:
        """Current nodes standing for reads of `path`, oldest first."""
        found = (self.standing_for(i) for i in self._graph.by_path(path))
        return tuple(node.id for node in found if node is not None)

    def targets(self, node_id: str, kind: Any) -> tuple[str, ...]:
        """Older nodes `node_id` points at by `kind`; a derived node's lineage included."""
        node = self[node_id]
        if self._overlay.node(node_id) is not None:
            return _lineage(node) if kind == "derived_from" else ()
        return self._graph.targets(node_id, kind)

    def sources(self, node_id: str, kind: Any) -> tuple[str, ...]:
        """Newer nodes pointing at `node_id` by `kind`; its stand-in for `derived_from`."""
        _ = self[node_id]  # raises for an id the view cannot explain
        found: tuple[str, ...] = ()
        graph = self._graph
        if node_id in graph:
            found = graph.sources(node_id, kind)
            if found and self._frozen is not None:  # a live view holds every pristine node
                found = tuple(s for s in found if self._within(graph[s]))
        overlay = self._overlay
        successor = overlay.replaced_by.get(node_id) or overlay.abstracted_by.get(node_id)
        return (*found, successor) if kind == "derived_from" and successor else found

    # -- provenance --------------------------------------------------------------------

    def roots(self, node_id: str) -> tuple[str, ...]:
        """The pristine transcript nodes `node_id` stands for, transitively, in order."""
        return tuple(sorted(set(self._walk_roots(node_id)), key=self._seq))

    def stands_for_any(self, node_id: str, ids: AbstractSet[str]) -> bool:
        """Whether a root of `node_id` (`roots`) is one of `ids`.

        The walk of `roots`, over at the first root found in `ids`, and not sorted: a
        stage restricted to some nodes asks it of every node of the view.
        """
        return any(root in ids for root in self._walk_roots(node_id))

    def _walk_roots(self, node_id: str) -> Iterator[str]:
        """The roots of `node_id` as the walk down its lineage meets them (each once)."""
        seen: set[str] = set()
        stack = [node_id]
        while stack:
            current = stack.pop()
            if current in seen:
                continue
            seen.add(current)
            node = self[current]
            if self._overlay.node(current) is None and node.seq is not None:
                yield current
            else:
                stack.extend(_lineage(node))

    def expand(self, node_id: str) -> tuple[Node, ...]:
        """The original pristine nodes behind `node_id`, in transcript order."""
        return tuple(self._graph[root] for root in self.roots(node_id))

    def _seq(self, node_id: str) -> int:
        seq = self._graph[node_id].seq
        return seq if seq is not None else -1
