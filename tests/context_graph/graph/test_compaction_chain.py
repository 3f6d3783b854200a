"""Imported compactions form a chain: each abstracts the nodes since the one before.

A compaction stands for every earlier transcript node, but holds links only to those since
the previous compaction, that one first, so n compactions cost a linear number of edges and
ids (n² before). Every reader gives the answers it gave when each compaction abstracted
every earlier node: renders are compared with those of a copy of the graph in that old
shape, and with digests recorded before the change on a real Claude Code trace.
"""

from __future__ import annotations

import hashlib
import itertools
import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from context_graph.errors import BudgetExceededError
from context_graph.graph.content import TextPart
from context_graph.graph.context_graph import ContextGraph
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
from context_graph.graph.nodes import SummaryNode
from context_graph.graph.stats import graph_stats
from context_graph.importers import load_events
from context_graph.render import FORMATS, Renderer, RenderSource
from context_graph.testing import WordCounter, graph_snapshot
from context_graph.tokens.counting import ProviderFormat

TRACES = Path(__file__).resolve().parents[3].parent / "shared" / "traces"
FASTHOOKS = TRACES / "claude_code" / "pypi_fasthooks-0.1.4" / "sample_main_transcript.jsonl"
needs_fasthooks = pytest.mark.skipif(not FASTHOOKS.exists(), reason="shared traces are absent")
_SESSION = {"sessionId": "s-1", "cwd": "/repo", "gitBranch": "main", "version": "2.1.0"}

# Renders of the spliced fasthooks trace (`_spliced_fasthooks`) with a `WordCounter`, as
# commit 74849a7 made them, before compactions were chained: sha256 of the payload (keys
# sorted), first 16 hex digits.
_RECORDED_RENDERS = {
    "openai/None": "72201a8cafda7b06",
    "openai/3000": "4c2802eb6d14b7f4",
    "openai/1500": "41888cb9e3b3b6ea",
    "openai/800": "4506bf92f9c57d78",
    "anthropic/None": "fac42d74ff28c9d7",
    "anthropic/3000": "5266aeabb2512a8c",
    "anthropic/1500": "72b2a98c9d9a92a7",
    "anthropic/800": "d624988b240cb816",
    "gemini/None": "f3e1de4e07ce6f40",
    "gemini/3000": "47ae65a1b587cae9",
    "gemini/1500": "187382efb283d0a6",
    "gemini/800": "f90079c6254890b2",
    # Recorded when the Responses format came (issue 17), after the chain.
    "responses/None": "1bb299da4e17afe0",
    "responses/3000": "8c9e5da5d53f10da",
    "responses/1500": "33ee05670e80f494",
    "responses/800": "c8afefce7b89b4d1",
}
# `graph_stats` of the same graph on 74849a7.
_RECORDED_STATS: dict[str, Any] = {
    "nodes": 43,
    "nodes_by_kind": {
        "assistant": 12,
        "file": 2,
        "summary": 3,
        "tool_call": 10,
        "tool_result": 8,
        "user": 8,
    },
    "total_tokens": 5045,
    "tokens_by_kind": {
        "assistant": 1170,
        "file": 130,
        "summary": 3348,
        "tool_call": 108,
        "tool_result": 201,
        "user": 88,
    },
    "units": 23,
    "user_turns": 5,
    "notices": 3,
    "tool_calls": 10,
    "tool_errors": 2,
    "unanswered_calls": [],
    "files_read": {"/workspace/hello_world.py": 1, "/workspace/data.txt": 1},
    "subagents": [],
}


# -- sessions ------------------------------------------------------------------------------


def _user_line(uuid: str, content: Any, **extra: Any) -> dict[str, Any]:
    message = {"role": "user", "content": content}
    return {"type": "user", "uuid": uuid, **_SESSION, "message": message, **extra}


def _claude_code_log(steps: int) -> Iterator[dict[str, Any]]:
    """A Claude Code log with `steps` compactions; every 10th step also runs a tool."""
    for i in range(steps):
        yield _user_line(f"u{i}", f"step {i}")
        if i % 10 == 0:
            use = {"type": "tool_use", "id": f"t{i}", "name": "Bash", "input": {"n": i}}
            message = {"id": f"m{i}", "role": "assistant", "model": "m", "content": [use]}
            yield {"type": "assistant", "uuid": f"a{i}", **_SESSION, "message": message}
            result = {"type": "tool_result", "tool_use_id": f"t{i}", "content": f"out {i}"}
            yield _user_line(f"r{i}", [result])
        yield {
            "type": "system",
            "subtype": "compact_boundary",
            "uuid": f"b{i}",
            "compactMetadata": {"trigger": "auto", "preTokens": 100},
            **_SESSION,
        }
        yield _user_line(f"s{i}", f"Summary {i}.", isCompactSummary=True)
    yield _user_line("last", "go on")


def _write(path: Path, records: Iterator[dict[str, Any]] | list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), "utf-8")
    return path


def _spliced_fasthooks(folder: Path) -> Path:
    """The fasthooks trace with its compaction copied to two earlier places: three in all.

    One copy comes after a finished exchange, the other between a turn's two tool calls
    and their results, so that a unit spans a compaction (its results come after it).
    """
    lines = FASTHOOKS.read_text("utf-8").splitlines()
    records = [json.loads(line) for line in lines]
    (at,) = [i for i, r in enumerate(records) if r.get("subtype") == "compact_boundary"]
    assert records[at + 1].get("isCompactSummary") is True
    assert records[24].get("subtype") == "stop_hook_summary"  # line 25: an exchange ended
    # Lines 37-40: the second of two tool calls, a snapshot, the first call's result.
    assert [records[i]["type"] for i in (37, 38, 39)] == [
        "assistant",
        "file-history-snapshot",
        "user",
    ]

    def copy(n: int) -> list[dict[str, Any]]:
        boundary, summary = json.loads(lines[at]), json.loads(lines[at + 1])
        boundary["uuid"] = f"{boundary['uuid']}-copy{n}"
        summary["uuid"] = f"{summary['uuid']}-copy{n}"
        summary["parentUuid"] = boundary["uuid"]
        summary["message"]["content"] = f"(earlier copy {n}) {summary['message']['content']}"
        return [boundary, summary]

    spliced = [*records[:25], *copy(1), *records[25:38], *copy(2), *records[38:]]
    # Copies spliced in are no part of the file's `parentUuid` chain: the importer would
    # take them for an abandoned branch (`_claude_code_branches`). Without the links the
    # file reads in file order, copies and all.
    unlinked = [{**r, "parentUuid": None} if "parentUuid" in r else r for r in spliced]
    return _write(folder / "spliced.jsonl", unlinked)


_STEPS = ("system", "user", "user", "note", "call", "call", "result", "result", "compaction")


@st.composite
def _sessions(draw: st.DrawFn) -> list[AgentEvent]:
    """Sessions with compactions anywhere, results that may come after one included."""
    events: list[AgentEvent] = []
    open_calls: list[str] = []
    for n, step in enumerate(draw(st.lists(st.sampled_from(_STEPS), min_size=1, max_size=28))):
        if step == "system":
            events.append(SystemPrompt(content=f"rule {n}"))
        elif step == "user":
            events.append(UserTurn(content=f"ask {n} " * draw(st.integers(1, 12))))
        elif step == "note":
            events.append(Note(content=f"fact {n}"))
        elif step == "call":
            ids = [f"c{n}_{k}" for k in range(draw(st.integers(1, 2)))]
            calls = [ToolCall(id=i, name="bash", arguments=f'{{"n": {n}}}') for i in ids]
            events.append(AssistantTurn(content=f"doing {n}", tool_calls=calls))
            open_calls.extend(ids)
        elif step == "result" and open_calls:
            size = draw(st.integers(1, 30))
            events.append(ToolResult(call_id=open_calls.pop(0), content=f"out {n} " * size))
        elif step == "compaction":
            events.append(Compaction(content=f"summary {n}", origin="claude_code"))
    return events


@st.composite
def _split(draw: st.DrawFn, events: list[AgentEvent]) -> list[list[AgentEvent]]:
    cuts = sorted(draw(st.sets(st.integers(0, len(events)), max_size=4)))
    bounds = [0, *cuts, len(events)]
    return [events[a:b] for a, b in itertools.pairwise(bounds)]


# -- graphs --------------------------------------------------------------------------------


def _graph(events: Sequence[AgentEvent], batches: int = 1) -> ContextGraph:
    """A graph of `events` ingested in `batches` batches of about equal size."""
    graph = ContextGraph(counter=WordCounter())
    size = max(1, -(-len(events) // batches))
    for start in range(0, len(events), size):
        graph.ingest(events[start : start + size])
    return graph


def _as_before(events: Sequence[AgentEvent]) -> ContextGraph:
    """A graph of `events` whose compactions abstract every earlier node, as they used to."""
    graph = _graph(events)
    order = graph.transcript()
    for node_id in graph.by_kind("summary"):
        node = graph[node_id]
        assert node.seq is not None
        graph._nodes[node_id] = node.model_copy(update={"abstracts": order[: node.seq]})
    return graph


def _summaries(graph: ContextGraph) -> list[SummaryNode]:
    return [n for n in graph if isinstance(n, SummaryNode)]


def _render(source: RenderSource, fmt: ProviderFormat, budget: int | None) -> Any:
    try:
        return Renderer(format=fmt).render(source, budget=budget).payload
    except BudgetExceededError as exc:
        return ("refused", exc.budget, exc.required)


def _renders(source: RenderSource, budgets: Sequence[int | None]) -> dict[str, Any]:
    """Each format's request under each budget (or how it was refused)."""
    return {f"{fmt}/{b}": _render(source, fmt, b) for fmt in FORMATS for b in budgets}


def _digest(payload: Any) -> str:
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:16]


def _old_version(graph: ContextGraph) -> int:
    """What the version was when each compaction linked every earlier node."""
    kept = sum(1 for *_, kind in graph.edges() if kind != "derived_from")
    return len(graph) + kept + sum(s.seq or 0 for s in _summaries(graph))


# -- tests ---------------------------------------------------------------------------------

_CHAIN_EVENTS: list[AgentEvent] = [
    SystemPrompt(content="rules"),
    UserTurn(content="first"),
    AssistantTurn(content="on it", tool_calls=[ToolCall(id="c1", name="bash")]),
    ToolResult(call_id="c1", content="done"),
    Compaction(content="one", origin="claude_code"),
    UserTurn(content="second"),
    Compaction(content="two", origin="claude_code"),
    Note(content="a fact"),
    UserTurn(content="third"),
    Compaction(content="three", origin="claude_code"),
    UserTurn(content="fourth"),
]


class TestChain:
    def test_each_compaction_abstracts_the_nodes_since_the_previous_one(self) -> None:
        """The first abstracts every earlier node; a later one the previous, then the rest."""
        graph = _graph(_CHAIN_EVENTS)
        order = graph.transcript()
        one, two, three = _summaries(graph)
        assert one.abstracts == order[:5]  # system, user, assistant, call, result
        assert two.abstracts == (one.id, order[6])
        assert three.abstracts == (two.id, order[8], order[9])

    def test_derived_from_edges_are_the_abstracts(self) -> None:
        """A compaction's `derived_from` edges lead to its abstracts, and only to them."""
        graph = _graph(_CHAIN_EVENTS)
        one, two, three = _summaries(graph)
        for summary in (one, two, three):
            assert set(graph.targets(summary.id, "derived_from")) == set(summary.abstracts)
        assert graph.sources(graph.transcript()[1], "derived_from") == (one.id,)
        assert graph.sources(one.id, "derived_from") == (two.id,)
        assert graph.sources(two.id, "derived_from") == (three.id,)
        derived = list(graph.edges("derived_from"))
        assert len(derived) == 5 + 2 + 3

    def test_covered_is_every_earlier_transcript_node(self) -> None:
        """`covered` gives what a compaction stands for: the whole transcript before it."""
        graph = _graph(_CHAIN_EVENTS)
        order = graph.transcript()
        for summary in _summaries(graph):
            assert summary.seq is not None
            assert graph.covered(summary.id) == order[: summary.seq]
        assert graph.covered(order[1]) == ()

    def test_a_processor_summary_covers_its_abstracts(self) -> None:
        """A summary a processor made stands for its abstracts, with no chain to follow."""
        graph = _graph(_CHAIN_EVENTS)
        one = _summaries(graph)[0]
        second = graph.transcript()[5]
        derived = SummaryNode(
            id="summary-x", content=(TextPart(text="s"),), abstracts=(one.id, second)
        )
        graph.add_derived(derived)
        assert graph.covered(derived.id) == (one.id, second)

    def test_the_version_counts_the_edges_compactions_used_to_hold(self) -> None:
        """The version is what it was with every earlier node linked (session files keep it)."""
        graph = _graph(_CHAIN_EVENTS)
        # 12 nodes, 11 `follows`, 1 `issued_by`, 1 `answers`, then 5, 7 and 10 earlier nodes.
        assert graph.version == _old_version(graph) == 12 + 11 + 1 + 1 + (5 + 7 + 10)

    @settings(max_examples=120)
    @given(data=st.data(), events=_sessions())
    def test_any_batching_gives_the_same_chain(
        self, data: st.DataObject, events: list[AgentEvent]
    ) -> None:
        """Split into any batches, a session gives the same nodes, edges and version."""
        whole = _graph(events)
        graph = ContextGraph(counter=WordCounter())
        for batch in data.draw(_split(events)):
            graph.ingest(batch)
        assert graph_snapshot(graph) == graph_snapshot(whole)
        assert [graph[i] for i in graph.transcript()] == [whole[i] for i in whole.transcript()]
        assert graph.version == whole.version == _old_version(whole)
        previous = 0
        for summary in _summaries(graph):
            assert summary.seq is not None
            assert summary.abstracts == graph.transcript()[previous : summary.seq]
            assert graph.covered(summary.id) == graph.transcript()[: summary.seq]
            previous = summary.seq


class TestManyCompactions:
    @pytest.mark.slow
    def test_8000_compactions_cost_linear_edges_and_ids(self, tmp_path: Path) -> None:
        """8,000 compactions ingest, count and render with edges and ids linear in the nodes."""
        events = load_events(_write(tmp_path / "long.jsonl", _claude_code_log(8000)))
        graph = ContextGraph(counter=WordCounter())
        for start in range(0, len(events), 1000):
            # Checked as it grows: the quadratic shape fails at the first batch.
            graph.ingest(events[start : start + 1000])
            edges = sum(1 for _ in graph.edges())
            ids = sum(len(s.abstracts) for s in _summaries(graph))
            assert edges <= 3 * len(graph), f"{edges} edges for {len(graph)} nodes"
            assert ids <= 2 * len(graph), f"{ids} abstracted ids for {len(graph)} nodes"
        stats = graph_stats(graph)
        assert stats.nodes_by_kind == {
            "assistant": 800,
            "summary": 8000,
            "tool_call": 800,
            "tool_result": 800,
            "user": 8001,
        }
        assert stats.units == 8000 + 800 + 8001
        # Each summary stands for what came before it and is sent; nothing else before
        # the last one is: the request is the one of the summaries and the last turn.
        alone = _graph([e for e in events if isinstance(e, Compaction)] + [events[-1]])
        for fmt in ("openai", "anthropic"):
            assert _render(graph, fmt, None) == _render(alone, fmt, None)


class TestRendersAsBefore:
    @settings(max_examples=80)
    @given(events=_sessions())
    def test_renders_equal_those_of_compactions_that_abstract_everything(
        self, events: list[AgentEvent]
    ) -> None:
        """Every format under every budget renders as when compactions held every node."""
        graph, before = _graph(events, batches=3), _as_before(events)
        full = Renderer(format="openai").render(graph).tokens
        budgets = (None, full // 2, full // 4)
        assert _renders(graph, budgets) == _renders(before, budgets)

    @needs_fasthooks
    def test_a_real_trace_with_three_compactions_renders_as_before(self, tmp_path: Path) -> None:
        """The fasthooks trace with three compactions renders as it did before the chain."""
        events = load_events(_spliced_fasthooks(tmp_path))
        graph = _graph(events)
        assert len(_summaries(graph)) == 3
        budgets = (None, 3000, 1500, 800)
        renders = _renders(graph, budgets)
        assert renders == _renders(_as_before(events), budgets)
        assert {key: _digest(p) for key, p in renders.items()} == _RECORDED_RENDERS

    @needs_fasthooks
    def test_a_real_trace_with_three_compactions_counts_as_before(self, tmp_path: Path) -> None:
        """`inspect`'s counts of the spliced trace are those recorded before the chain."""
        graph = _graph(load_events(_spliced_fasthooks(tmp_path)))
        assert graph_stats(graph).model_dump() == _RECORDED_STATS
