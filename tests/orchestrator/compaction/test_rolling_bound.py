"""A long session at a small budget keeps a bounded view: one summary of its past.

Each request the user makes gets the summary of the tool loop after it; the summary
written after the next request absorbs the earlier ones, with the requests between
them, so the view (and what each compaction walks) does not grow with the session.
Counted, not timed.
"""

from __future__ import annotations

from context_graph.testing import WordCounter
from orchestrator import ContextManager

REQUESTS = 40
STEPS = 8


def _log(request: int, step: int) -> str:
    return "\n".join(f"run {request}.{step} line {j}: status=ok" for j in range(40))


async def test_the_view_stays_bounded_over_many_requests() -> None:
    manager = ContextManager(budget=1_500, counter=WordCounter())
    manager.add_system("You are a careful coding agent.")
    manager.add_user("Set up the project in /srv/app.")
    summaries: list[int] = []
    units: list[int] = []
    for request in range(REQUESTS):
        manager.add_user(
            f"Request {request}: fix module_{request}.py and keep port {8000 + request}."
        )
        for step in range(STEPS):
            call = f"c{request}_{step}"
            manager.add_assistant(f"Step {step} of {request}.", [{"id": call, "name": "bash"}])
            manager.add_tool_result(call, _log(request, step))
            result = await manager.render()
            assert result.tokens <= 1_500
            view = manager.working.view.units()
            summaries.append(sum(unit.kind == "summary" for unit in view))
            units.append(len(view))
    # Before the fix every request left a summary behind: 40 by the end.
    assert max(summaries) <= 3
    assert max(units[len(units) // 2 :]) <= max(units[: len(units) // 2]) + 2
