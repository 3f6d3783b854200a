"""Prompt-cache breakpoints that follow a session: where the unchanged prefix ends.

A renderer asked for cache breakpoints marks the system prompt, the end of the part of
the request that is the same as in its previous assembly (the provider has that prefix
cached), and the last block (so the next request can reuse this one).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from context_graph.render.provider import AssemblyStats, CacheMarking, Message

__all__ = ["CacheBreakpoints"]


class CacheBreakpoints:
    """Places the marks of one renderer; remembers the units of its previous assembly.

    Args:
        marking: The format's way of marking a body.
    """

    def __init__(self, marking: CacheMarking) -> None:
        self._marking = marking
        self._last_units: tuple[tuple[str, ...], ...] = ()

    def assemble(
        self,
        system: list[Message],
        kept: list[list[Message]],
        keys: list[tuple[str, ...]],
        stats: AssemblyStats | None,
    ) -> dict[str, Any]:
        """The body of `kept` (units with these `keys`), marked; the next call compares to it."""
        targets = self._targets(system, kept, keys)
        self._last_units = tuple(keys)
        return self._marking.assemble_marked(system, kept, breakpoints=targets, stats=stats)

    def _targets(
        self, system: list[Message], kept: list[list[Message]], keys: Sequence[tuple[str, ...]]
    ) -> list[tuple[int, int]]:
        """Blocks to mark: the end of the unchanged prefix, and the very last block."""
        stable = 0
        for old, new in zip(self._last_units, keys, strict=False):
            if old != new:
                break
            stable += 1
        targets: list[tuple[int, int]] = []
        if 0 < stable < len(keys):
            end = self._marking.last_block(system, kept[:stable])
            if end is not None:
                targets.append(end)
        targets.append((-1, -1))
        return targets
