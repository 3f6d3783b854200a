"""A session continued from another tool's compaction: its summary is absorbed, not carried.

Claude Code compacts a long session into one summary and goes on with the tool loop; an
import of such a session starts with that summary (a `Compaction`) and has no request
after it. Carried whole it held 44% of every request at an 8,000-token budget (shared
trace 4d5611e5); the first compaction now takes it into the brief.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from context_graph import ContextGraph
from context_graph.graph.events import (
    AssistantTurn,
    Compaction,
    SystemPrompt,
    ToolCall,
    ToolResult,
    UserTurn,
)
from context_graph.graph.native import NativeCompaction
from context_graph.testing import WordCounter
from orchestrator.compaction.pipeline import history_targets
from orchestrator.manager import ContextManager
from orchestrator.working.buffer import WorkingGraph

SCRATCHPAD = "Let me chronologically analyze the conversation step by step. " * 40
SUMMARY = (
    "This session is being continued from a previous conversation that ran out of "
    "context.\n\nAnalysis:\n" + SCRATCHPAD + "\n\nSummary:\n"
    "1. Primary Request and Intent:\n   Port the parser in src/parse.py to the new lexer.\n"
    + "   - detail of the earlier work on the lexer tables\n" * 60
    + "9. Optional Next Step:\n   Run tests/test_parse.py after the port."
)


def _continued(steps: int, *, request: str | None = None) -> list:
    events: list = [
        SystemPrompt(content="You are a careful coding agent."),
        Compaction(content=SUMMARY, origin="claude_code"),
    ]
    if request is not None:
        events.append(UserTurn(content=request))
    for step in range(steps):
        call = f"c{step}"
        events.append(
            AssistantTurn(
                content=f"step {step}",
                tool_calls=[ToolCall(id=call, name="bash", arguments={"cmd": f"make {step}"})],
            )
        )
        events.append(
            ToolResult(call_id=call, content="\n".join(f"ok line {j}" for j in range(20)))
        )
    return events


def test_the_summary_leads_the_tool_loops_run() -> None:
    graph = ContextGraph(counter=WordCounter())
    graph.ingest(_continued(8))
    (summary,) = graph.by_kind("summary")
    targets = [node.id for node in history_targets(WorkingGraph(graph).view, keep_recent=2)]
    assert targets[0] == summary
    assert len(targets) > 1  # with new material: a summary alone is not summarized


def test_a_continued_session_compacts_the_summary_into_the_brief() -> None:
    """The brief holds the summary's request and next step, not its scratchpad."""
    manager = ContextManager(counter=WordCounter(), budget=1_500, policy="coding")
    manager.ingest(_continued(30))
    (foreign,) = manager.raw.by_kind("summary")
    body = manager.render_sync()
    assert body.tokens <= 1_500
    text = str(body.payload)
    assert "Port the parser in src/parse.py to the new lexer." in text
    assert "Run tests/test_parse.py after the port." in text
    assert "chronologically" not in text
    assert "Earlier summary" in text
    # The raw record keeps it whole: the brief expands back to it.
    view = manager.working.view
    assert view.standing_for(foreign) is None  # a summary took it in
    (brief,) = [i for i in view.current_ids() if view[i].kind == "summary"]
    assert any(node.id == foreign for node in manager.expand(brief))


def test_with_a_request_since_the_summary_is_a_span_of_its_own() -> None:
    """Before the first request: taken first, alone; the request is never taken."""
    graph = ContextGraph(counter=WordCounter())
    graph.ingest(_continued(8, request="Now also port the tokenizer."))
    (summary,) = graph.by_kind("summary")
    targets = [node.id for node in history_targets(WorkingGraph(graph).view, keep_recent=2)]
    assert targets == [summary]


def test_with_a_request_since_the_brief_replaces_the_summary_before_it() -> None:
    request = "Now also port the tokenizer in src/tokens.py."
    manager = ContextManager(counter=WordCounter(), budget=1_500, policy="coding")
    manager.ingest(_continued(30, request=request))
    body = manager.render_sync()
    assert body.tokens <= 1_500
    text = str(body.payload)
    assert "chronologically" not in text
    assert "Port the parser in src/parse.py to the new lexer." in text
    assert "Run tests/test_parse.py after the port." in text
    # The brief stands where the summary stood, before the request, which goes verbatim.
    assert text.index("Earlier summary") < text.index(request)


def test_a_provider_artifact_is_never_taken() -> None:
    """A native compaction goes back verbatim to its provider: the loop starts after it."""
    block = {"type": "compaction", "content": "The provider's own summary."}
    graph = ContextGraph(counter=WordCounter())
    graph.ingest(
        [
            Compaction(
                content="The provider's own summary.",
                origin="anthropic",
                native=NativeCompaction(provider="anthropic", item=block),
            ),
            *_continued(8)[2:],
        ]
    )
    (summary,) = graph.by_kind("summary")
    targets = [node.id for node in history_targets(WorkingGraph(graph).view, keep_recent=2)]
    assert targets and summary not in targets


_STEP = st.sampled_from(["step", "request", "notice", "compaction", "native"])


@settings(max_examples=150, deadline=None)
@given(
    head=st.sampled_from(["compaction", "native", "none"]),
    kinds=st.lists(_STEP, min_size=1, max_size=14),
    keep_recent=st.integers(min_value=0, max_value=3),
)
def test_the_targets_are_one_whole_run_the_floor_never_in_it(
    head: str, kinds: list[str], keep_recent: int
) -> None:
    """Whatever comes after the summary a session starts with: one contiguous run of whole
    units, never a provider's artifact, the first or latest request, the latest user-role
    unit or the tool loop's last `keep_recent` units; summaries alone only when another
    tool wrote one of them as text."""
    block = {"type": "compaction", "content": "The provider's own summary."}
    events: list = [SystemPrompt(content="system")]
    if head != "none":
        native = NativeCompaction(provider="anthropic", item=block) if head == "native" else None
        events.append(Compaction(content=SUMMARY, origin="claude_code", native=native))
    for i, kind in enumerate(kinds):
        if kind == "step":
            events.append(
                AssistantTurn(content=f"s{i}", tool_calls=[ToolCall(id=f"c{i}", name="bash")])
            )
            events.append(ToolResult(call_id=f"c{i}", content=f"out {i}"))
        elif kind in {"request", "notice"}:
            events.append(UserTurn(content=f"u{i}", notice=kind == "notice"))
        else:
            native = (
                NativeCompaction(provider="anthropic", item=block) if kind == "native" else None
            )
            events.append(Compaction(content=f"summary {i}", origin="claude_code", native=native))
    graph = ContextGraph(counter=WordCounter())
    graph.ingest(events)
    view = WorkingGraph(graph).view
    units = view.units()
    targets = [node.id for node in history_targets(view, keep_recent=keep_recent)]
    if not targets:
        return
    position = {node_id: i for i, unit in enumerate(units) for node_id in unit.node_ids}
    taken = sorted({position[t] for t in targets})
    assert taken == list(range(taken[0], taken[-1] + 1))  # one contiguous run
    assert targets == [n for i in taken for n in units[i].node_ids]  # whole units, in order
    assert not any(view[t].kind == "summary" and view[t].native is not None for t in targets)
    requests = [i for i, unit in enumerate(units) if unit.kind == "user"]
    turns = [i for i, unit in enumerate(units) if unit.kind in {"user", "notice"}]
    floor = {requests[0], requests[-1]} if requests else set()
    floor |= {turns[-1]} if turns else set()
    assert not floor & set(taken)
    if not turns or taken[-1] > turns[-1]:  # in the tool loop: its newest steps stay
        assert taken[-1] < len(units) - keep_recent or keep_recent == 0
    summaries = [t for t in targets if view[t].kind == "summary"]
    if len(summaries) == len(targets):  # summaries alone: one is another tool's text
        assert any(view[t].seq is not None and view[t].native is None for t in summaries)
