"""A session continued from another tool's compaction: its summary is absorbed, not carried.

Claude Code compacts a long session into one summary and goes on with the tool loop; an
import of such a session starts with that summary (a `Compaction`) and has no request
after it. Carried whole it held 44% of every request at an 8,000-token budget (shared
trace 4d5611e5); the first compaction now takes it into the brief.
"""

from __future__ import annotations

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
