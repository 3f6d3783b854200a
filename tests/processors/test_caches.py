"""`processors.clear_caches`: the process-wide memos are emptied, and no answer changes."""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from typing import Any

import anyio
import pytest

import context_graph
import processors
from context_graph import ContextGraph, entities
from context_graph.caches import clear_caches as clear_data_layer_caches
from context_graph.entities import critical_entities
from context_graph.examples import EXAMPLE_SESSION
from context_graph.importers import load_graph
from processors import Distiller, HistorySummarizer, ProcessorContext, Proposal, clear_caches

TEXT = "Traceback: KeyError in src/app/main.py line 1234\nbooking ABC-1234 for user_id 99812"

# Memos keyed by something other than session text: the SDK's request types.
NOT_SESSION_MEMOS = frozenset({"benchmarks.sdk_types._fields"})


def _lru_caches() -> dict[str, Any]:
    """Every `functools.lru_cache` defined in the library's context_graph and processors."""
    found: dict[str, Callable[..., object]] = {}
    for package in (context_graph, processors):
        for info in pkgutil.walk_packages(package.__path__, f"{package.__name__}."):
            module = importlib.import_module(info.name)
            for name, value in vars(module).items():
                if hasattr(value, "cache_clear") and value.__module__ == module.__name__:
                    found[f"{module.__name__}.{name}"] = value
    return found


def _session_memo_sizes() -> dict[str, int]:
    caches = _lru_caches()
    return {
        name: caches[name].cache_info().currsize for name in sorted(set(caches) - NOT_SESSION_MEMOS)
    }


def _compact(graph: ContextGraph) -> tuple[Proposal, Proposal]:
    """Summarize the first half of the session and distill every answer: all memos fill."""
    units = graph.units()
    old = [graph[node_id] for unit in units[: len(units) // 2] for node_id in unit]
    answers = [graph[node_id] for node_id in graph.transcript() if graph[node_id].answers_call]
    ctx = ProcessorContext.for_graph(graph)
    summary = anyio.run(HistorySummarizer(timeout=30).propose, old, ctx)
    distilled = anyio.run(Distiller(level="heavy", min_tokens=0).propose, answers, ctx)
    # The example's brief quotes no tool output; a failed command's error item does.
    failing = ContextGraph()
    failing.add_user("run the tests")
    failing.add_assistant(
        "Running.", tool_calls=[{"id": "t1", "name": "bash", "arguments": '{"command": "pytest"}'}]
    )
    failing.add_tool_result(
        "t1", "FAILED tests/test_app.py::test_x - KeyError: 'user_id'", is_error=True
    )
    failing.add_user("thanks")
    nodes = list(failing)
    anyio.run(HistorySummarizer(timeout=30).propose, nodes, ProcessorContext.for_graph(failing))
    return summary, distilled


@pytest.fixture(name="graph")
def graph_fixture() -> ContextGraph:
    return load_graph(EXAMPLE_SESSION)


def test_clear_caches_knows_every_memo() -> None:
    """A new process-wide memo of session text must be cleared too (and filled below)."""
    assert set(_lru_caches()) - NOT_SESSION_MEMOS == {
        "context_graph.entities._entities",
        "processors.summarize.facts._shell_paths",
        "processors.summarize.facts._outcome",
        "processors.summarize.facts._failure_entities",
        "processors.summarize.facts._shows_content",
        "processors.summarize.lineage._flattened",
        "processors.summarize.lineage._words_of",
        "processors.distill.references._named",
        "processors.summarize.quoting.code_span",
        "processors.summarize.turns._decisions",
        "processors.summarize.turns._questions",
        "processors.summarize.updates._claim",
        "processors.summarize.updates._values",
    }


def test_every_memo_is_empty_after_clearing(graph: ContextGraph) -> None:
    """Compacting a real session fills every memo; `clear_caches` empties all of them."""
    clear_caches()
    _compact(graph)
    assert all(_session_memo_sizes().values()), _session_memo_sizes()
    assert entities._LINES  # the per-line memo of `critical_entities`, not an lru_cache
    clear_caches()
    assert set(_session_memo_sizes().values()) == {0}
    assert not entities._LINES


def test_the_data_layer_clears_its_own(graph: ContextGraph) -> None:
    """`context_graph.caches.clear_caches` empties the data layer's memo, not the processors'."""
    _compact(graph)
    clear_data_layer_caches()
    sizes = _session_memo_sizes()
    assert sizes.pop("context_graph.entities._entities") == 0
    assert all(sizes.values()), sizes


def test_answers_are_the_same_before_and_after(graph: ContextGraph) -> None:
    """A summary and a distillation made after clearing equal the ones made before."""
    clear_caches()
    first = critical_entities(TEXT)
    proposals = _compact(graph)
    clear_caches()
    assert critical_entities(TEXT) == first
    assert _compact(graph) == proposals
    assert "ABC-1234" in first
    assert "src/app/main.py" in first
