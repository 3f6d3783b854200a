"""Entities the agent went on to use: named by a later turn of its own.

An output's paths, names and numbers that a later assistant turn writes, or a later tool
call passes as an argument, are the ones the agent needed from it; the distiller keeps
them first. Paths match across spellings of the same file: an output's `app.py` or
`src/app.py` is named by a later `/testbed/src/app.py` (it is a tail at a `/`), and an
output's `/testbed/src/app.py` by a later `src/app.py` (a tail that still holds a `/`;
a bare `app.py` does not stand for every path that ends in it).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache

from context_graph.entities import critical_entities
from context_graph.graph.nodes import AssistantNode, ToolCallNode
from processors.base import GraphView

__all__ = ["LaterReferences", "NamedAfter", "clear_cache"]


def _tails(path: str) -> Iterator[str]:
    """The tails of a file path after each `/`: `a/b/c.py` gives `b/c.py`, `c.py`.

    URLs have none (their tails are not files), and a bare number is no tail (`issues/123`
    is not a mention of every 123).
    """
    if "://" in path:
        return
    index = path.find("/")
    while index != -1:
        tail = path[index + 1 :]
        if tail and not tail.isdigit():
            yield tail
        index = path.find("/", index + 1)


def _scalars(value: object) -> Iterator[str]:
    """The strings and numbers inside decoded JSON arguments, depth first."""
    if isinstance(value, dict):
        for item in value.values():
            yield from _scalars(item)
    elif isinstance(value, list):
        for item in value:
            yield from _scalars(item)
    elif isinstance(value, str | int | float) and not isinstance(value, bool):
        yield str(value)


# Every medium or heavy distillation reads the whole transcript again; what one turn
# names depends on its text (or a call's arguments) alone.
@lru_cache(maxsize=4096)
def _named(written: str, *, call: bool) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """The entities in an assistant's text (or a call's arguments), each with its tails."""
    text = _decoded_arguments(written) if call else written
    return tuple((entity, tuple(_tails(entity))) for entity in critical_entities(text))


def clear_cache() -> None:
    """Forget the memoized entities of turns (`processors.caches.clear_caches`)."""
    _named.cache_clear()


def _decoded_arguments(arguments: str) -> str:
    try:
        decoded = json.loads(arguments)
    except ValueError:
        return arguments
    # Decoded, so escaped newlines in a command do not glue words together.
    return "\n".join(_scalars(decoded))


class LaterReferences:
    """Which entities of a node a later turn of the agent names, for one graph view.

    Built once per run; the view is only read. The turns are read on demand, latest
    first, down to the earliest position asked about (a run that distills no output, or
    only recent ones, reads few or none).

    Args:
        view: The graph view the processor was given.
    """

    __slots__ = ("_last", "_last_tail", "_order", "_position", "_unread", "_view")

    def __init__(self, view: GraphView) -> None:
        self._view = view
        self._order = view.transcript()
        # Built only if a node's `seq` ever disagrees with its place (see `_index`): a
        # dict of the whole transcript per run made a long session's runs grow with it.
        self._position: dict[str, int] | None = None
        # entity -> the last transcript position that names it, among the turns read
        self._last: dict[str, int] = {}
        self._last_tail: dict[str, int] = {}
        # Turns at this position and after it are read.
        self._unread = len(self._order)

    def _read_after(self, position: int) -> None:
        """Read the turns after `position` not read yet, latest first.

        A turn read later sits earlier, so it never overwrites a position: each entity
        keeps the last position naming it among the turns read, which is the last of
        all whenever one after `position` names it.
        """
        for index in range(self._unread - 1, position, -1):
            node = self._view[self._order[index]]
            if isinstance(node, AssistantNode):
                named = _named(node.text, call=False)
            elif isinstance(node, ToolCallNode):
                named = _named(node.arguments, call=True)
            else:
                continue
            for entity, tails in named:
                self._last.setdefault(entity, index)
                for tail in tails:
                    self._last_tail.setdefault(tail, index)
        self._unread = min(self._unread, position + 1)

    def after(self, node_id: str) -> NamedAfter:
        """The entities an agent turn after node `node_id` names, as a container.

        An entity is in it when a later turn names it exactly, names a path it is the tail
        of, or names a tail of it that still holds a `/`. A derived node (a placeholder,
        an earlier distillate) stands where the transcript node it replaces stood; a node
        with no place in the transcript has no later turns.
        """
        return NamedAfter(self, self._position_of(node_id))

    def _position_of(self, node_id: str) -> int:
        seen: set[str] = set()
        current: str | None = node_id
        while current is not None and current not in seen and current in self._view:
            index = self._index(current)
            if index is not None:
                return index
            seen.add(current)
            current = self._view[current].replaces
        return len(self._order)

    def _index(self, node_id: str) -> int | None:
        """Where `node_id` is in the transcript, or `None` when it is not there.

        A transcript node's `seq` is its place; a node without one (a derived node) has
        none.
        """
        seq = self._view[node_id].seq
        order = self._order
        if seq is None:
            return None
        if seq < len(order) and order[seq] == node_id:
            return seq
        if self._position is None:
            self._position = {i: index for index, i in enumerate(order)}
        return self._position.get(node_id)

    def named_after(self, entity: str, position: int) -> bool:
        """Whether an agent turn after transcript position `position` names `entity`."""
        if position + 1 < self._unread:
            self._read_after(position)
        entity = entity.removeprefix("./")
        if self._last.get(entity, -1) > position or self._last_tail.get(entity, -1) > position:
            return True
        return any(self._last.get(t, -1) > position for t in _tails(entity) if "/" in t)


@dataclass(frozen=True)
class NamedAfter:
    """The entities named after one transcript position (`entity in named`)."""

    references: LaterReferences
    position: int

    def __contains__(self, entity: object) -> bool:
        return isinstance(entity, str) and self.references.named_after(entity, self.position)
