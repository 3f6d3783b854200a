"""`Renderer.preview`: a render that leaves the renderer as it was.

The manager asks questions with it before deciding to compact; a question must not
change what the next real render sends (its kept drops, its cache marks).
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from context_graph import ContextGraph
from context_graph.errors import BudgetExceededError
from context_graph.render import Renderer
from context_graph.testing import WordCounter


def _grow(graph: ContextGraph, start: int, count: int) -> None:
    for i in range(start, start + count):
        graph.add_user(f"question {i} " + "word " * 20)
        graph.add_assistant(f"answer {i} " + "word " * 20)


def _graph() -> ContextGraph:
    graph = ContextGraph(counter=WordCounter())
    graph.add_system("rules")
    _grow(graph, 0, 12)
    return graph


@given(
    steps=st.lists(
        st.tuples(
            st.integers(0, 4),  # turns added before the call
            st.floats(0.3, 1.2),  # the call's budget, a share of the whole history
            st.none() | st.floats(0.2, 1.2),  # a preview's budget before it, if any
        ),
        min_size=1,
        max_size=8,
    ),
    fmt=st.sampled_from(["openai", "anthropic"]),
    marks=st.booleans(),
)
@settings(max_examples=60, deadline=None)
def test_previews_change_nothing_a_render_sends(
    steps: list[tuple[int, float, float | None]], fmt: str, marks: bool
) -> None:
    """Two renderers see the same calls; one also previews before each. Every render of
    both sends the same body and keeps the same drops."""
    marks = marks and fmt == "anthropic"
    graph = _graph()
    asked = Renderer(format=fmt, refit_to=0.6, cache_breakpoints=marks)
    alone = Renderer(format=fmt, refit_to=0.6, cache_breakpoints=marks)
    turns = 12
    for added, share, preview_share in steps:
        _grow(graph, turns, added)
        turns += added
        whole = Renderer(format=fmt).render(graph).tokens
        budget = max(1, int(whole * share))
        if preview_share is not None:
            try:  # a preview raises as a render does, and changes nothing either way
                asked.preview(graph, budget=max(1, int(whole * preview_share)))
            except BudgetExceededError:
                pass
        try:
            sent = asked.render(graph, budget=budget)
        except BudgetExceededError:
            continue
        assert sent.payload == alone.render(graph, budget=budget).payload
        assert asked.kept_drops == alone.kept_drops


def test_a_preview_under_pressure_does_not_move_the_kept_drops() -> None:
    """The kept drops set by the last render survive a preview that would choose others."""
    graph = _graph()
    renderer = Renderer(format="openai", refit_to=0.6)
    whole = Renderer(format="openai").render(graph).tokens
    first = renderer.render(graph, budget=whole * 3 // 4)
    kept = renderer.kept_drops
    assert kept == len(first.dropped) > 0
    tighter = renderer.preview(graph, budget=whole // 3)
    assert len(tighter.dropped) > kept
    assert renderer.kept_drops == kept
    assert renderer.render(graph, budget=whole * 3 // 4).dropped == first.dropped
