"""Immutable maps and sets that share their bulk: what lets an overlay grow without a copy.

An `Overlay` (`orchestrator.working.overlay`) keeps maps that grow with the whole history
(every node that ever left the view has an entry). Copying them for every applied edit
makes each edit cost the history. A `LayeredMap` is a frozen base dict, shared by every
map derived from it and never changed, plus a small delta of its own (new values, and
tombstones for the keys it took away). Deriving a map copies only the delta; once the
delta holds more than about the square root of the base, the two are merged into a new
base. So a change costs O(sqrt n) amortized, a lookup two dict probes, and a map once
made reads the same forever (old views, snapshots and the double buffer read old ones).

Iteration order is not part of the contract (a `Mapping` has none): the keys of the
base, then the delta's new ones.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Set
from typing import Any, Final, Generic, TypeVar, overload

__all__ = ["LayeredMap", "LayeredSet", "MapDraft", "SetDraft"]

K = TypeVar("K")
V = TypeVar("V")
T = TypeVar("T")

#: In a delta: the key was taken away (the base still holds it).
_GONE: Final = object()
#: What `dict.get` answers for a key the delta does not mention.
_ABSENT: Final = object()
#: Below this many entries a delta is never merged: copying it is as cheap as a probe.
_SMALL: Final = 32


def _merge_due(delta: int, base: int) -> bool:
    """Whether a delta of `delta` entries over a base of `base` is merged now."""
    return delta > _SMALL and delta * delta > base


class _Layers(Generic[K, V]):
    """A frozen base dict and a delta over it; `_len` counts the keys present."""

    __slots__ = ("_base", "_delta", "_len")

    def __init__(self, base: dict[Any, Any], delta: dict[Any, Any], length: int) -> None:
        # Any keys: a lookup may ask for any object, as a dict's does.
        self._base = base
        self._delta = delta
        self._len = length

    def __contains__(self, key: object) -> bool:
        found = self._delta.get(key, _ABSENT)
        if found is _ABSENT:
            return key in self._base
        return found is not _GONE

    def __len__(self) -> int:
        return self._len

    def __iter__(self) -> Iterator[K]:
        delta = self._delta
        if not delta:
            yield from self._base
            return
        for key in self._base:
            if key not in delta or delta[key] is not _GONE:
                yield key
        for key, value in delta.items():
            if value is not _GONE and key not in self._base:
                yield key

    def among(self, keys: Iterable[K]) -> set[K]:
        """Which of `keys` are present (set operations in C, not a lookup per key)."""
        wanted = set(keys)
        found = self._base.keys() & wanted
        for key in self._delta.keys() & wanted:
            if self._delta[key] is _GONE:
                found.discard(key)
            else:
                found.add(key)
        return found

    def holds_any(self, keys: Iterable[K]) -> bool:
        """Whether any of `keys` is present (a C-level test when the delta is empty)."""
        if not self._delta:
            return not self._base.keys().isdisjoint(keys)
        return any(key in self for key in keys)


class _Draft(Generic[K, V]):
    """A private, changing copy of a layered map's delta; `_frozen` makes it immutable."""

    __slots__ = ("_base", "_delta", "_len")

    def __init__(self, layers: _Layers[K, V]) -> None:
        self._base = layers._base
        self._delta = dict(layers._delta)
        self._len = layers._len

    def _lookup(self, key: K) -> Any:
        found = self._delta.get(key, _ABSENT)
        if found is _ABSENT:
            return self._base.get(key, _ABSENT)
        return _ABSENT if found is _GONE else found

    def _put(self, key: K, value: Any) -> None:
        if self._lookup(key) is _ABSENT:
            self._len += 1
        self._delta[key] = value

    def _take(self, key: K) -> Any:
        """Take `key` away; what it held, or `_ABSENT` when it was not there."""
        found = self._lookup(key)
        if found is _ABSENT:
            return _ABSENT
        if key in self._base:
            self._delta[key] = _GONE
        else:
            del self._delta[key]
        self._len -= 1
        return found

    def _layers(self) -> tuple[dict[K, Any], dict[K, Any], int]:
        base, delta = self._base, self._delta
        if not _merge_due(len(delta), len(base)):
            return base, delta, self._len
        merged = dict(base)
        for key, value in delta.items():
            if value is _GONE:
                del merged[key]
            else:
                merged[key] = value
        return merged, {}, self._len


class LayeredMap(_Layers[K, V], Mapping[K, V]):
    """An immutable mapping that shares a frozen base with the maps it was derived from.

    Args:
        items: The initial entries (copied).
    """

    __slots__ = ()

    def __init__(self, items: Mapping[K, V] | None = None) -> None:
        base = dict(items) if items is not None else {}
        super().__init__(base, {}, len(base))

    @classmethod
    def _of(cls, layers: tuple[dict[K, Any], dict[K, Any], int]) -> LayeredMap[K, V]:
        made = cls.__new__(cls)
        _Layers.__init__(made, *layers)
        return made

    def __getitem__(self, key: K) -> V:
        found = self._delta.get(key, _ABSENT)
        if found is _ABSENT:
            value: V = self._base[key]
            return value
        if found is _GONE:
            raise KeyError(key)
        return found  # type: ignore[no-any-return]

    @overload
    def get(self, key: K, /) -> V | None: ...
    @overload
    def get(self, key: K, default: V | T, /) -> V | T: ...
    def get(self, key: K, default: Any = None) -> Any:
        """The value of `key`, or `default`."""
        found = self._delta.get(key, _ABSENT)
        if found is _ABSENT:
            return self._base.get(key, default)
        return default if found is _GONE else found

    def draft(self) -> MapDraft[K, V]:
        """A changing copy to build the next map from; this one stays as it is."""
        return MapDraft(self)


class MapDraft(_Draft[K, V]):
    """The next `LayeredMap` while it is built (one owner; `frozen()` when done)."""

    __slots__ = ()

    def get(self, key: K, default: Any = None) -> Any:
        """The value of `key` now, or `default`."""
        found = self._lookup(key)
        return default if found is _ABSENT else found

    def __setitem__(self, key: K, value: V) -> None:
        self._put(key, value)

    def update(self, items: Mapping[K, V]) -> None:
        """Set every entry of `items`."""
        for key, value in items.items():
            self._put(key, value)

    def pop(self, key: K, *default: Any) -> Any:
        """Take `key` away and return its value (`dict.pop`: `KeyError` without a default)."""
        found = self._take(key)
        if found is not _ABSENT:
            return found
        if default:
            return default[0]
        raise KeyError(key)

    def frozen(self) -> LayeredMap[K, V]:
        """The map as built (merged into a new base once the delta is large)."""
        return LayeredMap._of(self._layers())


class LayeredSet(_Layers[K, bool], Set[K]):
    """An immutable set that shares a frozen base with the sets it was derived from.

    Args:
        items: The initial members.
    """

    __slots__ = ()

    def __init__(self, items: Iterable[K] = ()) -> None:
        base = dict.fromkeys(items, True)
        super().__init__(base, {}, len(base))

    @classmethod
    def _of(cls, layers: tuple[dict[K, Any], dict[K, Any], int]) -> LayeredSet[K]:
        made = cls.__new__(cls)
        _Layers.__init__(made, *layers)
        return made

    def __hash__(self) -> int:
        return self._hash()

    def draft(self) -> SetDraft[K]:
        """A changing copy to build the next set from; this one stays as it is."""
        return SetDraft(self)


class SetDraft(_Draft[K, bool]):
    """The next `LayeredSet` while it is built (one owner; `frozen()` when done)."""

    __slots__ = ()

    def add(self, key: K) -> None:
        """Make `key` a member."""
        self._put(key, True)

    def update(self, keys: Iterable[K]) -> None:
        """Make every one of `keys` a member."""
        for key in keys:
            self._put(key, True)

    def discard(self, key: K) -> None:
        """Take `key` out, if it is a member."""
        self._take(key)

    def frozen(self) -> LayeredSet[K]:
        """The set as built (merged into a new base once the delta is large)."""
        return LayeredSet._of(self._layers())
