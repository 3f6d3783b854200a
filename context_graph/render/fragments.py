"""Each unit of a source made into provider messages once, and what a render keeps of them.

A `Fragment` is one interaction unit as its format's messages, with their standalone
cost; `FragmentCache` makes them and keeps each while its unit is unchanged, so a render
after one new event turns only that event into messages.
"""

from __future__ import annotations

import bisect
import operator
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

from context_graph.graph.content import ContentPart
from context_graph.graph.native import NativeCompaction, artifact
from context_graph.graph.node_tokens import NodeTokenCache
from context_graph.graph.nodes import SIGNED_SECRETS, Node
from context_graph.graph.units import Unit
from context_graph.render.fit import FitUnit
from context_graph.render.native import ForeignCompaction, foreign_native, reason_for
from context_graph.render.provider import Message, ProviderRenderer
from context_graph.render.turns import RenderSource, UnitTurns, call_id_for, unit_turns

__all__ = ["NONE_SIGNED", "Fragment", "FragmentCache", "Fragments", "signed_secrets_kept"]


_SIGNED = operator.attrgetter("signed_secrets")
NONE_SIGNED: Mapping[str, int] = MappingProxyType({})
"""What a request keeps of signed secrets when no unit has any."""


@dataclass(frozen=True, slots=True)
class Fragment:
    """One unit rendered for one format, standing alone."""

    source_unit: Unit
    """The unit it was made from (a fragment is reused while the unit is the same object)."""
    unit: UnitTurns
    """The unit as neutral turns."""
    messages: list[Message]
    """The unit's messages in the format."""
    cost: int
    """Tokens of `messages`, overheads included."""
    fit: FitUnit
    """What the fitter needs to know of the unit."""
    calls: tuple[tuple[str, str], ...]
    """(provider call id, call node id) of every call in the unit."""
    signed_secrets: tuple[tuple[str, int], ...] = ()
    """(type, count) a redactor left in the unit's signed thinking (`SIGNED_SECRETS`)."""


@dataclass(frozen=True, slots=True)
class Fragments:
    """A source made into fragments: the system prompt apart, the rest in order."""

    fragments: list[Fragment]
    """Every unit the render may send, in order (abstracted ones and system units left out)."""
    system: list[ContentPart]
    """The system prompt's parts, gathered from the system and note units."""
    system_key: tuple[str, ...]
    """The head ids of the units the system prompt comes from."""
    foreign: tuple[ForeignCompaction, ...] = ()
    """Other providers' compactions the format cannot read, oldest first, and what was
    rendered in their place (`context_graph.render.native`)."""


@dataclass(frozen=True, slots=True)
class _Walk:
    """What one walk of a source gave, for a render of its next version to build on."""

    source: RenderSource
    units: tuple[Unit, ...]
    settled: int
    """The index after the last summary unit (0: none): the units from there on are the
    region, where each unit gives one fragment, or its parts to the system prompt."""
    summaries: list[str]
    """The summaries `_covered_foreign` searched (it found none)."""
    fragments: list[Fragment]
    system: list[ContentPart]
    system_heads: list[str]
    region: list[tuple[int, int]]
    """(index, parts) of each region unit that went to the system prompt, in order."""


class FragmentCache:
    """Makes the fragments of a source, reusing those of units that did not change.

    Args:
        provider: The format the fragments are rendered in.
    """

    def __init__(self, provider: ProviderRenderer) -> None:
        self._provider = provider
        self._by_head: dict[str, Fragment] = {}
        # A summary's abstracts never change, and a long session's summaries abstract
        # thousands of nodes: the summaries among them are found once per summary node.
        self._nested: dict[str, tuple[Node, tuple[str, ...]]] = {}
        # The summaries the latest search found nothing foreign under (see
        # `_covered_foreign`), by id, with the node object that was searched.
        self._clean: dict[str, Node] = {}
        # The latest walk, while it met no foreign compaction: a render of the source's
        # next version walks only the units after those the two share.
        self._walk: _Walk | None = None

    def fragments_of(self, source: RenderSource, cache: NodeTokenCache) -> Fragments:
        """The fragments of `source`; only those of the latest call are kept for the next."""
        units = source.units()
        walk = self._walk
        if walk is not None and walk.source is source:
            grown = self._grown(walk, units, cache)
            if grown is not None:
                return grown
        return self._walk_all(source, units, cache)

    def _walk_all(
        self, source: RenderSource, units: tuple[Unit, ...], cache: NodeTokenCache
    ) -> Fragments:
        """Every unit of `source`, walked from the newest."""
        fragments: list[Fragment] = []
        system: list[ContentPart] = []
        system_heads: list[str] = []
        fresh: dict[str, Fragment] = {}
        # Walk backwards: a summary stands for the earlier nodes it abstracts (an
        # imported compaction), so it is rendered in their place, never both; pinned
        # nodes (the system prompt, notes) stay whatever a summary claims.
        abstracted: set[str] = set()
        followed: set[str] = set()
        # Another provider's compaction covers nothing here: what it stands for is
        # rendered instead, and it is sent (as text) only where nothing earlier is left.
        foreign: list[tuple[int, str, NativeCompaction]] = []
        # What this format's own compaction stands for when its provider keeps the
        # user's messages verbatim beside it (`NativeArtifact.keeps_user_turns`: the
        # compact endpoint returns them, then the item): everything before it but those.
        beside_users: set[str] = set()
        own_summaries: list[str] = []
        # The units after the last summary: those a later render may take from this walk.
        settled = 0
        region: list[tuple[int, int]] = []
        for index in range(len(units) - 1, -1, -1):
            unit = units[index]
            fragment = self._by_head.get(unit.head)
            if fragment is None or fragment.source_unit is not unit:
                fragment = self._make(source, unit, cache)
            fresh[unit.head] = fragment
            if unit.kind == "summary":
                settled = settled or index + 1
                node = source[unit.head]
                native = foreign_native(node, self._provider.format)
                if native is not None:
                    # Covered by a later summary (the engine's own compaction, say), it
                    # is set aside all the same: what stands for it is rendered.
                    position = -1 if unit.head in abstracted else len(fragments)
                    foreign.append((position, unit.head, native))
                    if position >= 0:
                        fragments.append(fragment)
                    continue
                own = getattr(node, "native", None)
                # Some providers keep the user's turns beside their artifact; the
                # others ignore everything before it.
                keeps_users = own is not None and artifact(own.provider).keeps_user_turns
                _cover(source, node, beside_users if keeps_users else abstracted, followed)
                if node.seq is None:
                    own_summaries.append(unit.head)
            elif not fragment.unit.pinned and _covered(
                unit, abstracted, beside_users, fragment.messages
            ):
                continue
            if fragment.unit.system:
                system.extend(reversed(fragment.unit.system))
                system_heads.append(unit.head)
                if not settled:
                    region.append((index, len(fragment.unit.system)))
            else:
                fragments.append(fragment)
        # Keep only what the latest render used, so the cache cannot grow without bound.
        self._by_head = fresh
        summaries = [*followed, *own_summaries]
        seen = {head for _, head, _ in foreign}
        foreign.extend(
            (-1, node.id, native)
            for node, native in self._covered_foreign(source, summaries)
            if node.id not in seen
        )
        if len(foreign) > 1:
            foreign.sort(key=lambda entry: source[entry[1]].seq or 0, reverse=True)
        reports = _set_aside(fragments, foreign)
        fragments.reverse()
        system.reverse()
        system_heads.reverse()
        region.reverse()
        self._walk = (
            None
            if foreign
            else _Walk(source, units, settled, summaries, fragments, system, system_heads, region)
        )
        return Fragments(fragments, system, tuple(system_heads), reports)

    def _grown(
        self, walk: _Walk, units: tuple[Unit, ...], cache: NodeTokenCache
    ) -> Fragments | None:
        """The fragments of `units` from `walk` and the units after what they share.

        Only when the two share every unit up to the last summary, and no summary comes
        after what they share: then no summary's reach differs between the two walks,
        and each unit after the shared ones is sent as itself (or into the system
        prompt), so the shared units come out as the previous walk made them. `None`
        otherwise (or when a foreign compaction shows up), for a walk of every unit.
        """
        before = walk.units
        shared = min(len(before), len(units))
        while shared > walk.settled and before[shared - 1] is not units[shared - 1]:
            shared -= 1
        tail = units[shared:]
        if (
            shared < walk.settled
            or not all(map(operator.is_, before[:shared], units[:shared]))
            or any(unit.kind == "summary" for unit in tail)
            or self._covered_foreign(walk.source, walk.summaries)
        ):
            return None
        # The previous walk's output up to `shared`: each region unit gave one fragment,
        # or one system head and its parts.
        keep = bisect.bisect_left(walk.region, (shared, 0))
        region = walk.region[:keep]
        parts = len(walk.system) - sum(count for _, count in walk.region[keep:])
        heads = len(walk.system_heads) - (len(walk.region) - keep)
        fragments = walk.fragments[
            : len(walk.fragments) - (len(before) - shared - (len(walk.region) - keep))
        ]
        system = walk.system[:parts]
        system_heads = walk.system_heads[:heads]
        by_head = self._by_head
        made: list[Fragment] = []
        for unit in tail:
            fragment = by_head.get(unit.head)
            if fragment is None or fragment.source_unit is not unit:
                fragment = self._make(walk.source, unit, cache)
            made.append(fragment)
        for unit in before[shared:]:
            by_head.pop(unit.head, None)
        for index, (unit, fragment) in enumerate(zip(tail, made, strict=True), start=shared):
            by_head[unit.head] = fragment
            if fragment.unit.system:
                system.extend(fragment.unit.system)
                system_heads.append(unit.head)
                region.append((index, len(fragment.unit.system)))
            else:
                fragments.append(fragment)
        self._walk = _Walk(
            walk.source,
            units,
            walk.settled,
            walk.summaries,
            fragments,
            system,
            system_heads,
            region,
        )
        return Fragments(fragments, system, tuple(system_heads))

    def _covered_foreign(
        self, source: RenderSource, summaries: list[str]
    ) -> list[tuple[Node, NativeCompaction]]:
        """Foreign compactions that summaries stand for, so that no unit of their own shows.

        `summaries` are the imported compactions a walk followed (a chain holds every one)
        and the processor summaries it met, whose abstracted summaries are searched in turn.
        """
        found: list[tuple[Node, NativeCompaction]] = []
        stack = list(summaries)
        visited: dict[str, Node] = {}
        nested: dict[str, tuple[Node, tuple[str, ...]]] = {}
        clean = self._clean
        while stack:
            node = source[stack.pop()]
            if node.id in visited:
                continue
            visited[node.id] = node
            if clean.get(node.id) is node:
                # Nothing foreign under it last time, and what it abstracts is fixed: a
                # summary of summaries would otherwise be searched down to the session's
                # first summary at every render, a walk that grows with the session.
                continue
            native = foreign_native(node, self._provider.format)
            if native is not None:
                found.append((node, native))
            elif node.seq is None:
                known = self._nested.get(node.id)
                if known is None or known[0] is not node:
                    inner = tuple(i for i in node.abstracts if source[i].kind == "summary")
                    known = (node, inner)
                nested[node.id] = known
                stack.extend(known[1])
        # Only what this render walked is kept, so the memos cannot grow without bound.
        self._nested = nested
        # With nothing found, nothing foreign is under any summary this search reached;
        # otherwise which ones are clean is not known, and none is remembered.
        self._clean = visited if not found else {}
        return found

    def _make(self, source: RenderSource, unit: Unit, cache: NodeTokenCache) -> Fragment:
        provider = self._provider
        turns = unit_turns(source, unit)
        messages = provider.unit_messages(turns)
        cost = provider.count_messages(messages, cache)
        calls = tuple(
            (call_id_for(call, provider.format), call.node.id)
            for turn in turns.turns
            for call in turn.calls
        )
        fit = FitUnit(cost, turns.kind, turns.pinned)
        return Fragment(unit, turns, messages, cost, fit, calls, _signed_secrets(source, unit))


def _set_aside(
    newest_first: list[Fragment], foreign: list[tuple[int, str, NativeCompaction]]
) -> tuple[ForeignCompaction, ...]:
    """Leave out each foreign compaction with an earlier record; report every one.

    `newest_first` holds the fragments in reverse order, and `foreign` the position there
    of each foreign compaction (-1 for one a later summary covers, which is not among
    them): one with any other fragment after it (earlier in the history) is left out,
    the rest are sent as the text their turns hold.
    """
    if not foreign:
        return ()
    positions = {position for position, _, _ in foreign}
    reports: list[ForeignCompaction] = []
    leave_out: set[int] = set()
    for position, head, native in foreign:
        if position < 0:  # covered: not among the fragments
            reports.append(reason_for(head, native, earlier=True))
            continue
        earlier = any(i not in positions for i in range(position + 1, len(newest_first)))
        if earlier:
            leave_out.add(position)
        reports.append(reason_for(head, native, earlier=earlier))
    newest_first[:] = [f for i, f in enumerate(newest_first) if i not in leave_out]
    reports.reverse()
    return tuple(reports)


def _covered(
    unit: Unit, abstracted: set[str], beside_users: set[str], messages: Sequence[Message]
) -> bool:
    """Whether a later summary stands for `unit`, so that it is left out.

    `beside_users` is covered by a compaction of this format that keeps the user's
    messages beside it: a unit that is only user messages stays.
    """
    if not abstracted and not beside_users:
        return False
    if abstracted.issuperset(unit.node_ids):
        return True
    if not beside_users or not all(i in abstracted or i in beside_users for i in unit.node_ids):
        return False
    return not all(m.get("type") == "message" and m.get("role") == "user" for m in messages)


def _cover(source: RenderSource, summary: Node, covered: set[str], followed: set[str]) -> None:
    """Add to `covered` the ids of every node `summary` stands for.

    A processor's summary stands for its `abstracts`. An imported compaction (a summary in
    the transcript: `seq` is set) abstracts the nodes since the compaction before it, that
    one first, and stands for what that one stands for too: the chain is followed here,
    even where a view no longer holds the earlier compaction (a processor's summary took
    its place). `followed` holds the compactions followed so far in this walk (each with
    its whole chain), so each is followed once and the walk stays linear.
    """
    if summary.seq is None:
        covered.update(summary.abstracts)
        return
    node: Node | None = summary
    while node is not None and node.id not in followed:
        followed.add(node.id)
        covered.update(node.abstracts)
        first = source[node.abstracts[0]] if node.abstracts else None
        chained = first is not None and first.kind == "summary" and first.seq is not None
        node = first if chained else None


def _signed_secrets(source: RenderSource, unit: Unit) -> tuple[tuple[str, int], ...]:
    """What a redactor noted it left in the unit's signed thinking, summed over its nodes."""
    found: dict[str, int] = {}
    for node_id in unit.node_ids:
        noted = source[node_id].meta.get(SIGNED_SECRETS)
        if isinstance(noted, Mapping):
            for kind, count in noted.items():
                if isinstance(count, int):
                    found[kind] = found.get(kind, 0) + count
    return tuple(sorted(found.items()))


def signed_secrets_kept(fragments: Sequence[Fragment], dropped: Sequence[int]) -> Mapping[str, int]:
    """The signed secrets of the units a request keeps (all but the `dropped` indices)."""
    if not any(map(_SIGNED, fragments)):
        return NONE_SIGNED  # the usual case: no redactor left signed secrets anywhere
    left_out = set(dropped)
    total: dict[str, int] = {}
    for index, fragment in enumerate(fragments):
        if index not in left_out:
            for kind, count in fragment.signed_secrets:
                total[kind] = total.get(kind, 0) + count
    return MappingProxyType(dict(sorted(total.items())))
