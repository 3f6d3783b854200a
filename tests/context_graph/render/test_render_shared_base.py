"""Renders of one source version under several budgets share work, and say the same.

The renderer keeps a version's fragments and assemblies while the source stays at that
version, so asking "does the whole history fit?" and then rendering under the budget
costs one assembly. Whatever the order of budgets, growth and calibration, each result
must equal what a renderer that shares nothing returns for the same calls.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from context_graph import BudgetExceededError, ContextGraph
from context_graph.graph.content import TextPart
from context_graph.graph.node_tokens import NodeTokenCache
from context_graph.graph.nodes import Node, SummaryNode
from context_graph.graph.units import Unit
from context_graph.render import FORMATS, Renderer, RenderResult
from context_graph.testing import WordCounter
from context_graph.tokens.calibration import Calibrator
from context_graph.tokens.counting import ProviderFormat


class _Each:
    """The graph behind a new object on every call, so the renderer can share nothing."""

    def __init__(self, graph: ContextGraph) -> None:
        self._graph = graph
        self.version = graph.version
        self.token_cache: NodeTokenCache = graph.token_cache

    def units(self) -> tuple[Unit, ...]:
        return self._graph.units()

    def __getitem__(self, node_id: str) -> Node:
        return self._graph[node_id]

    def answer_to(self, call_node_id: str) -> Node | None:
        return self._graph.answer_to(call_node_id)

    def first_call_with_id(self, tool_call_id: str) -> str | None:
        return self._graph.first_call_with_id(tool_call_id)


def _grow(graph: ContextGraph, turn: int, words: int) -> None:
    graph.add_user(f"question {turn} " + "word " * words)
    graph.add_assistant(
        f"answer {turn}", tool_calls=[{"id": f"c{turn}", "name": "bash", "arguments": "{}"}]
    )
    graph.add_tool_result(f"c{turn}", "output " * (words * 2))


def _render(renderer: Renderer, source: object, budget: int | None) -> RenderResult | str:
    try:
        return renderer.render(source, budget=budget)  # type: ignore[arg-type]
    except BudgetExceededError as exc:
        return f"exceeded {exc.budget} {exc.required}"


def _same(a: RenderResult | str, b: RenderResult | str) -> None:
    if isinstance(a, str) or isinstance(b, str):
        assert a == b
        return
    assert (a.payload, a.tokens, a.tokens_before, a.budget, a.units, a.dropped) == (
        b.payload,
        b.tokens,
        b.tokens_before,
        b.budget,
        b.units,
        b.dropped,
    )
    assert dict(a.call_ids) == dict(b.call_ids)


STEPS = st.lists(
    st.one_of(
        st.tuples(st.just("grow"), st.integers(1, 40)),
        st.tuples(st.just("render"), st.none() | st.integers(20, 900)),
        st.tuples(st.just("usage"), st.floats(0.8, 1.3)),
    ),
    min_size=1,
    max_size=25,
)


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("refit", [None, 0.6])
@settings(max_examples=100, deadline=None)
@given(steps=STEPS)
def test_budgets_of_one_version_render_as_if_alone(
    fmt: ProviderFormat, refit: float | None, steps: list[tuple[str, object]]
) -> None:
    """A renderer reusing a version's work returns what a renderer without reuse does."""
    graph = ContextGraph(counter=WordCounter())
    graph.add_system("rules")
    _grow(graph, 0, 5)
    marks = fmt == "anthropic"
    shared = Renderer(format=fmt, refit_to=refit, calibrator=Calibrator(), cache_breakpoints=marks)
    alone = Renderer(format=fmt, refit_to=refit, calibrator=Calibrator(), cache_breakpoints=marks)
    turn = 1
    last: RenderResult | None = None
    # The same call as the last successful one returns its cached result, in both.
    previous: tuple[tuple[int, int | None, float], _Each] | None = None
    for action, value in steps:
        if action == "grow":
            assert isinstance(value, int)
            _grow(graph, turn, value)
            turn += 1
        elif action == "render":
            assert value is None or isinstance(value, int)
            got = _render(shared, graph, value)
            key = (graph.version, value, alone.calibrator.factor if alone.calibrator else 1.0)
            each = previous[1] if previous is not None and previous[0] == key else _Each(graph)
            expected = _render(alone, each, value)
            _same(got, expected)
            if isinstance(expected, RenderResult):  # a refused render caches nothing
                previous = (key, each)
            last = got if isinstance(got, RenderResult) else last
        elif last is not None:
            assert isinstance(value, float)
            reported = max(1, round(last.tokens * value))
            shared.observe_usage(last, reported)
            alone.observe_usage(last, reported)


def test_the_budgeted_render_reuses_the_unbudgeted_assembly() -> None:
    """When the whole history fits, the budgeted render carries the very same payload."""
    graph = ContextGraph(counter=WordCounter())
    graph.add_system("rules")
    _grow(graph, 0, 5)
    renderer = Renderer(format="openai", refit_to=0.6)
    whole = renderer.render(graph)
    fitted = renderer.render(graph, budget=whole.tokens)
    assert fitted.payload is whole.payload
    assert (fitted.budget, fitted.dropped) == (whole.tokens, ())


class _Compacted(_Each):
    """The graph with one processor summary standing for its first `covered` units."""

    def __init__(self, graph: ContextGraph, covered: int, version: int) -> None:
        super().__init__(graph)
        self.version = version
        units = graph.units()
        hidden = [node_id for unit in units[1 : 1 + covered] for node_id in unit.node_ids]
        self.summary = SummaryNode(
            id="summary-x", content=(TextPart(text="what came before"),), abstracts=tuple(hidden)
        )
        self._units = (
            units[0],
            Unit(self.summary.id, "summary", (self.summary.id,)),
            *units[1 + covered :],
        )
        self.lookups: dict[str, int] = {}

    def units(self) -> tuple[Unit, ...]:
        return self._units

    def __getitem__(self, node_id: str) -> Node:
        self.lookups[node_id] = self.lookups.get(node_id, 0) + 1
        if node_id == self.summary.id:
            return self.summary
        return super().__getitem__(node_id)


class TestSummariesAcrossVersions:
    """A summary's abstracted nodes are walked once, not at every new version."""

    def test_a_later_version_does_not_look_up_every_abstracted_node_again(self) -> None:
        """The summaries among a summary's abstracts are found once per summary node."""
        graph = ContextGraph(counter=WordCounter())
        graph.add_system("be brief")
        for turn in range(40):
            _grow(graph, turn, 3)
        renderer = Renderer(format="openai")
        source = _Compacted(graph, 90, version=1)
        hidden = source.summary.abstracts
        renderer.render(source)  # type: ignore[arg-type]
        first = sum(source.lookups.get(node_id, 0) for node_id in hidden)
        source.lookups.clear()
        source.version = 2  # a new event elsewhere: the same summary node again
        again = renderer.render(source)  # type: ignore[arg-type]
        assert first >= len(hidden)
        assert sum(source.lookups.get(node_id, 0) for node_id in hidden) < len(hidden)
        assert "what came before" in str(again.payload)
