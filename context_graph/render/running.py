"""What a render that leaves nothing out adds up over its fragments, carried to the next render.

Every call renders its whole view at least once, and a view usually differs from the
previous call's only at its end (the newest unit grew, or new units came). `RunningSums`
keeps the sums over the previous view's fragments but its last one, and a render whose
fragments start with those same fragments (the very same objects) adds up only what
follows them, so a call costs its new units, not the length of the session.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import chain

from context_graph.render.fragments import Fragment
from context_graph.render.provider import Message

__all__ = ["RunningSums", "Sums"]

_MESSAGES = operator.attrgetter("messages")
_COST = operator.attrgetter("cost")
_CALLS = operator.attrgetter("calls")
_SIGNED = operator.attrgetter("signed_secrets")
_KEY = operator.attrgetter("unit.key")


@dataclass(frozen=True, slots=True)
class Sums:
    """The sums over every fragment of one view, in order; each list and dict is new."""

    units: list[list[Message]]
    """The messages for `assemble`: with keys, each fragment's own list; without, the
    messages of all but the newest fragments as one list, then the newest fragments'
    lists (which assembles the same: `ProviderRenderer`). Good until the next `of`."""
    keys: list[tuple[str, ...]]
    """Each fragment's unit key (empty unless the keys were asked for)."""
    cost: int
    """The fragments' costs, added up."""
    call_ids: dict[str, str]
    """(provider call id -> call node id) of every call, as `dict` of them in order gives."""
    signed: bool
    """Whether any fragment has signed secrets."""


class RunningSums:
    """The `Sums` of a view, extended from those of the previous view where it can be.

    Args:
        keys: Whether `Sums.keys` (and a list of messages per fragment) is wanted: cache
            marks read them.
    """

    def __init__(self, *, keys: bool) -> None:
        self._keys = keys
        # The sums over `_fragments`: the previous view's fragments but its last one,
        # the one most likely to be made anew (its unit grows as results come in).
        self._fragments: list[Fragment] = []
        self._kept: list[list[Message]] = []
        self._unit_keys: list[tuple[str, ...]] = []
        # Without keys, the fragments' messages in one list, which assembles faster.
        self._flat: list[Message] = []
        self._cost = 0
        self._call_ids: dict[str, str] = {}
        self._signed = False

    def of(self, fragments: Sequence[Fragment]) -> Sums:
        """The sums over `fragments`, equal to adding every one of them up afresh."""
        held = len(self._fragments)
        if held > len(fragments) or not all(map(operator.is_, self._fragments, fragments)):
            self._restart()
            held = 0
        end = max(len(fragments) - 1, held)
        self._extend(fragments[held:end])
        last = fragments[end:]
        call_ids = dict(self._call_ids)
        call_ids.update(chain.from_iterable(map(_CALLS, last)))
        if self._keys:
            units = [*self._kept, *map(_MESSAGES, last)]
            keys = [*self._unit_keys, *map(_KEY, last)]
        else:
            units, keys = [self._flat, *map(_MESSAGES, last)], []
        return Sums(
            units=units,
            keys=keys,
            cost=self._cost + sum(map(_COST, last)),
            call_ids=call_ids,
            signed=self._signed or any(map(_SIGNED, last)),
        )

    def _restart(self) -> None:
        self._fragments = []
        self._kept = []
        self._unit_keys = []
        self._flat = []
        self._cost = 0
        self._call_ids = {}
        self._signed = False

    def _extend(self, fragments: Sequence[Fragment]) -> None:
        self._fragments.extend(fragments)
        if self._keys:
            self._kept.extend(map(_MESSAGES, fragments))
            self._unit_keys.extend(map(_KEY, fragments))
        else:
            self._flat.extend(chain.from_iterable(map(_MESSAGES, fragments)))
        self._cost += sum(map(_COST, fragments))
        # A call id met again keeps its first place and takes the later node, as in `dict`.
        self._call_ids.update(chain.from_iterable(map(_CALLS, fragments)))
        self._signed = self._signed or any(map(_SIGNED, fragments))
