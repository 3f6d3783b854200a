"""Where the last request ended survives a resume and a hand-over between workers.

A renderer with cache marks marks the end of the part of its request that the previous
request also sent, so the provider reads it from its cache. It compares with the units of
the request it rendered last (`Renderer.previous_units`). Before, that memory lived only
in the process: a session reopened from its file (or a worker that took over a shared
session) sent its first request without the mark, and the provider wrote the whole prefix
to its cache again. The units are now kept with the session (`cache_marks`).
"""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from context_graph import ContextGraph
from context_graph.errors import ConfigurationError, StoreCorruptError
from context_graph.render import Renderer
from context_graph.testing import WordCounter
from orchestrator import ContextManager
from orchestrator.compaction.renderers import RendererCache
from orchestrator.persistence import open_store
from orchestrator.policy import Policy
from tests.orchestrator.marked_sessions import add_step, marked_messages, start_task
from tests.orchestrator.policy_keywords import open_manager

_CLOCK = lambda: 1_700_000_000.0  # noqa: E731  (a fixed clock for the audit log)


def _open(location: str | Path) -> ContextManager:
    return open_manager(
        location,
        format="anthropic",
        budget=100_000,
        counter=WordCounter(),
        durable=False,
        clock=_CLOCK,
        policy=Policy(cache_breakpoints=True),
    )


def _uninterrupted(steps: int) -> dict[str, Any]:
    """The last request of a manager that made every call in one process."""
    manager = ContextManager(
        format="anthropic",
        budget=100_000,
        counter=WordCounter(),
        clock=_CLOCK,
        policy=Policy(cache_breakpoints=True),
    )
    start_task(manager)
    payload: dict[str, Any] = {}
    for n in range(steps):
        add_step(manager, n)
        payload = manager.render_sync().payload
    return payload


class TestResume:
    def test_the_first_request_after_a_resume_marks_where_the_last_one_ended(
        self, tmp_path: Path
    ) -> None:
        path = tmp_path / "session.db"
        first = _open(path)
        start_task(first)
        for n in range(3):
            add_step(first, n)
            sent = first.render_sync().payload
        first.close()
        again = _open(path)
        try:
            add_step(again, 3)
            payload = again.render_sync().payload
        finally:
            again.close()
        assert marked_messages(payload) == [len(sent["messages"]) - 1, len(payload["messages"]) - 1]
        assert payload == _uninterrupted(4)

    def test_the_units_are_stored_with_marks_only(self, tmp_path: Path) -> None:
        """A session with marks keeps its last request's units; one without keeps none
        (its state has the keys it always had)."""
        stored = {}
        for marks in (True, False):
            path = tmp_path / f"session-{marks}.db"
            manager = open_manager(
                path,
                format="anthropic",
                counter=WordCounter(),
                durable=False,
                clock=_CLOCK,
                policy=Policy(cache_breakpoints=marks),
            )
            start_task(manager)
            add_step(manager, 0)
            manager.render_sync()
            manager.close()
            with contextlib.closing(open_store(path, counter=WordCounter())) as store:
                stored[marks] = store.restore(clock=_CLOCK).state
        units = stored[True]["cache_marks"]
        assert isinstance(units, dict) and len(units["anthropic"]) == 2  # type: ignore[arg-type]
        assert "cache_marks" not in stored[False]


class TestSharedSession:
    def test_a_worker_marks_where_the_other_workers_request_ended(self, postgres: Any) -> None:
        """B renders after A: B's request marks the end of A's, as the provider cached it."""
        location = postgres.location("cm")
        a, b = _open(location), _open(location)
        try:
            start_task(a)
            for n in range(3):
                add_step(a, n)
                sent = a.render_sync().payload
            b.refresh()
            add_step(b, 3)
            payload = b.render_sync().payload
        finally:
            a.close()
            b.close()
        assert marked_messages(payload) == [len(sent["messages"]) - 1, len(payload["messages"]) - 1]
        assert payload == _uninterrupted(4)


def _rendered_cache() -> RendererCache:
    cache = RendererCache(refit_to=0.7, cache_breakpoints=True)
    graph = ContextGraph(counter=WordCounter())
    graph.add_system("be brief")
    graph.add_user("hello")
    graph.add_assistant("hi")
    cache.get("anthropic").render(graph)
    return cache


class TestState:
    def test_the_units_load_back_into_a_fresh_cache(self) -> None:
        values = json.loads(json.dumps(_rendered_cache().state()))
        assert values["cache_marks"]["anthropic"]
        fresh = RendererCache(refit_to=0.7, cache_breakpoints=True)
        fresh.load(values)
        assert fresh.state() == values

    def test_without_marks_nothing_is_stored_or_taken(self) -> None:
        values = _rendered_cache().state()
        plain = RendererCache(refit_to=0.7, cache_breakpoints=False)
        plain.load(values)
        assert "cache_marks" not in plain.state()
        assert plain.get("anthropic").previous_units == ()

    @pytest.mark.parametrize(
        "bad",
        [
            [],
            {"telex": [["a"]]},
            {"anthropic": "a"},
            {"anthropic": [[]]},
            {"anthropic": [["a", 1]]},
            {"anthropic": [["a", ""]]},
            {"anthropic": ["ab"]},
        ],
    )
    def test_a_bad_value_is_refused_and_changes_nothing(self, bad: object) -> None:
        cache = _rendered_cache()
        before = cache.state()
        values = {**before, "cache_marks": bad, "calibration": {"factor": 1.5, "observations": 3}}
        with pytest.raises((ConfigurationError, StoreCorruptError, TypeError, ValueError)):
            cache.load(values)
        assert cache.state() == before


class TestRenderer:
    @settings(max_examples=50, deadline=None)
    @given(
        units=st.lists(
            st.lists(st.text(min_size=1, max_size=6), min_size=1, max_size=3), max_size=5
        )
    )
    def test_resumed_units_are_the_units_it_hands_back(self, units: list[list[str]]) -> None:
        renderer = Renderer(format="anthropic", cache_breakpoints=True)
        renderer.resume_previous_units(units)
        assert renderer.previous_units == tuple(tuple(u) for u in units)

    @pytest.mark.parametrize("bad", ["ab", [["a"], "b"], [[]], [[1]], [["a", ""]], 3])
    def test_a_bad_value_is_refused(self, bad: Any) -> None:
        renderer = Renderer(format="anthropic", cache_breakpoints=True)
        renderer.resume_previous_units([["kept"]])
        with pytest.raises(ConfigurationError, match="resume_previous_units"):
            renderer.resume_previous_units(bad)
        assert renderer.previous_units == (("kept",),)

    def test_without_marks_nothing_is_kept(self) -> None:
        renderer = Renderer(format="anthropic")
        renderer.resume_previous_units([["a"]])
        assert renderer.previous_units == ()
