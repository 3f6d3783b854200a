"""The provider-renderer seam: every format is a `ProviderRenderer` in a read-only registry."""

from __future__ import annotations

import inspect
from typing import Any

import pytest

from context_graph import ContextGraph
from context_graph.errors import ConfigurationError
from context_graph.formats.registry import CACHE_MARKING_FORMATS
from context_graph.graph.node_tokens import NodeTokenCache
from context_graph.render import (
    FORMATS,
    PROVIDER_RENDERERS,
    CacheMarking,
    ProviderRenderer,
    Renderer,
    count_payload,
)
from context_graph.testing import WordCounter
from context_graph.tokens.counting import ProviderFormat

_PROTOCOL_METHODS = ("system", "unit_messages", "assemble", "count_messages", "count_payload")


def _parameters(function: Any) -> list[tuple[Any, bool]]:
    """Kind of each parameter and whether it has a default, `self` left out."""
    parameters = inspect.signature(function).parameters.values()
    return [(p.kind, p.default is not p.empty) for p in parameters if p.name != "self"]


def _unmarked(value: Any) -> Any:
    """`value` with every `cache_control` key taken out."""
    if isinstance(value, dict):
        return {k: _unmarked(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [_unmarked(v) for v in value]
    return value


def _session() -> ContextGraph:
    graph = ContextGraph(counter=WordCounter())
    graph.add_system("be brief")
    graph.add_user("list the files")
    graph.add_assistant("looking", tool_calls=[{"id": "c1", "name": "ls", "arguments": {}}])
    graph.add_tool_result("c1", "a.py b.py")
    graph.add_assistant("two files")
    return graph


class TestRegistry:
    def test_formats_are_the_registry_in_order(self) -> None:
        """`FORMATS` lists the registered formats, in the registry's order."""
        expected = ("openai", "anthropic", "gemini", "responses")
        assert FORMATS == tuple(PROVIDER_RENDERERS) == expected

    @pytest.mark.parametrize("fmt", FORMATS)
    def test_each_format_satisfies_the_protocol(self, fmt: ProviderFormat) -> None:
        """Each registered renderer is a `ProviderRenderer` named by its key."""
        provider = PROVIDER_RENDERERS[fmt]
        assert isinstance(provider, ProviderRenderer)
        assert provider.format == fmt
        marking = provider.cache_marking
        assert marking is None or isinstance(marking, CacheMarking)

    @pytest.mark.parametrize("fmt", FORMATS)
    def test_each_method_takes_the_protocols_parameters(self, fmt: ProviderFormat) -> None:
        """Every protocol method of a registered renderer takes the protocol's arguments."""
        provider = PROVIDER_RENDERERS[fmt]
        for name in _PROTOCOL_METHODS:
            expected = _parameters(getattr(ProviderRenderer, name))
            assert _parameters(getattr(provider, name))[: len(expected)] == expected, name

    def test_registry_is_read_only(self) -> None:
        """The registry cannot be changed at run time: no format is added or replaced."""
        registry: Any = PROVIDER_RENDERERS
        with pytest.raises(TypeError):
            registry["responses"] = registry["openai"]
        with pytest.raises(TypeError):
            del registry["openai"]
        assert tuple(PROVIDER_RENDERERS) == FORMATS


class TestRendererHoldsItsProvider:
    @pytest.mark.parametrize("fmt", FORMATS)
    def test_renderer_holds_the_registered_provider(self, fmt: ProviderFormat) -> None:
        """A `Renderer` holds the one `ProviderRenderer` of its format."""
        assert Renderer(format=fmt).provider is PROVIDER_RENDERERS[fmt]

    @pytest.mark.parametrize("fmt", FORMATS)
    def test_cache_breakpoints_need_a_cache_marking(self, fmt: ProviderFormat) -> None:
        """Breakpoints are accepted exactly for the formats whose renderer can mark a body."""
        if PROVIDER_RENDERERS[fmt].cache_marking is None:
            marking = ", ".join(CACHE_MARKING_FORMATS)
            refusal = rf"takes prompt-cache marks \({marking}\); format '{fmt}' takes none"
            with pytest.raises(ConfigurationError, match=refusal):
                Renderer(format=fmt, cache_breakpoints=True)
        else:
            assert Renderer(format=fmt, cache_breakpoints=True).format == fmt

    def test_unknown_format_names_the_registered_ones(self) -> None:
        """An unknown format is refused with the list of registered formats."""
        known = "expected one of openai, anthropic, gemini, responses"
        with pytest.raises(ConfigurationError, match=known):
            Renderer(format="bedrock")  # type: ignore[arg-type]

    @pytest.mark.parametrize("fmt", FORMATS)
    def test_tokens_are_the_providers_count_of_the_body(self, fmt: ProviderFormat) -> None:
        """A render's tokens are what its format's renderer counts in the body it returns."""
        graph = _session()
        result = Renderer(format=fmt).render(graph)
        cache = NodeTokenCache(WordCounter())
        assert result.tokens == PROVIDER_RENDERERS[fmt].count_payload(result.payload, cache)
        assert result.tokens == count_payload(result.payload, fmt, WordCounter())

    @pytest.mark.parametrize("fmt", [f for f in FORMATS if PROVIDER_RENDERERS[f].cache_marking])
    def test_marks_change_nothing_but_the_marks(self, fmt: ProviderFormat) -> None:
        """A body with cache breakpoints is the plain body plus marks, at the same cost."""
        graph = _session()
        plain = Renderer(format=fmt).render(graph)
        marked = Renderer(format=fmt, cache_breakpoints=True).render(graph)
        assert marked.payload != plain.payload
        assert _unmarked(marked.payload) == plain.payload
        assert marked.tokens == plain.tokens
