"""`FragmentCache` walks only the units after those a source's previous version shared.

A render after one new event must not look at every unit of a long history again, and
what it returns must be what a walk of every unit (a cache that shares nothing) returns,
whatever the events: summaries, notes, system prompts, other providers' compactions,
and views that hide units in the middle.
"""

from __future__ import annotations

from typing import Any, cast

from hypothesis import given, settings
from hypothesis import strategies as st

from context_graph import ContextGraph
from context_graph.graph.content import TextPart
from context_graph.graph.events import (
    AgentEvent,
    AssistantTurn,
    Compaction,
    Note,
    SystemPrompt,
    ToolCall,
    ToolResult,
    UserTurn,
)
from context_graph.graph.native import NativeCompaction
from context_graph.graph.nodes import Node, SummaryNode, UserNode
from context_graph.graph.units import Unit
from context_graph.render import FORMATS, PROVIDER_RENDERERS
from context_graph.render.fragments import FragmentCache, Fragments
from context_graph.testing import WordCounter
from context_graph.tokens.counting import ProviderFormat


class HiddenView:
    """A graph with some units hidden, the way a working view leaves units out."""

    def __init__(self, graph: ContextGraph) -> None:
        self.graph = graph
        self.hidden: set[str] = set()
        self.token_cache = graph.token_cache

    @property
    def version(self) -> int:
        return self.graph.version + len(self.hidden)

    def units(self) -> tuple[Unit, ...]:
        return tuple(u for u in self.graph.units() if u.head not in self.hidden)

    def __getitem__(self, node_id: str) -> Node:
        return self.graph[node_id]

    def answer_to(self, call_node_id: str) -> Node | None:
        return self.graph.answer_to(call_node_id)

    def first_call_with_id(self, tool_call_id: str) -> str | None:
        return self.graph.first_call_with_id(tool_call_id)


class _Reads:
    """A unit that counts how often its kind is read (every walk of it reads it)."""

    def __init__(self, unit: Unit, reads: list[int]) -> None:
        self._unit = unit
        self._reads = reads
        self.head = unit.head
        self.node_ids = unit.node_ids

    @property
    def kind(self) -> str:
        self._reads[0] += 1
        return self._unit.kind


class _Counted(HiddenView):
    """A view whose units count the reads of their kind; each graph unit keeps one wrapper."""

    def __init__(self, graph: ContextGraph) -> None:
        super().__init__(graph)
        self.reads = [0]
        self._wrapped: dict[int, tuple[Unit, _Reads]] = {}

    def units(self) -> tuple[Unit, ...]:
        out: list[Any] = []
        for unit in self.graph.units():
            known = self._wrapped.get(id(unit))
            if known is None or known[0] is not unit:
                known = self._wrapped[id(unit)] = (unit, _Reads(unit, self.reads))
            out.append(known[1])
        return tuple(out)


def _shape(made: Fragments) -> tuple[object, ...]:
    fragments = [
        (f.source_unit, f.messages, f.cost, f.fit, f.calls, f.signed_secrets)
        for f in made.fragments
    ]
    return fragments, made.system, made.system_key, made.foreign


def ingest_if_valid(graph: ContextGraph, event: AgentEvent) -> bool:
    """Ingest `event`; `False` when the graph refuses it (a result with no call, say),
    and then nothing was added."""
    try:
        graph.ingest([event])
    except ValueError:
        return False
    return True


def add_turn(graph: ContextGraph, k: int, words: int) -> None:
    """A user turn, a call and its output, each of about `words` words."""
    graph.add_user(f"question {k} " + "word " * words)
    graph.add_assistant(f"answer {k}", tool_calls=[{"id": f"c{k}", "name": "bash"}])
    graph.add_tool_result(f"c{k}", "output " * words)


class TestWalk:
    def test_a_render_after_one_turn_reads_only_the_new_units(self) -> None:
        """After one more turn, the walk reads the kind of the new units, not of all 40."""
        graph = ContextGraph(counter=WordCounter())
        graph.add_system("rules")
        for k in range(20):
            add_turn(graph, k, 3)
        view = _Counted(graph)
        cache = FragmentCache(PROVIDER_RENDERERS["openai"])
        cache.fragments_of(view, graph.token_cache)
        assert view.reads[0] > 40  # the first walk reads every unit
        view.reads[0] = 0
        add_turn(graph, 20, 3)
        made = cache.fragments_of(view, graph.token_cache)
        assert view.reads[0] <= 3
        expected = FragmentCache(PROVIDER_RENDERERS["openai"]).fragments_of(
            HiddenView(graph), graph.token_cache
        )
        assert _shape(made)[1:] == _shape(expected)[1:]
        assert [f.messages for f in made.fragments] == [f.messages for f in expected.fragments]

    def test_a_summary_after_the_shared_units_walks_every_unit(self) -> None:
        """A compaction among the new units covers old ones: the walk starts over."""
        graph = ContextGraph(counter=WordCounter())
        for k in range(5):
            add_turn(graph, k, 2)
        view = _Counted(graph)
        cache = FragmentCache(PROVIDER_RENDERERS["openai"])
        cache.fragments_of(view, graph.token_cache)
        view.reads[0] = 0
        graph.ingest([Compaction(content="all of it so far")])
        made = cache.fragments_of(view, graph.token_cache)
        assert view.reads[0] >= len(graph.units())
        assert [f.source_unit.kind for f in made.fragments] == ["summary"]


_CALLS = st.sampled_from(["a", "b", "c"])
_NATIVE = NativeCompaction(
    provider="anthropic", item={"type": "compaction", "content": "earlier work"}
)
PLAIN_EVENTS = st.one_of(
    st.builds(UserTurn, content=st.sampled_from(["hi", "more words here", "x"])),
    st.builds(
        AssistantTurn,
        content=st.sampled_from(["ok", "let me look"]),
        tool_calls=st.lists(st.builds(ToolCall, id=_CALLS, name=st.just("bash")), max_size=2).map(
            tuple
        ),
    ),
    st.builds(ToolResult, call_id=_CALLS, content=st.sampled_from(["out", "an error"])),
    st.builds(Note, content=st.sampled_from(["remember", "note two"])),
    st.builds(SystemPrompt, content=st.just("be brief")),
    st.builds(Compaction, content=st.sampled_from(["summary one", "summary two"])),
)
"""Every kind of event but a provider's own compaction."""
_EVENT = st.one_of(PLAIN_EVENTS, st.just(Compaction(content="the provider's", native=_NATIVE)))
_STEP = st.one_of(
    st.tuples(st.just("event"), _EVENT),
    st.tuples(st.just("hide"), st.integers(0, 30)),
    st.tuples(st.just("show"), st.just(0)),
)


class TestProperties:
    @settings(max_examples=150, deadline=None)
    @given(
        fmt=st.sampled_from(FORMATS),
        steps=st.lists(_STEP, min_size=1, max_size=40),
    )
    def test_the_walk_of_new_units_gives_what_a_walk_of_all_gives(
        self, fmt: ProviderFormat, steps: list[tuple[str, object]]
    ) -> None:
        """After every step, the reusing cache's fragments equal a fresh cache's."""
        graph = ContextGraph(counter=WordCounter())
        view = HiddenView(graph)
        cache = FragmentCache(PROVIDER_RENDERERS[fmt])
        for action, value in steps:
            if action == "event":
                if not ingest_if_valid(graph, cast(AgentEvent, value)):
                    continue
            elif action == "hide":
                units = graph.units()
                if units:
                    view.hidden.add(units[cast(int, value) % len(units)].head)
            else:
                view.hidden.clear()
            made = cache.fragments_of(view, graph.token_cache)
            fresh = FragmentCache(PROVIDER_RENDERERS[fmt]).fragments_of(view, graph.token_cache)
            assert _shape(made) == _shape(fresh)


def _summary(node_id: str, abstracts: tuple[str, ...], seq: int | None = None) -> Node:
    return SummaryNode(id=node_id, abstracts=abstracts, seq=seq)


class _Nodes(dict[str, Node]):
    """A source of nodes by id that counts its lookups."""

    lookups = 0

    def __getitem__(self, node_id: str) -> Node:
        self.lookups += 1
        return super().__getitem__(node_id)


class TestCoveredForeign:
    """The search for foreign compactions under summaries does not redo what it knows."""

    def test_a_chain_of_summaries_is_searched_once(self) -> None:
        """Summary of summary of ... : the next render looks up only the newest one."""
        nodes = _Nodes(p=UserNode(id="p", content=(TextPart(text="hi"),), seq=0))
        nodes["s0"] = _summary("s0", ("p",))
        for k in range(1, 60):
            nodes[f"s{k}"] = _summary(f"s{k}", (f"s{k - 1}",))
        cache = FragmentCache(PROVIDER_RENDERERS["openai"])
        assert cache._covered_foreign(cast(Any, nodes), ["s59"]) == []
        assert nodes.lookups > 60  # the first search goes down the whole chain
        nodes.lookups = 0
        nodes["s60"] = _summary("s60", ("s59",))
        assert cache._covered_foreign(cast(Any, nodes), ["s60"]) == []
        assert nodes.lookups <= 3

    def test_a_foreign_compaction_under_the_chain_is_found_every_time(self) -> None:
        """Nothing is remembered as clean while something foreign is under it."""
        imported = SummaryNode(id="c", seq=0, native=_NATIVE)
        nodes = _Nodes(c=imported, s0=_summary("s0", ("c",)), s1=_summary("s1", ("s0",)))
        cache = FragmentCache(PROVIDER_RENDERERS["openai"])
        for _ in range(3):
            assert cache._covered_foreign(cast(Any, nodes), ["s1"]) == [(imported, _NATIVE)]

    @settings(max_examples=150, deadline=None)
    @given(
        fmt=st.sampled_from(FORMATS),
        shapes=st.lists(
            st.tuples(st.lists(st.integers(0, 40), max_size=3), st.booleans()), max_size=25
        ),
        searches=st.lists(st.lists(st.integers(0, 40), min_size=1, max_size=3), max_size=12),
        foreign_at=st.sets(st.integers(0, 4), max_size=2),
    )
    def test_searches_in_turn_find_what_a_fresh_search_finds(
        self,
        fmt: ProviderFormat,
        shapes: list[tuple[list[int], bool]],
        searches: list[list[int]],
        foreign_at: set[int],
    ) -> None:
        """Summaries over earlier summaries and imported compactions (some foreign), grown
        and searched in turn: each search equals one by a cache that knows nothing."""
        nodes = _Nodes()
        for k in range(5):
            native = _NATIVE if k in foreign_at else None
            nodes[f"i{k}"] = SummaryNode(id=f"i{k}", seq=k, native=native)
        ids = list(nodes)
        cache = FragmentCache(PROVIDER_RENDERERS[fmt])
        searched = 0
        for picks, search_now in shapes:
            node_id = f"s{len(ids)}"
            nodes[node_id] = _summary(node_id, tuple(ids[p % len(ids)] for p in picks))
            ids.append(node_id)
            if search_now and searched < len(searches):
                tops = [ids[p % len(ids)] for p in searches[searched]]
                searched += 1
                fresh = FragmentCache(PROVIDER_RENDERERS[fmt])
                expected = fresh._covered_foreign(cast(Any, nodes), tops)
                assert sorted(n.id for n, _ in cache._covered_foreign(cast(Any, nodes), tops)) == (
                    sorted(n.id for n, _ in expected)
                )
