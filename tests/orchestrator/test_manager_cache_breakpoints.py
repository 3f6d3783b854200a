from __future__ import annotations

import json

import pytest

from context_graph.errors import ConfigurationError
from context_graph.examples import EXAMPLE_SESSION
from context_graph.graph.context_graph import ContextGraph
from context_graph.importers import load_sessions
from context_graph.render import Renderer
from context_graph.testing import without_cache_marks
from orchestrator.manager import ContextManager
from orchestrator.policy import Policy
from tests.orchestrator.marked_sessions import add_step, marked_messages, start_task

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


def _strip(message: object) -> str:
    """A message without its cache marks, to compare two requests' messages."""
    return json.dumps(without_cache_marks(message), sort_keys=True)


def _started(budget: int) -> ContextManager:
    """A manager with cache marks, its session opened with the task."""
    manager = ContextManager(
        format="anthropic", budget=budget, policy=Policy(cache_breakpoints=True)
    )
    start_task(manager)
    return manager


class TestTheUnchangedPrefixMark:
    """The mark at the end of what the previous request also sent.

    The manager measures a request (and may weigh a trial render) before it renders the
    one it sends; the mark must compare with the request sent, not with a measurement
    (before, every manager render compared with its own measurement of the same state,
    so this mark never came)."""

    def test_each_request_marks_where_the_previous_one_ended(self) -> None:
        manager = _started(100_000)
        previous: list[str] = []
        for n in range(6):
            add_step(manager, n)
            payload = manager.render_sync().payload
            messages = [_strip(m) for m in payload["messages"]]
            if previous:
                assert messages[: len(previous)] == previous
                assert marked_messages(payload) == [len(previous) - 1, len(messages) - 1]
            previous = messages

    def test_the_same_as_a_renderer_rendering_once_per_call(self) -> None:
        """With room to spare nothing is compacted: the manager's body is, call after call,
        the body of a breakpoint `Renderer` that renders each state once."""
        manager = ContextManager(
            format="anthropic", budget=100_000, policy=Policy(cache_breakpoints=True)
        )
        renderer = Renderer(format="anthropic", cache_breakpoints=True)
        manager.add_user("Fix the failing test.")
        for n in range(4):
            add_step(manager, n)
            assert manager.render_sync().payload == renderer.render(manager.raw).payload

    def test_after_a_compaction_the_marks_follow_the_new_request(self) -> None:
        """Under pressure every request still carries at most four marks, the last block
        marked, and a mark where the unchanged part of the previous request ends."""
        manager = _started(2_500)
        previous: list[str] = []
        for n in range(30):
            add_step(manager, n)
            payload = manager.render_sync().payload
            messages = [_strip(m) for m in payload["messages"]]
            marked = marked_messages(payload)
            assert 1 <= _marks(payload) <= 4 and marked[-1] == len(messages) - 1
            same = 0
            while same < min(len(previous), len(messages)) and previous[same] == messages[same]:
                same += 1
            if previous and same == len(previous):
                assert len(previous) - 1 in marked
            previous = messages
