"""Every shared trace renders valid in every format, at budgets from 2,000 to unlimited."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from context_graph import BudgetExceededError, ContextGraph
from context_graph.importers import load_graph, load_sessions
from context_graph.render import FORMATS, Renderer, count_payload
from context_graph.testing import graph_snapshot, strict_trace, trace_files
from context_graph.validate import validate

TRACES = Path(__file__).resolve().parents[3].parent / "shared" / "traces"
FILES = trace_files(TRACES)
BUDGETS = (None, 100_000, 32_000, 8_000, 4_000, 2_000)
SdkCheck = Callable[[Any, str], list[str]]


def _floor_heads(graph: ContextGraph) -> set[str]:
    """Heads of the units the floor must keep: the first and latest requests, the latest
    user turn (a request or a notice) on.

    Only units a render can show count: an imported compaction's summary stands for the
    units it abstracts. Notices (`UserNode.notice`) are not requests; a view with no
    request left anchors on its notices.
    """
    hidden = {i for u in graph.units() if u.kind == "summary" for i in graph[u.head].abstracts}
    units = [
        u
        for u in graph.units()
        if u.kind not in {"system", "note"} and not hidden.issuperset(u.node_ids)
    ]
    turns = [i for i, u in enumerate(units) if u.kind in {"user", "notice"}]
    requests = [i for i in turns if units[i].kind == "user"] or turns
    if not turns:
        return {units[-1].head} if units else set()
    kept = {units[requests[0]].head, units[requests[-1]].head}
    return kept | {u.head for u in units[turns[-1] :]}


@pytest.mark.slow
@pytest.mark.skipif(not FILES, reason="shared traces not present")
@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(TRACES)))
@pytest.mark.ingests_traces
def test_every_session_renders_valid(path: Path, sdk_check: SdkCheck) -> None:
    """Each render is valid, under budget, keeps the floor; or says what it would need."""
    for session in load_sessions(path, strict=strict_trace(path)):
        graph = ContextGraph()
        graph.ingest(session.events)
        before = graph_snapshot(graph)
        floor = _floor_heads(graph)
        for fmt in FORMATS:
            renderer = Renderer(format=fmt)
            for budget in BUDGETS:
                try:
                    result = renderer.render(graph, budget=budget)
                except BudgetExceededError as exc:
                    assert budget is not None and exc.required > budget
                    assert renderer.render(graph, budget=exc.required).tokens <= exc.required
                    continue
                where = f"{session.name} {fmt} budget={budget}"
                assert validate(result.payload, fmt) == [], where
                assert sdk_check(result.payload, fmt) == [], where
                assert result.tokens == count_payload(result.payload, fmt, graph.token_cache)
                assert budget is None or result.tokens <= budget, where
                assert not floor & set(result.dropped), where
        assert graph_snapshot(graph) == before


#: The importer that reads each format's request bodies back, where its name differs.
IMPORTER_OF = {"responses": "openai_responses"}


@pytest.mark.slow
@pytest.mark.skipif(not FILES, reason="shared traces not present")
@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("path", FILES[::3], ids=lambda p: str(p.relative_to(TRACES)))
@pytest.mark.ingests_traces
def test_rendered_history_ingests_and_renders_the_same(path: Path, fmt: str) -> None:
    """Ingesting a rendered request and rendering it again changes nothing."""
    graph = load_graph(path, strict=strict_trace(path))
    for budget in (None, 8_000):
        try:
            first = Renderer(format=fmt).render(graph, budget=budget)  # type: ignore[arg-type]
        except BudgetExceededError:
            continue
        again = load_graph(first.payload, format=IMPORTER_OF.get(fmt, fmt))
        second = Renderer(format=fmt).render(again, budget=budget)  # type: ignore[arg-type]
        assert second.to_json() == first.to_json()
