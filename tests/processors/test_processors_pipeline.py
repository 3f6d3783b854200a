"""Every built-in processor on real sessions: its proposal passes the invariant checker,
lands in the working graph, and every render afterwards is still valid and smaller."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from context_graph import ContextGraph
from context_graph.graph.nodes import AnswerNode, Node
from context_graph.importers import load_sessions
from context_graph.render import FORMATS, Renderer
from context_graph.testing import graph_snapshot
from context_graph.validate.request import validate
from orchestrator import WorkingGraph
from processors import (
    Distiller,
    HistorySummarizer,
    ObservationMasker,
    ProcessorContext,
    ToolOutputTruncator,
    UrlShortener,
)

TRACES = Path(__file__).resolve().parents[2].parent / "shared" / "traces"
SESSIONS = [
    TRACES / "claude_code" / "marot_spotter" / "tool_heavy.jsonl",
    TRACES
    / "mini_swe_agent_deepseek"
    / "deepseek_chat_test_1-100"
    / "django__django-11910"
    / "django__django-11910.traj.json",
    TRACES / "tau_bench_gpt4o_airline" / "gpt-4o-airline.sample12.json",
]


def _answers(working: WorkingGraph) -> list[Node]:
    return [
        working[i]
        for u in working.units()
        for i in u.node_ids
        if isinstance(working[i], AnswerNode)
    ]


def _first_half(working: WorkingGraph) -> list[Node]:
    units = [u for u in working.units() if u.kind not in {"system", "note"}]
    nodes = [working[i] for u in units[: len(units) // 2] for i in u.node_ids]
    return [] if any(n.pinned for n in nodes) else nodes


PROCESSORS: list[tuple[Any, Any]] = [
    (ToolOutputTruncator(max_tokens=300), _answers),
    (ObservationMasker(keep_turns=1, min_tokens=20), _answers),
    (Distiller(level="medium", min_tokens=50), _answers),
    (UrlShortener(), _answers),
    (HistorySummarizer(), _first_half),
]


@pytest.mark.slow
@pytest.mark.parametrize("path", [p for p in SESSIONS if p.exists()], ids=lambda p: p.name)
def test_each_processor_lands_and_keeps_renders_valid(path: Path) -> None:
    """Proposals pass the invariants, shrink the view, and leave the pristine record alone."""
    graph = ContextGraph()
    graph.ingest(load_sessions(path)[0].events)
    pristine = graph_snapshot(graph)
    working = WorkingGraph(graph)
    applied = 0
    for processor, pick in PROCESSORS:
        targets = pick(working)
        if not targets:
            continue
        ctx = ProcessorContext(graph=working.snapshot(), tokens=working.token_cache)
        proposal = anyio.run(processor.propose, targets, ctx)
        if proposal.empty:
            continue
        before = {fmt: Renderer(format=fmt).render(working).tokens for fmt in FORMATS}
        working.apply(proposal)
        applied += 1
        for fmt in FORMATS:
            result = Renderer(format=fmt).render(working)
            assert validate(result.payload, fmt) == [], (processor.name, fmt)
            assert result.tokens < before[fmt], (processor.name, fmt)
    assert applied >= 1
    assert graph_snapshot(graph) == pristine
    for entry in working.audit():
        for added in entry.added:
            assert working.expand(added)


@pytest.mark.skipif(not SESSIONS[1].exists(), reason="shared traces not present")
def test_summaries_roll_over_a_masked_working_view() -> None:
    """After masking, the summarizer plans over replaced nodes and then updates its summary."""
    graph = ContextGraph()
    graph.ingest(load_sessions(SESSIONS[1])[0].events)
    working = WorkingGraph(graph)
    masker = ObservationMasker(keep_turns=None, mask_consumed=True, min_tokens=10)
    ctx = ProcessorContext(graph=working.snapshot(), tokens=working.token_cache)
    working.apply(anyio.run(masker.propose, _answers(working), ctx))
    notes = []
    for _ in range(2):
        units = [u for u in working.units() if u.kind not in {"system", "note"}]
        span = [working[i] for u in units[1 : len(units) // 2] for i in u.node_ids]
        assert any(node.replaces for node in span) or notes
        ctx = ProcessorContext(graph=working.snapshot(), tokens=working.token_cache)
        proposal = anyio.run(HistorySummarizer().propose, span, ctx)
        assert not proposal.empty, proposal.note
        working.apply(proposal)
        notes.append(proposal.note)
    assert "updates summary-" in notes[1]
    for fmt in FORMATS:
        assert validate(Renderer(format=fmt).render(working).payload, fmt) == []
