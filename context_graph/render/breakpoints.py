"""Prompt-cache breakpoints that follow a session: where the unchanged prefix ends.

A renderer asked for cache breakpoints marks the system prompt, the end of the part of
the request that is the same as in its previous assembly (the provider has that prefix
cached), and the last block (so the next request can reuse this one).

A model may cache only prefixes of some length (`ModelLimits.cache_min_tokens`): a mark
before a shorter prefix caches nothing and takes one of the four places, so with a
known minimum a mark goes only where the prefix up to it is at least that long. The
prefix is measured from below (`Prefix`): every message of it is counted as if merged
into its neighbour, and a last unit that ends with the assistant (whose trailing
thinking may be trimmed, or passed over by the mark) not at all.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from context_graph.errors import ConfigurationError
from context_graph.render.provider import AssemblyStats, CacheMarking, Message

__all__ = ["CacheBreakpoints", "Prefix", "unit_keys"]


def unit_keys(value: object, where: str) -> tuple[tuple[str, ...], ...]:
    """`value` checked as a request's units, as `CacheBreakpoints.remember` takes them.

    Each unit is a non-empty sequence of node ids: what a session kept hands back.

    Raises:
        ConfigurationError: `value` has another shape (`where` names what was given).
    """
    if isinstance(value, str | bytes) or not isinstance(value, Sequence):
        msg = f"{where}: expected a sequence of units, got {value!r:.80}"
        raise ConfigurationError(msg)
    units: list[tuple[str, ...]] = []
    for index, unit in enumerate(value):
        if (
            isinstance(unit, str | bytes)
            or not isinstance(unit, Sequence)
            or not unit
            or not all(isinstance(i, str) and i for i in unit)
        ):
            msg = (
                f"{where}: unit {index} must be a non-empty sequence of node ids, got {unit!r:.80}"
            )
            raise ConfigurationError(msg)
        units.append(tuple(unit))
    return tuple(units)


@dataclass(frozen=True, slots=True)
class Prefix:
    """What the lengths of a request's prefixes are measured with."""

    minimum: int
    """The shortest prefix worth a mark, in the renderer's count."""
    fixed: int
    """Tokens of the request overhead, the tools and the system prompt."""
    costs: Sequence[int]
    """Each kept unit's tokens, messages with their overhead, in order."""
    per_message: int
    """The overhead of one message, which a merge saves."""

    def upto(self, units: Sequence[list[Message]], count: int) -> int:
        """A lower bound of the tokens of the first `count` units' prefix."""
        total = self.fixed + sum(self.costs[:count])
        total -= self.per_message * sum(len(unit) for unit in units[:count])
        last = units[count - 1] if count else []
        if last and last[-1]["role"] == "assistant":
            # Its trailing thinking may be trimmed (last place) or passed over by the mark.
            total -= self.costs[count - 1]
        return total


class CacheBreakpoints:
    """Places the marks of one renderer; remembers the units of its previous render.

    The renderer says which assembly it rendered (`remember`): a render weighs several
    (the whole view, then with units left out), and only the one it returns was sent.

    Args:
        marking: The format's way of marking a body.
    """

    def __init__(self, marking: CacheMarking) -> None:
        self._marking = marking
        self._last_units: tuple[tuple[str, ...], ...] = ()

    def remembered(self) -> tuple[tuple[str, ...], ...]:
        """The units of the previous render, which the next assembly's marks compare with."""
        return self._last_units

    def remember(self, units: tuple[tuple[str, ...], ...]) -> None:
        """Compare the next assemblies with `units`: the keys of the render just made."""
        self._last_units = units

    def assemble(
        self,
        system: list[Message],
        kept: list[list[Message]],
        keys: list[tuple[str, ...]],
        stats: AssemblyStats | None,
        prefix: Prefix | None = None,
    ) -> dict[str, Any]:
        """The body of `kept` (units with these `keys`), marked.

        With `prefix`, a mark goes only where the prefix up to it is `prefix.minimum`
        tokens or more; without, where the marks always go.
        """
        targets = self._targets(system, kept, keys, prefix)
        mark_system = prefix is None or prefix.fixed >= prefix.minimum
        return self._marking.assemble_marked(
            system, kept, breakpoints=targets, stats=stats, mark_system=mark_system
        )

    def _targets(
        self,
        system: list[Message],
        kept: list[list[Message]],
        keys: Sequence[tuple[str, ...]],
        prefix: Prefix | None,
    ) -> list[tuple[int, int]]:
        """Blocks to mark: the end of the unchanged prefix, and the very last block."""
        stable = 0
        for old, new in zip(self._last_units, keys, strict=False):
            if old != new:
                break
            stable += 1
        targets: list[tuple[int, int]] = []
        if 0 < stable < len(keys) and (
            prefix is None or prefix.upto(kept, stable) >= prefix.minimum
        ):
            end = self._marking.last_block(system, kept[:stable])
            if end is not None:
                targets.append(end)
        if prefix is None or prefix.upto(kept, len(kept)) >= prefix.minimum:
            targets.append((-1, -1))
        return targets
