from __future__ import annotations

import json

import pytest

from context_graph.errors import ConfigurationError
from context_graph.examples import EXAMPLE_SESSION
from context_graph.graph.context_graph import ContextGraph
from context_graph.importers import load_sessions
from context_graph.render import Renderer
from orchestrator.manager import ContextManager
from orchestrator.policy import Policy

#: The refusal names the formats that take marks, read from the registry.
_ONLY_MARKING = r"needs a format that takes prompt-cache marks \(anthropic\)"


def _marks(payload: object) -> int:
    """How many `cache_control` marks a request body carries."""
    return json.dumps(payload).count('"cache_control"')


class TestCacheBreakpoints:
    def test_manager_render_carries_the_renderers_marks(self) -> None:
        """A manager with breakpoints renders exactly what a breakpoint Renderer does."""
        events = load_sessions(EXAMPLE_SESSION)[0].events
        manager = ContextManager(format="anthropic", policy=Policy(cache_breakpoints=True))
        manager.ingest(events)
        graph = ContextGraph()
        graph.ingest(events)
        expected = Renderer(format="anthropic", cache_breakpoints=True).render(graph).payload
        payload = manager.render_sync().payload
        assert payload == expected
        assert 1 <= _marks(payload) <= 4

    def test_off_by_default(self) -> None:
        """Without the option the manager's Anthropic body has no cache marks."""
        manager = ContextManager(format="anthropic", policy=Policy())
        manager.add_system("be brief")
        manager.add_user("hello")
        assert _marks(manager.render_sync().payload) == 0

    @pytest.mark.parametrize("fmt", ["openai", "gemini"])
    def test_another_format_is_refused_at_construction(self, fmt: str) -> None:
        """As the Renderer does, breakpoints with a format that takes no marks are refused."""
        with pytest.raises(ConfigurationError, match=_ONLY_MARKING):
            ContextManager(format=fmt, policy=Policy(cache_breakpoints=True))  # type: ignore[arg-type]
        with pytest.raises(ConfigurationError, match=_ONLY_MARKING):
            Renderer(format=fmt, cache_breakpoints=True)  # type: ignore[arg-type]

    def test_a_render_in_another_format_is_refused(self) -> None:
        """A render asked in another format refuses the marks as the Renderer would."""
        manager = ContextManager(format="anthropic", policy=Policy(cache_breakpoints=True))
        manager.add_user("hello")
        with pytest.raises(ConfigurationError, match=_ONLY_MARKING):
            manager.render_sync(format="openai")

    def test_not_a_bool_is_refused(self) -> None:
        """A value that is not a bool names the option."""
        with pytest.raises(ConfigurationError, match="cache_breakpoints"):
            ContextManager(format="anthropic", policy=Policy(cache_breakpoints="yes"))  # type: ignore[arg-type]
