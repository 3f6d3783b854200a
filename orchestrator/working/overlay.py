"""`Overlay`: what the applied edits did to the view, as immutable maps from node ids.

The pristine `ContextGraph` is never edited; a working view reads it through an overlay
(`orchestrator.working.view`). Applying edits builds a new overlay beside the old one, so
a view made from the old one keeps reading as it did.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from context_graph.graph.nodes import Node
from processors.base import Abstract, Edit, Replace

__all__ = ["Overlay"]


def _frozen_map() -> Mapping[str, Any]:
    return MappingProxyType({})


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
    """

    derived: Mapping[str, Node] = field(default_factory=_frozen_map)
    replaced_by: Mapping[str, str] = field(default_factory=_frozen_map)
    abstracted_by: Mapping[str, str] = field(default_factory=_frozen_map)
    dropped: frozenset[str] = frozenset()
    left_at: Mapping[str, int] = field(default_factory=_frozen_map)
    applied: int = 0

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

    def targets_of(self, edits: Sequence[Edit]) -> frozenset[str] | None:
        """The ids `edits` target, applied over this overlay.

        `None` when one is a derived node that something already stands for (possible
        only unchecked): projections record the pristine members and the nodes standing
        for them, not the nodes in between.
        """
        targets: set[str] = set()
        for edit in edits:
            if isinstance(edit, Replace):
                targets.add(edit.target)
            else:
                targets.update(edit.targets)
        for target in targets:
            if target in self.derived and (
                target in self.replaced_by or target in self.abstracted_by
            ):
                return None
        return frozenset(targets)

    def with_edits(self, edits: Sequence[Edit], version: int) -> Overlay:
        """A new overlay with `edits` applied at working version `version` (unchecked)."""
        derived = dict(self.derived)
        replaced_by = dict(self.replaced_by)
        abstracted_by = dict(self.abstracted_by)
        dropped = set(self.dropped)
        left_at = dict(self.left_at)
        for edit in edits:
            if isinstance(edit, Replace):
                derived[edit.replacement.id] = edit.replacement
                replaced_by[edit.target] = edit.replacement.id
                left_at[edit.target] = version
            elif isinstance(edit, Abstract):
                derived[edit.summary.id] = edit.summary
                for target in edit.targets:
                    abstracted_by[target] = edit.summary.id
                    left_at[target] = version
            else:
                dropped.update(edit.targets)
                left_at.update(dict.fromkeys(edit.targets, version))
        return Overlay(
            derived=MappingProxyType(derived),
            replaced_by=MappingProxyType(replaced_by),
            abstracted_by=MappingProxyType(abstracted_by),
            dropped=frozenset(dropped),
            left_at=MappingProxyType(left_at),
            applied=self.applied + 1,
        )
