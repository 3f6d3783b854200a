"""The summarizer on real recorded sessions: shorter, request kept, entities kept, no calls."""

from __future__ import annotations

from pathlib import Path

import pytest

from context_graph import ContextGraph
from context_graph.entities import critical_entities, missing_entities
from context_graph.graph.nodes import Node, UserNode
from context_graph.importers import load_graph
from processors.base import Abstract, ProcessorContext, Proposal
from processors.summarize import ExtractiveSummarizer, HistorySummarizer
from processors.summarize.checks import find_tool_call_syntax, required_entities, tool_names_of

TRACES = Path(__file__).resolve().parents[2].parent / "shared" / "traces"
SESSIONS = [
    "tau_bench_gpt4o_airline/gpt-4o-airline.sample12.json",
    "tau2_bench_whissle_airline/airline_run1.sample4.json",
    "mini_swe_agent_deepseek/deepseek_chat_test_1-100/django__django-11910/django__django-11910.traj.json",
    "openhands_claude35_swebench_verified/llm_completions/astropy__astropy-12907",
    "claude_code/moredip_session-share/general-tool-calls.jsonl",
    "swe_agent/trajectories/demonstrations/replay__marshmallow-code__marshmallow-1867__function_calling__install-1",
]

pytestmark = pytest.mark.skipif(not TRACES.is_dir(), reason="shared traces are not available")


def _load(relative: str) -> ContextGraph:
    path = TRACES / relative
    if path.is_dir():
        (path,) = sorted(p for p in path.iterdir() if p.suffix in (".json", ".traj"))
    return load_graph(path)


def _run(graph: ContextGraph, start: int, stop: int) -> list[Node]:
    """Nodes of whole units from `start` up to `stop`, ending before any pinned unit."""
    nodes: list[Node] = []
    for unit in graph.units()[start:stop]:
        members = [graph[i] for i in unit]
        if any(n.pinned for n in members):
            if nodes:
                break
            continue
        nodes.extend(members)
    return nodes


def _edit(proposal: Proposal) -> Abstract:
    (edit,) = proposal.edits
    assert isinstance(edit, Abstract), proposal.note
    return edit


@pytest.mark.parametrize("session", SESSIONS, ids=lambda s: s.split("/")[0])
class TestFirstHalf:
    async def test_summary_of_the_first_half(self, session: str) -> None:
        """Shorter, first request verbatim, user-turn entities kept, no tool-call syntax."""
        graph = _load(session)
        nodes = _run(graph, 0, len(graph.units()) // 2)
        proposal = await HistorySummarizer().propose(nodes, ProcessorContext.for_graph(graph))
        text = _edit(proposal).summary.text

        original = sum(graph.tokens(n.id) for n in nodes)
        assert proposal.tokens_before == original
        assert proposal.tokens_after < original

        users = [n for n in nodes if isinstance(n, UserNode)]
        assert users[0].text.strip() in text

        user_entities = {e for n in users for e in critical_entities(n.text)}
        kept = len(user_entities) - len(missing_entities(user_entities, text))
        assert kept >= 0.95 * len(user_entities)
        assert missing_entities(required_entities(nodes), text) == []

        assert find_tool_call_syntax(text, tool_names_of(nodes)) == []

    async def test_rolling_update_on_the_second_half(self, session: str) -> None:
        """The second summary updates the first: the original request is still the goal."""
        graph = _load(session)
        half = len(graph.units()) // 2
        first_nodes = _run(graph, 0, half)
        processor = HistorySummarizer()
        first = _edit(await processor.propose(first_nodes, ProcessorContext.for_graph(graph)))
        graph.add_derived(first.summary)
        start = graph.units().index(graph.unit_of(first_nodes[-1].id)) + 1
        newer = _run(graph, start, len(graph.units()))
        edit = _edit(await processor.propose(newer, ProcessorContext.for_graph(graph)))
        assert edit.targets == (first.summary.id, *(n.id for n in newer))
        users = [n for n in first_nodes if isinstance(n, UserNode)]
        assert users[0].text.strip() in edit.summary.text
        carried = first.summary.meta["entities"]
        assert isinstance(carried, list)
        assert missing_entities([str(e) for e in carried], edit.summary.text) == []
        assert find_tool_call_syntax(edit.summary.text, tool_names_of(newer)) == []


def test_extractive_is_fast_on_the_largest_session() -> None:
    """A brief of a whole long session takes well under a second."""
    import time

    graph = _load("claude_code/moredip_session-share/general-tool-calls.jsonl")
    nodes = [graph[i] for i in graph.transcript()]
    started = time.perf_counter()
    ExtractiveSummarizer().brief(nodes)
    assert time.perf_counter() - started < 2.0
