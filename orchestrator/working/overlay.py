"""`Overlay`: what the applied edits did to the view, as immutable maps from node ids.

The pristine `ContextGraph` is never edited; a working view reads it through an overlay
(`orchestrator.working.view`). Applying edits builds a new overlay beside the old one, so
a view made from the old one keeps reading as it did. The maps grow with the whole
history, so the new overlay shares their bulk with the old one (`LayeredMap`,
`LayeredSet`: an edit costs what it changes, not the history).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from context_graph.graph.nodes import Node
from orchestrator.working.layered import LayeredMap, LayeredSet, MapDraft
from processors.base import Abstract, Drop, Edit, Replace, Restore

__all__ = ["Overlay"]


def _no_kind(_node_id: str) -> None:
    """The kind of a node no edit made, when nothing else is known: none."""


@dataclass(frozen=True, slots=True)
class Overlay:
    """What the applied edits did, as immutable maps from node ids.

    Attributes:
        derived: Every node an applied edit added, by id (kept after it is itself
            replaced, for provenance).
        replaced_by: Node id -> the id of the node that replaced it.
        abstracted_by: Node id -> the id of the summary that abstracts it.
        dropped: Ids of nodes that left the view with nothing in their place.
        left_at: Node id -> the working version at which it left the view.
        applied: How many proposals were applied.
        kept: Derived nodes a `safety` edit made (redacted copies): a restore stops at
            them, so that what was redacted never comes back.
        undone: The derived nodes a restore took away, by id: still explained (the audit
            log names them), no longer in use, so a later edit may make one again.
        chains: The length of the summary chain each summary an `Abstract` made stands
            at the top of, while it is in use: 1 for a summary of no summary, n + 1 for
            one that abstracts a summary of length n (`compaction.pipeline.summary_chain`).
    """

    derived: LayeredMap[str, Node] = field(default_factory=LayeredMap)
    replaced_by: LayeredMap[str, str] = field(default_factory=LayeredMap)
    abstracted_by: LayeredMap[str, str] = field(default_factory=LayeredMap)
    dropped: LayeredSet[str] = field(default_factory=LayeredSet)
    left_at: LayeredMap[str, int] = field(default_factory=LayeredMap)
    applied: int = 0
    kept: LayeredSet[str] = field(default_factory=LayeredSet)
    undone: LayeredMap[str, Node] = field(default_factory=LayeredMap)
    chains: LayeredMap[str, int] = field(default_factory=LayeredMap)

    def node(self, node_id: str) -> Node | None:
        """A node an edit added, in use or undone by a restore (`None`: no such node)."""
        found = self.derived.get(node_id)
        return found if found is not None else self.undone.get(node_id)

    def resolve(self, node_id: str) -> tuple[str, bool]:
        """The node that stands for `node_id` now, and whether a summary is on the way."""
        via_summary = False
        while True:
            successor = self.replaced_by.get(node_id)
            if successor is None:
                successor = self.abstracted_by.get(node_id)
                if successor is None:
                    return node_id, via_summary
                via_summary = True
            node_id = successor

    def unsummarized(self, node_id: str) -> str | None:
        """What `resolve` gives for `node_id` when no summary is on the way, else `None`.

        It stops at the first summary: past it, a rolling summary is abstracted by the
        next one, so the rest of the way grows with the session, and a caller that
        drops whatever a summary stands for (`WorkingView._current`) need not walk it.
        """
        while True:
            successor = self.replaced_by.get(node_id)
            if successor is None:
                return node_id if self.abstracted_by.get(node_id) is None else None
            node_id = successor

    def targets_of(self, edits: Sequence[Edit]) -> frozenset[str] | None:
        """The ids `edits` target, applied over this overlay.

        A restore targets the node it undoes, every derived node it takes away and every
        node that comes back (`undone_by`): each is on the way from the members whose
        way changes, and each such way ended at the restored node, which stood in the
        view. `None` when one is a derived node that something already stands for
        (possible only unchecked): projections record the pristine members and the
        nodes standing for them, not the nodes in between.
        """
        targets: set[str] = set()
        # What a restore takes away or brings back: nodes below the one it targets.
        beneath: set[str] = set()
        for edit in edits:
            if isinstance(edit, Restore):
                if edit.target in self.undone:
                    return None
                targets.add(edit.target)
                for ids in self.undone_by(edit.target, whole=edit.whole):
                    beneath.update(ids)
            elif isinstance(edit, Replace):
                targets.add(edit.target)
            else:
                targets.update(edit.targets)
        for target in targets:
            if target in self.derived and (
                target in self.replaced_by or target in self.abstracted_by
            ):
                return None
        return frozenset(targets | beneath)

    def undone_by(
        self, target: str, *, whole: bool = True
    ) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """What `Restore(target)` undoes: the derived nodes it takes away, and the bases.

        The bases are the nodes that come back: the pristine nodes below `target` (and
        the redacted copies, `kept`, where a safety edit stands between), in the order
        the lineage names them; with `whole=False`, what `target` was made from. A
        pristine `target` (a dropped one) is its own base.
        """
        undone: list[str] = []
        bases: list[str] = []
        seen: set[str] = set()
        stack = [target]
        while stack:
            node_id = stack.pop()
            if node_id in seen:
                continue
            seen.add(node_id)
            node = self.derived.get(node_id)
            if node is None or node_id in self.kept or (undone and not whole):
                bases.append(node_id)
                continue
            undone.append(node_id)
            lineage = (*((node.replaces,) if node.replaces is not None else ()), *node.abstracts)
            stack.extend(reversed(lineage))
        return tuple(undone), tuple(bases)

    def with_edits(
        self,
        edits: Sequence[Edit],
        version: int,
        *,
        safety: bool = False,
        kind_of: Callable[[str], str | None] = _no_kind,
    ) -> Overlay:
        """A new overlay with `edits` applied at working version `version` (unchecked).

        `safety`: the edits are a safety proposal's, whose replacements a restore keeps.
        `kind_of`: the kind of a node no edit made (a pristine one), by id; it tells a
        summary's `chains` length whether an imported compaction is among its parts
        (the default answers `None`: no such node, so none is).
        """
        # Drafts: each copies only its map's small delta (this overlay keeps its own).
        derived = self.derived.draft()
        replaced_by = self.replaced_by.draft()
        abstracted_by = self.abstracted_by.draft()
        dropped = self.dropped.draft()
        left_at = self.left_at.draft()
        kept = self.kept.draft()
        undone_nodes = self.undone.draft()
        chains = self.chains.draft()
        for edit in edits:
            for added in _added(edit):
                undone_nodes.pop(added, None)
            if isinstance(edit, Replace):
                derived[edit.replacement.id] = edit.replacement
                replaced_by[edit.target] = edit.replacement.id
                left_at[edit.target] = version
                if safety:
                    kept.add(edit.replacement.id)
            elif isinstance(edit, Abstract):
                derived[edit.summary.id] = edit.summary
                for target in edit.targets:
                    abstracted_by[target] = edit.summary.id
                    left_at[target] = version
                if edit.summary.kind == "summary":
                    # Only the parts' own lengths are read (each kept when it was made):
                    # a rolling summary costs its parts, not the chain beneath them.
                    lengths = (
                        _chain(t, chains, derived, undone_nodes, kind_of) for t in edit.targets
                    )
                    chains[edit.summary.id] = 1 + max(lengths, default=0)
            elif isinstance(edit, Drop):
                dropped.update(edit.targets)
                left_at.update(dict.fromkeys(edit.targets, version))
            else:
                undone, bases = self.undone_by(edit.target, whole=edit.whole)
                # Undone as if never made: a later compaction may make the same node
                # again (same content, same id) once the restored content is released.
                for node_id in (*undone, *bases):
                    replaced_by.pop(node_id, None)
                    abstracted_by.pop(node_id, None)
                    left_at.pop(node_id, None)
                    dropped.discard(node_id)
                for node_id in undone:
                    undone_nodes[node_id] = derived.pop(node_id)
                    # Its parts came back: out of use, it heads no chain.
                    chains.pop(node_id, None)
        return Overlay(
            derived=derived.frozen(),
            replaced_by=replaced_by.frozen(),
            abstracted_by=abstracted_by.frozen(),
            dropped=dropped.frozen(),
            left_at=left_at.frozen(),
            applied=self.applied + 1,
            kept=kept.frozen(),
            undone=undone_nodes.frozen(),
            chains=chains.frozen(),
        )


def _chain(
    part: str,
    chains: MapDraft[str, int],
    derived: MapDraft[str, Node],
    undone: MapDraft[str, Node],
    kind_of: Callable[[str], str | None],
) -> int:
    """The length of the summary chain `part` heads (0: it is no summary).

    A summary an `Abstract` made has its length in `chains`; any other summary (an
    imported compaction, a summary's replacement) abstracts nothing in the overlay, so
    it heads a chain of length 1.
    """
    length = chains.get(part)
    if length is not None:
        return int(length)
    node = derived.get(part)
    if node is None:
        node = undone.get(part)
    kind = kind_of(part) if node is None else node.kind
    return 1 if kind == "summary" else 0


def _added(edit: Edit) -> tuple[str, ...]:
    if isinstance(edit, Replace):
        return (edit.replacement.id,)
    if isinstance(edit, Abstract):
        return (edit.summary.id,)
    return ()
