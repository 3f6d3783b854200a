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
from context_graph.testing import WordCounter, without_cache_marks


def _grow(graph: ContextGraph, start: int, count: int) -> None:
    for i in range(start, start + count):
        # No trailing space: Anthropic's last assistant turn is sent without it, which
        # would make the previous request's last message differ from the same turn later.
        graph.add_user(f"question {i} " + "word " * 20 + "?")
        graph.add_assistant(f"answer {i} " + "word " * 20 + "done.")


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


@given(
    steps=st.lists(
        st.tuples(
            st.integers(1, 4),  # turns added before the call
            st.floats(0.3, 1.5),  # the call's budget, a share of the whole history
            st.lists(st.none() | st.floats(0.1, 1.5), max_size=3),  # previews before it
        ),
        min_size=2,
        max_size=8,
    ),
)
@settings(max_examples=60, deadline=None)
def test_the_unchanged_prefix_is_marked_after_the_request_sent(
    steps: list[tuple[int, float, list[float | None]]],
) -> None:
    """Whatever was previewed in between, when a request starts with every message of
    the previous render, the last of those carries a cache mark. (A render weighs
    several drop counts; before, the mark compared with the last one weighed, not the
    one returned, and a measurement of the same state left the mark out.)"""
    graph = _graph()
    renderer = Renderer(format="anthropic", refit_to=0.6, cache_breakpoints=True)
    turns, previous = 12, None
    for added, share, previews in steps:
        _grow(graph, turns, added)
        turns += added
        whole = Renderer(format="anthropic").render(graph).tokens
        budget = max(1, int(whole * share))
        for preview in previews:
            try:
                renderer.preview(graph, budget=None if preview is None else int(whole * preview))
            except BudgetExceededError:
                pass
        try:
            sent = renderer.render(graph, budget=budget).payload
        except BudgetExceededError:
            previous = None
            continue
        messages = [without_cache_marks(m) for m in sent["messages"]]
        if previous and len(previous) < len(messages) and messages[: len(previous)] == previous:
            assert "cache_control" in str(sent["messages"][len(previous) - 1])
        previous = messages


def test_a_render_that_weighed_several_drop_counts_marks_the_one_it_sent() -> None:
    """Under pressure the first render tries drop counts; the next request, keeping the
    same drops, marks where the first one ended."""
    graph = _graph()
    renderer = Renderer(format="anthropic", refit_to=0.6, cache_breakpoints=True)
    budget = Renderer(format="anthropic").render(graph).tokens * 3 // 4
    first = renderer.render(graph, budget=budget)
    assert first.dropped
    _grow(graph, 12, 1)
    second = renderer.render(graph, budget=budget)
    assert second.dropped == first.dropped
    end = len(first.payload["messages"]) - 1
    assert without_cache_marks(second.payload["messages"][: end + 1]) == without_cache_marks(
        first.payload["messages"]
    )
    assert "cache_control" in str(second.payload["messages"][end])
