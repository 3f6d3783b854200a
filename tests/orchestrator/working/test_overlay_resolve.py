"""`Overlay.unsummarized`: `resolve` for a caller that drops what a summary stands for.

A rolling summary is abstracted by the next one, so the way from a node of the first task
to what stands for it now grows with the session; the pairing lookups (`answer_to`,
`call_of`, `first_call_with_id`) only need to know that a summary is on it.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from orchestrator.working.layered import LayeredMap
from orchestrator.working.overlay import Overlay


class _CountingMap(LayeredMap[str, str]):
    """A layered map that counts its lookups."""

    lookups = 0

    def get(self, key: str, /) -> str | None:  # type: ignore[override]
        type(self).lookups += 1
        return super().get(key)


def test_a_chain_of_rolling_summaries_is_not_walked() -> None:
    """A node under 200 summaries of summaries: two lookups say a summary is on the way."""
    chain = {"n": "s0", **{f"s{k}": f"s{k + 1}" for k in range(200)}}
    overlay = Overlay(abstracted_by=_CountingMap(chain))
    _CountingMap.lookups = 0
    assert overlay.unsummarized("n") is None
    assert _CountingMap.lookups <= 2
    _CountingMap.lookups = 0
    assert overlay.resolve("n") == ("s200", True)
    assert _CountingMap.lookups > 200  # what the pairing lookups walked before


@settings(max_examples=300, deadline=None)
@given(
    links=st.lists(st.tuples(st.integers(0, 30), st.booleans()), max_size=30),
    start=st.integers(0, 30),
)
def test_it_answers_what_resolve_answers(links: list[tuple[int, bool]], start: int) -> None:
    """Over random replacement and summary chains (each link to a later node, so no
    cycle): `unsummarized` is `resolve`'s node without a summary on the way, else None."""
    replaced: dict[str, str] = {}
    abstracted: dict[str, str] = {}
    for source, (step, by_summary) in enumerate(links):
        target = f"n{source + 1 + step}"
        (abstracted if by_summary else replaced)[f"n{source}"] = target
    overlay = Overlay(replaced_by=LayeredMap(replaced), abstracted_by=LayeredMap(abstracted))
    node_id = f"n{start}"
    now, via_summary = overlay.resolve(node_id)
    assert overlay.unsummarized(node_id) == (None if via_summary else now)
