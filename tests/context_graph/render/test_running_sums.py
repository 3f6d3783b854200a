"""Each call's render of the whole view adds up only what is new since the previous call.

The sums behind the whole-view attempt (messages, costs, call ids, whether any unit has
signed secrets) are carried from one render to the next while the view's fragments
start with the previous view's; the result must be what a renderer that carries
nothing returns, in every format, whatever the view did in between: units hidden in
the middle, compactions, notes and system prompts, budgets that drop units.
"""

from __future__ import annotations

from collections.abc import Mapping
from itertools import pairwise
from typing import Any, cast

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from context_graph import BudgetExceededError, ContextGraph
from context_graph.graph.events import (
    AgentEvent,
)
from context_graph.graph.nodes import SIGNED_SECRETS, Node
from context_graph.graph.units import Unit
from context_graph.render import (
    FORMATS,
    PROVIDER_RENDERERS,
    AssemblyStats,
    Renderer,
    RenderResult,
)
from context_graph.render.fragments import Fragment, FragmentCache
from context_graph.render.running import RunningSums
from context_graph.testing import WordCounter
from context_graph.tokens.counting import ProviderFormat
from tests.context_graph.render.test_fragments_walk import (
    PLAIN_EVENTS,
    HiddenView,
    add_turn,
    ingest_if_valid,
)


class _View(HiddenView):
    """A graph with some units hidden and some nodes' meta set, as a working view has."""

    def __init__(self, graph: ContextGraph) -> None:
        super().__init__(graph)
        self.meta: dict[str, Mapping[str, Any]] = {}
        # A unit whose meta changed is a new unit object, as a working view's edit is.
        self.renewed: dict[str, tuple[Unit, Unit]] = {}
        self.steps = 0

    @property
    def version(self) -> int:
        return self.graph.version * 1000 + self.steps

    def units(self) -> tuple[Unit, ...]:
        return tuple(self._renewed(u) for u in super().units())

    def sign(self, unit: Unit) -> None:
        self.meta[unit.node_ids[-1]] = {SIGNED_SECRETS: {"api_key": 1}}
        self.renewed[unit.head] = (unit, Unit(unit.head, unit.kind, unit.node_ids))

    def _renewed(self, unit: Unit) -> Unit:
        known = self.renewed.get(unit.head)
        return known[1] if known is not None and known[0] is unit else unit

    def __getitem__(self, node_id: str) -> Node:
        node = self.graph[node_id]
        extra = self.meta.get(node_id)
        return node if extra is None else node.model_copy(update={"meta": dict(extra)})


def _outcome(renderer: Renderer, source: _View, budget: int | None) -> object:
    try:
        result = renderer.render(source, budget=budget)  # type: ignore[arg-type]
    except BudgetExceededError as exc:
        return ("exceeded", exc.budget, exc.required)
    return _shape(result)


def _shape(result: RenderResult) -> object:
    return (
        result.payload,
        result.tokens,
        result.tokens_before,
        result.units,
        result.dropped,
        list(result.call_ids.items()),
        dict(result.signed_secrets),
    )


class TestCounting:
    def test_a_render_after_one_turn_reads_the_calls_of_the_new_units_only(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """After one more turn of 41, the whole-view render reads the calls of its units only."""
        graph = ContextGraph(counter=WordCounter())
        graph.add_system("rules")
        for k in range(40):
            add_turn(graph, k, 3)
        renderer = Renderer(format="openai")
        renderer.render(graph)
        renderer.render(graph)  # the version is unchanged: the very same result
        reads = [0]
        slot = cast(Any, Fragment.__dict__["calls"])

        def read(fragment: Fragment) -> object:
            reads[0] += 1
            return slot.__get__(fragment, Fragment)

        monkeypatch.setattr(
            Fragment, "calls", property(read, lambda f, value: slot.__set__(f, value))
        )
        add_turn(graph, 40, 3)
        result = renderer.render(graph)
        assert result.units == 82  # a user unit and an assistant unit per turn
        assert reads[0] <= 3
        monkeypatch.undo()
        assert _shape(result) == _shape(Renderer(format="openai").render(graph))


_STEP = st.one_of(
    st.tuples(st.just("event"), PLAIN_EVENTS),
    st.tuples(st.just("event"), PLAIN_EVENTS),
    st.tuples(st.just("hide"), st.integers(0, 30)),
    st.tuples(st.just("show"), st.just(0)),
    st.tuples(st.just("sign"), st.integers(0, 30)),
    st.tuples(st.just("render"), st.none() | st.integers(0, 120)),
)


class TestProperties:
    @settings(max_examples=150, deadline=None)
    @given(
        fmt=st.sampled_from(FORMATS),
        marks=st.booleans(),
        steps=st.lists(_STEP, min_size=1, max_size=40),
    )
    def test_a_carried_render_equals_a_render_that_carries_nothing(
        self, fmt: ProviderFormat, marks: bool, steps: list[tuple[str, object]]
    ) -> None:
        """After every step, the renderer that carries sums renders what a new one does."""
        marks = marks and fmt == "anthropic"
        graph = ContextGraph(counter=WordCounter())
        view = _View(graph)
        carried = Renderer(format=fmt, cache_breakpoints=marks)
        # Cache marks depend on the previous render, so with marks the twin renders the
        # same sequence and only forgets the sums before each render; without, every
        # render is a new renderer's first.
        twin = Renderer(format=fmt, cache_breakpoints=marks)
        for action, value in steps:
            if action == "event":
                if not ingest_if_valid(graph, cast(AgentEvent, value)):
                    continue
            elif action in ("hide", "sign"):
                units = graph.units()
                if not units:
                    continue
                unit = units[cast(int, value) % len(units)]
                if action == "hide":
                    view.hidden.add(unit.head)
                else:
                    view.sign(unit)
                view.steps += 1
            elif action == "show":
                view.hidden.clear()
                view.steps += 1
            budget = cast("int | None", value) if action == "render" else None
            if marks:
                twin._sums = RunningSums(keys=True)
            else:
                twin = Renderer(format=fmt)
            assert _outcome(carried, view, budget) == _outcome(twin, view, budget)


class TestAssemblyContract:
    @settings(max_examples=100, deadline=None)
    @given(
        fmt=st.sampled_from(FORMATS),
        events=st.lists(PLAIN_EVENTS, max_size=25),
        cuts=st.lists(st.integers(0, 40), max_size=6),
    )
    def test_assemble_is_the_same_whatever_the_bounds_between_units(
        self, fmt: ProviderFormat, events: list[AgentEvent], cuts: list[int]
    ) -> None:
        """Every format assembles the same body from the same messages grouped any way."""
        graph = ContextGraph(counter=WordCounter())
        for event in events:
            ingest_if_valid(graph, event)
        provider = PROVIDER_RENDERERS[fmt]
        made = FragmentCache(provider).fragments_of(graph, graph.token_cache)
        units = [f.messages for f in made.fragments]
        flat = [m for unit in units for m in unit]
        bounds = sorted({0, len(flat), *(c % (len(flat) + 1) for c in cuts)})
        regrouped = [flat[a:b] for a, b in pairwise(bounds)]
        system = provider.system(made.system)
        plain, other = AssemblyStats(), AssemblyStats()
        body = provider.assemble(system, units, plain)
        assert provider.assemble(system, regrouped, other) == body
        assert other == plain
