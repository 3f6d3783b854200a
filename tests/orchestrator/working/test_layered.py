"""Layered maps and the overlay built on them read exactly as full copies would.

`LayeredMap` / `LayeredSet` share a frozen base between versions and keep a small delta
each; `Overlay.with_edits` builds on them instead of copying seven maps per edit. Every
version ever made must keep reading as it did (old views, snapshots and the double
buffer read old overlays), whatever was derived from it since, and the overlay must
equal the one the full copy made (kept here as the reference).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from context_graph import TextPart
from context_graph.graph.nodes import Node, SummaryNode, UserNode
from orchestrator.working import layered
from orchestrator.working.layered import LayeredMap, LayeredSet
from orchestrator.working.overlay import Overlay
from processors import Abstract, Drop, Edit, Replace, Restore

KEYS = st.sampled_from([f"k{i}" for i in range(40)])


@contextmanager
def _small_merges(small: int) -> Iterator[None]:
    """Merge deltas sooner, so that short runs cross several merges."""
    with mock.patch.object(layered, "_SMALL", small):
        yield


def _reads_as(made: LayeredMap[str, int], expected: Mapping[str, int]) -> None:
    assert len(made) == len(expected)
    assert dict(made) == dict(expected)
    assert sorted(made) == sorted(expected)
    for key in [f"k{i}" for i in range(40)]:
        assert (key in made) == (key in expected)
        assert made.get(key) == expected.get(key)
        assert made.get(key, -1) == expected.get(key, -1)
        if key in expected:
            assert made[key] == expected[key]
        else:
            with pytest.raises(KeyError):
                made[key]
    assert made.holds_any([*expected, "absent"]) == bool(expected)
    asked = [f"k{i}" for i in range(0, 40, 3)]
    assert made.among(asked) == {key for key in asked if key in expected}


class TestLayeredMap:
    @settings(max_examples=150, deadline=None)
    @given(
        steps=st.lists(
            st.tuples(
                st.integers(0, 1000),  # which earlier version to derive from
                st.lists(
                    st.tuples(st.sampled_from(["set", "pop"]), KEYS, st.integers()), max_size=12
                ),
            ),
            max_size=40,
        ),
        small=st.sampled_from([0, 2, 32]),
    )
    def test_every_version_keeps_reading_as_its_copy(
        self, steps: list[tuple[int, list[tuple[str, str, int]]]], small: int
    ) -> None:
        """Versions derived from any earlier one (branches too) read as dict copies, forever."""
        with _small_merges(small):
            versions: list[tuple[LayeredMap[str, int], dict[str, int]]] = [(LayeredMap(), {})]
            for pick, changes in steps:
                parent, expected = versions[pick % len(versions)]
                draft, reference = parent.draft(), dict(expected)
                for op, key, value in changes:
                    if op == "set":
                        draft[key] = value
                        reference[key] = value
                    else:
                        assert draft.pop(key, None) == reference.pop(key, None)
                    assert draft.get(key) == reference.get(key)
                versions.append((draft.frozen(), reference))
            for made, reference in versions:
                _reads_as(made, reference)

    def test_a_missing_key_pops_as_a_dict_does(self) -> None:
        """`pop` without a default raises `KeyError` for a key that is not there."""
        draft = LayeredMap({"a": 1}).draft()
        assert draft.pop("a") == 1
        with pytest.raises(KeyError):
            draft.pop("a")

    def test_a_small_change_shares_the_base(self) -> None:
        """Deriving from a large map copies only the delta: the base is the same dict."""
        large: LayeredMap[str, int] = LayeredMap({f"n{i}": i for i in range(10_000)})
        draft = large.draft()
        draft["new"] = 1
        derived = draft.frozen()
        assert derived._base is large._base  # the bulk is shared, not copied
        assert len(derived._delta) == 1 and len(large) == 10_000

    def test_a_large_delta_is_merged(self) -> None:
        """Once the delta outgrows the square root of the base, a new base holds it all."""
        made: LayeredMap[str, int] = LayeredMap({f"n{i}": i for i in range(100)})
        for i in range(40):
            draft = made.draft()
            draft[f"m{i}"] = i
            made = draft.frozen()
        assert len(made._delta) <= 33 and len(made) == 140


class TestLayeredSet:
    @settings(max_examples=100, deadline=None)
    @given(
        changes=st.lists(st.tuples(st.booleans(), KEYS), max_size=80),
        small=st.sampled_from([0, 2]),
    )
    def test_reads_as_a_frozenset(self, changes: list[tuple[bool, str]], small: int) -> None:
        """Adds and discards read as frozenset copies, the older versions too."""
        with _small_merges(small):
            made: LayeredSet[str] = LayeredSet()
            reference: frozenset[str] = frozenset()
            versions = [(made, reference)]
            for add, key in changes:
                draft = made.draft()
                if add:
                    draft.add(key)
                    reference = reference | {key}
                else:
                    draft.discard(key)
                    reference = reference - {key}
                made = draft.frozen()
                versions.append((made, reference))
            for got, expected in versions:
                assert got == expected and set(got) == expected and len(got) == len(expected)
                assert hash(got) == hash(expected)
                assert all((k in got) == (k in expected) for k in (f"k{i}" for i in range(40)))


@dataclass(frozen=True)
class _Copied:
    """The overlay as the full copy per edit made it (the reference)."""

    derived: dict[str, Node]
    replaced_by: dict[str, str]
    abstracted_by: dict[str, str]
    dropped: frozenset[str]
    left_at: dict[str, int]
    applied: int
    kept: frozenset[str]
    undone: dict[str, Node]


def _copied_with_edits(
    old: _Copied, through: Overlay, edits: Sequence[Edit], version: int, *, safety: bool
) -> _Copied:
    """`Overlay.with_edits` as it was: every map copied, then changed.

    `through` is the overlay `old` stands for (it answers `undone_by`, which reads it).
    """
    derived, replaced_by = dict(old.derived), dict(old.replaced_by)
    abstracted_by, dropped = dict(old.abstracted_by), set(old.dropped)
    left_at, kept, undone_nodes = dict(old.left_at), set(old.kept), dict(old.undone)
    for edit in edits:
        if isinstance(edit, Replace | Abstract):
            undone_nodes.pop(
                edit.replacement.id if isinstance(edit, Replace) else edit.summary.id, None
            )
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
        elif isinstance(edit, Drop):
            dropped.update(edit.targets)
            left_at.update(dict.fromkeys(edit.targets, version))
        else:
            undone, bases = through.undone_by(edit.target, whole=edit.whole)
            for node_id in (*undone, *bases):
                replaced_by.pop(node_id, None)
                abstracted_by.pop(node_id, None)
                left_at.pop(node_id, None)
                dropped.discard(node_id)
            for node_id in undone:
                undone_nodes[node_id] = derived.pop(node_id)
    return _Copied(
        derived,
        replaced_by,
        abstracted_by,
        frozenset(dropped),
        left_at,
        old.applied + 1,
        frozenset(kept),
        undone_nodes,
    )


def _assert_reads_as(overlay: Overlay, copied: _Copied) -> None:
    assert dict(overlay.derived) == copied.derived
    assert dict(overlay.replaced_by) == copied.replaced_by
    assert dict(overlay.abstracted_by) == copied.abstracted_by
    assert overlay.dropped == copied.dropped
    assert dict(overlay.left_at) == copied.left_at
    assert overlay.applied == copied.applied
    assert overlay.kept == copied.kept
    assert dict(overlay.undone) == copied.undone
    for node_id in [*copied.derived, *copied.left_at, *copied.undone, "p0", "absent"]:
        assert overlay.node(node_id) == (copied.derived.get(node_id) or copied.undone.get(node_id))
        assert overlay.left_at.get(node_id) == copied.left_at.get(node_id)
        assert (node_id in overlay.dropped) == (node_id in copied.dropped)


def _text(text: str) -> tuple[TextPart, ...]:
    return (TextPart(text=text),)


@st.composite
def _proposal(
    draw: st.DrawFn, overlay: Overlay, standing: list[str], serial: int
) -> tuple[list[Edit], bool]:
    """Edits of ids that stand now (unchecked, as `with_edits` takes them), maybe safety."""
    kind = draw(st.sampled_from(["replace", "abstract", "drop", "restore", "safety"]))
    if kind == "restore":
        known = [*overlay.derived, *overlay.dropped]
        if not known:
            return [], False
        target = draw(st.sampled_from(sorted(known)))
        return [Restore(target=target, whole=draw(st.booleans()))], False
    targets = draw(st.lists(st.sampled_from(standing), min_size=1, max_size=4, unique=True))
    if kind in ("replace", "safety"):
        edits: list[Edit] = [
            Replace(
                target=t, replacement=UserNode(id=f"r{serial}.{i}", content=_text("r"), replaces=t)
            )
            for i, t in enumerate(targets)
        ]
        return edits, kind == "safety"
    if kind == "drop":
        return [Drop(targets=tuple(targets))], False
    summary = SummaryNode(
        id=f"s{serial}", content=_text("s"), abstracts=tuple(targets), meta={"checked": True}
    )
    return [Abstract(targets=tuple(targets), summary=summary)], False


class TestOverlayAsCopied:
    @settings(max_examples=120, deadline=None)
    @given(data=st.data(), small=st.sampled_from([0, 2, 32]), rounds=st.integers(1, 40))
    def test_edits_read_as_the_full_copy(
        self, data: st.DataObject, small: int, rounds: int
    ) -> None:
        """Random edits, restores and safety edits, from the newest or an older overlay."""
        with _small_merges(small):
            versions: list[tuple[Overlay, _Copied, list[str]]] = [
                (
                    Overlay(),
                    _Copied({}, {}, {}, frozenset(), {}, 0, frozenset(), {}),
                    [f"p{i}" for i in range(12)],
                )
            ]
            for serial in range(rounds):
                # Mostly the newest; sometimes an old one (a check made and discarded).
                pick = data.draw(st.sampled_from([-1, -1, -1, 0, len(versions) // 2]))
                overlay, copied, standing = versions[pick]
                if not standing:
                    continue
                edits, safety = data.draw(_proposal(overlay, standing, serial))
                if not edits:
                    continue
                version = serial + 1
                try:
                    expected = _copied_with_edits(copied, overlay, edits, version, safety=safety)
                except KeyError:
                    with pytest.raises(KeyError):
                        overlay.with_edits(edits, version, safety=safety)
                    continue
                made = overlay.with_edits(edits, version, safety=safety)
                now = [i for i in standing if made.resolve(i)[0] == i and i not in made.dropped]
                now += [i for i in made.derived if made.resolve(i)[0] == i and i not in now]
                versions.append((made, expected, now))
            for overlay, copied, _ in versions:
                _assert_reads_as(overlay, copied)
