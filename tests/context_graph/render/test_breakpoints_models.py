"""Cache marks and a model's prompt-cache minimum: a mark only after a prefix that long."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from context_graph import ContextGraph
from context_graph.models import MODEL_LIMITS
from context_graph.render import Renderer, count_payload
from context_graph.testing import WordCounter

HAIKU = "claude-haiku-4-5-20251001"  # caches from 4,096 tokens
TOOLS = [{"name": "read_file", "description": "Read a file.", "input_schema": {"type": "object"}}]


def _graph(system_words: int, turns: int, words: int) -> ContextGraph:
    graph = ContextGraph(counter=WordCounter())
    graph.add_system(" ".join(["rule"] * system_words))
    for i in range(turns):
        graph.add_user(f"question {i} " + "word " * words)
        graph.add_assistant(f"answer {i} " + "word " * words)
    return graph


def _twice(renderer: Renderer, graph: ContextGraph) -> dict[str, Any]:
    """The second render of a session that grew by one turn (so the stable prefix is marked)."""
    renderer.render(graph)
    graph.add_user("one more question")
    return renderer.render(graph).payload


def _unmarked(payload: Any) -> Any:
    """`payload` with every `cache_control` taken out."""
    if isinstance(payload, dict):
        return {k: _unmarked(v) for k, v in payload.items() if k != "cache_control"}
    if isinstance(payload, list):
        return [_unmarked(v) for v in payload]
    return payload


class TestCacheMinimum:
    def test_below_the_minimum_nothing_is_marked(self) -> None:
        """A request shorter than the model caches carries no mark: the plain body."""
        graph = _graph(system_words=50, turns=3, words=20)
        payload = _twice(Renderer(format="anthropic", cache_breakpoints=True, model=HAIKU), graph)
        assert payload == Renderer(format="anthropic").render(graph).payload
        assert "cache_control" not in json.dumps(payload)

    def test_above_the_minimum_the_marks_are_kept(self) -> None:
        """A long enough prefix is marked exactly as without a model."""
        graph = _graph(system_words=5_000, turns=3, words=20)
        with_model = Renderer(format="anthropic", cache_breakpoints=True, model=HAIKU)
        without = Renderer(format="anthropic", cache_breakpoints=True)
        without.render(graph)
        payload = _twice(with_model, graph)
        assert payload == without.render(graph).payload
        assert json.dumps(payload).count("cache_control") == 3  # system, stable end, last

    def test_only_the_long_prefixes_are_marked(self) -> None:
        """A short system prompt goes unmarked; the end of a long history is marked."""
        graph = _graph(system_words=10, turns=2, words=3_000)
        payload = _twice(Renderer(format="anthropic", cache_breakpoints=True, model=HAIKU), graph)
        assert "cache_control" not in payload["system"][-1]
        assert "cache_control" in json.dumps(payload["messages"][-1])

    def test_an_unknown_model_keeps_every_mark(self) -> None:
        """A model without a known minimum marks as before."""
        graph = _graph(system_words=5, turns=2, words=5)
        plain = Renderer(format="anthropic", cache_breakpoints=True)
        plain.render(graph)
        unknown = Renderer(format="anthropic", cache_breakpoints=True, model="claude-next")
        payload = _twice(unknown, graph)
        assert payload == plain.render(graph).payload
        assert "cache_control" in payload["system"][-1]

    def test_short_tools_are_not_marked(self) -> None:
        """The tools' mark needs the tools alone to reach the minimum."""
        graph = _graph(system_words=5_000, turns=1, words=5)
        marked = Renderer(format="anthropic", cache_breakpoints=True, model=HAIKU, tools=TOOLS)
        payload = marked.render(graph).payload
        assert payload["tools"] == TOOLS
        plain = Renderer(format="anthropic", cache_breakpoints=True, tools=TOOLS)
        assert "cache_control" in plain.render(graph).payload["tools"][-1]


def _prefix_tokens(payload: dict[str, Any], where: tuple[int, int] | None) -> int:
    """Tokens of the request up to and including the block at `where` (None: the system)."""
    body = _unmarked(payload)
    messages = body["messages"]
    if where is None:
        cut: list[Any] = []
    else:
        i, j = where
        cut = [*messages[:i], {**messages[i], "content": messages[i]["content"][: j + 1]}]
    return count_payload({"system": body["system"], "messages": cut}, "anthropic", WordCounter())


def _marks(payload: dict[str, Any]) -> list[tuple[int, int] | None]:
    found: list[tuple[int, int] | None] = []
    if "cache_control" in payload["system"][-1]:
        found.append(None)
    for i, message in enumerate(payload["messages"]):
        found += [(i, j) for j, b in enumerate(message["content"]) if "cache_control" in b]
    return found


class TestCacheMinimumProperty:
    @settings(max_examples=40, deadline=None)
    @given(
        model=st.sampled_from(["claude-opus-5", "claude-sonnet-5", HAIKU]),
        system_words=st.integers(1, 3_000),
        sizes=st.lists(st.integers(0, 1_500), min_size=1, max_size=8),
        grow=st.integers(1, 3),
    )
    def test_no_mark_after_a_short_prefix(
        self, model: str, system_words: int, sizes: list[int], grow: int
    ) -> None:
        """Every mark ends a prefix at least as long as the model's cache minimum."""
        graph = ContextGraph(counter=WordCounter())
        graph.add_system(" ".join(["rule"] * system_words))
        renderer = Renderer(format="anthropic", cache_breakpoints=True, model=model)
        for round_ in range(grow):
            for k, size in enumerate(sizes):
                graph.add_user(f"q{round_}.{k} " + "word " * size)
                graph.add_assistant(f"a{round_}.{k} " + "word " * (size // 2))
            payload = renderer.render(graph).payload
            minimum = MODEL_LIMITS[model.removesuffix("-20251001")].cache_min_tokens
            assert minimum is not None
            for where in _marks(payload):
                assert _prefix_tokens(payload, where) >= minimum, where
