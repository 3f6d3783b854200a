"""Notices in the orchestrator: not requests for the summarize stage or the floor shrink."""

from __future__ import annotations

from context_graph import ContextGraph
from context_graph.testing import WordCounter
from orchestrator.compaction.floor import floor_outputs
from orchestrator.compaction.pipeline import history_targets
from orchestrator.manager import ContextManager
from orchestrator.working.buffer import WorkingGraph

DONE = "Background task b1 finished; output in /tmp/b1.out"


def _log(lines: int) -> str:
    return "\n".join(f"line {j}: value={j * 7} status=ok" for j in range(lines))


def _loop(graph: ContextGraph | ContextManager, steps: int, *, notice_every: int = 2) -> None:
    for step in range(steps):
        call = f"c{step}"
        graph.add_assistant(f"step {step}", tool_calls=[{"id": call, "name": "bash"}])
        graph.add_tool_result(call, _log(30))
        if step % notice_every == 1:
            graph.add_user(DONE, notice=True)


def test_the_summarize_stage_takes_the_loop_and_never_the_request() -> None:
    """The steps between the latest request and the latest notice are a span of their own."""
    graph = ContextGraph(counter=WordCounter())
    graph.add_system("You are a careful coding agent.")
    first = graph.add_user("Set up the project.")
    request = graph.add_user("Run every test and fix what fails.")
    _loop(graph, 8)
    working = WorkingGraph(graph)
    targets = [node.id for node in history_targets(working.view, keep_recent=2)]
    assert targets and first not in targets and request not in targets
    # Not the units between the first request and the last notice, which hold the
    # latest request: the steps after the request, notices among them.
    assert graph[targets[0]].seq == graph[request].seq + 1
    assert any(graph[t].kind == "user" for t in targets)  # a notice, summarized as a step


def test_the_floor_shrink_cuts_the_outputs_after_the_latest_notice() -> None:
    """Outputs before a notice are not in the floor: the renderer may leave them out."""
    graph = ContextGraph(counter=WordCounter())
    graph.add_user("Run the tests.")
    graph.add_assistant("one", tool_calls=[{"id": "a", "name": "bash"}])
    graph.add_tool_result("a", _log(10))
    graph.add_user(DONE, notice=True)
    graph.add_assistant("two", tool_calls=[{"id": "b", "name": "bash"}])
    after = graph.add_tool_result("b", _log(10))
    outputs = [node.id for node in floor_outputs(WorkingGraph(graph).view)]
    assert outputs == [after]
