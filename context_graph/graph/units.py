"""Interaction units: the atoms that are kept, compacted or dropped whole.

`ContextGraph` holds a `UnitIndex` and places each committed batch of transcript nodes
in it. A unit only ever grows at its end, and new units come after every older one,
but for a withdrawal, which takes nodes out (and a unit left empty with them).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

from context_graph.graph.anchors import unit_kind
from context_graph.graph.nodes import Node

__all__ = ["Unit", "UnitIndex"]


@dataclass(frozen=True, slots=True)
class Unit:
    """An interaction unit: the atom that is kept, compacted or dropped whole.

    An assistant turn's unit holds the assistant node, all its tool calls and all their
    results (parallel calls included). Every other transcript node is a unit by itself.

    Attributes:
        head: The id of the unit's first node.
        kind: The kind of the head node, or `notice` when it is a notice (`unit_kind`).
        node_ids: Every node of the unit, in transcript order.
    """

    head: str
    kind: str
    node_ids: tuple[str, ...]

    def __len__(self) -> int:
        return len(self.node_ids)

    def __iter__(self) -> Iterator[str]:
        return iter(self.node_ids)


class UnitIndex:
    """The units of a transcript, in the order their heads happened, and each node's unit.

    Unit objects are reused until their unit grows, so that consumers that cache by unit
    (the renderer) see the same object for an unchanged unit.
    """

    __slots__ = ("_head_of", "_log", "_members", "_position", "_reshaped", "_units")

    def __init__(self) -> None:
        self._head_of: dict[str, str] = {}
        self._members: dict[str, list[str]] = {}
        self._position: dict[str, int] = {}
        self._units: list[Unit] = []
        # The head of every unit made or grown, in order: what changed since a mark; an
        # empty string where a withdrawal took units apart.
        self._log: list[str] = []
        self._reshaped = -1

    def extend(self, nodes: Sequence[Node], head_of: Mapping[str, str]) -> None:
        """Place new transcript nodes, in order, each in the unit `head_of` names.

        A node that is its own head starts a unit. Each touched unit is made once, with
        all of this batch's members: the units a node-by-node placing would make in
        between are seen by no one.
        """
        members = self._members
        position = self._position
        log = self._log
        new_heads: list[Node] = []
        grown: dict[str, None] = {}
        for node in nodes:
            node_id = node.id
            head = head_of[node_id]
            self._head_of[node_id] = head
            if head == node_id:
                members[node_id] = [node_id]
                position[node_id] = len(self._units) + len(new_heads)
                new_heads.append(node)
            else:
                members[head].append(node_id)
                grown[head] = None
            log.append(head)
        earlier = len(self._units)
        for head in grown:
            index = position[head]
            if index < earlier:
                # A head's kind never changes: the head node is frozen.
                self._units[index] = Unit(head, self._units[index].kind, tuple(members[head]))
        for node in new_heads:
            self._units.append(Unit(node.id, unit_kind(node), tuple(members[node.id])))

    def withdraw(self, node_ids: Sequence[str]) -> None:
        """Take withdrawn nodes out of their units; a unit left empty is gone.

        The units a withdrawal left alone stay the same objects.
        """
        touched: set[str] = set()
        for node_id in node_ids:
            head = self._head_of.pop(node_id)
            self._members[head].remove(node_id)
            touched.add(head)
        self._reshaped = len(self._log)
        self._log.append("")
        units: list[Unit] = []
        for unit in self._units:
            if unit.head in touched:
                members = self._members[unit.head]
                if not members:
                    del self._members[unit.head]
                    continue
                unit = Unit(unit.head, unit.kind, tuple(members))
                self._log.append(unit.head)
            units.append(unit)
        self._units = units
        self._position = {unit.head: index for index, unit in enumerate(units)}

    def unit_of(self, node_id: str) -> Unit | None:
        """The unit that holds `node_id`, or `None` for a node in no unit (a derived one)."""
        head = self._head_of.get(node_id)
        return None if head is None else self._units[self._position[head]]

    def units(self) -> tuple[Unit, ...]:
        """Every unit, in the order their heads happened."""
        return tuple(self._units)

    def units_from(self, start: int) -> tuple[Unit, ...]:
        """The units from position `start` on (what `units()[start:]` holds)."""
        return tuple(self._units[start:])

    def newest_first(self) -> Iterator[Unit]:
        """The units from the newest back, read as they stand (nothing copied)."""
        units = self._units
        for index in range(len(units) - 1, -1, -1):
            yield units[index]

    @property
    def mark(self) -> int:
        """A mark of the units as they are now, for `changed_since`."""
        return len(self._log)

    def changed_since(self, mark: int) -> tuple[str, ...]:
        """Heads of the units made or grown since `mark` was `mark`, each once, in order."""
        heads = dict.fromkeys(self._log[mark:])
        if self._reshaped >= mark:
            heads.pop("", None)
        return tuple(heads)

    def reshaped_since(self, mark: int) -> bool:
        """Whether a withdrawal took units apart since `mark` was `mark`."""
        return self._reshaped >= mark
