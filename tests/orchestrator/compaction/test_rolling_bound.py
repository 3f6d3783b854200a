"""A long session at a small budget keeps a bounded view: one summary of its past, with
the user's words in it.

Each request the user makes gets the summary of the tool loop after it; the summary
written after the next request absorbs the earlier ones, with the requests between
them, so the view (and what each compaction walks) does not grow with the session.
Counted, not timed.
"""

from __future__ import annotations

import pytest

from benchmarks.planted import request_text, survives
from benchmarks.planted_sessions import make_session
from context_graph import TiktokenCounter
from context_graph.testing import WordCounter
from orchestrator import ContextManager
from orchestrator.policy import Policy

REQUESTS = 40
STEPS = 8


def _log(request: int, step: int) -> str:
    return "\n".join(f"run {request}.{step} line {j}: status=ok" for j in range(40))


async def test_the_view_stays_bounded_over_many_requests() -> None:
    manager = ContextManager(budget=1_500, counter=WordCounter(), policy=Policy())
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


@pytest.mark.parametrize("seed", [0, 3, 4])
def test_every_rule_said_early_is_kept_at_a_tenth_of_the_session(seed: int) -> None:
    """A summary written in a run that must compact more than it can take alone still
    holds every message of the user's it absorbs: its room counts the brief's frame
    (headings, omission lines, the next step) beside the user's words. These seeds lost
    two to six of their planted rules and facts at a tenth of their size before."""
    counter = TiktokenCounter()
    session = make_session(seed, 3)
    manager: ContextManager | None = None
    fed = 0
    for index, (seen, size) in enumerate(session.rounds(counter)):
        budget = max(256, size // 10)
        manager = manager or ContextManager(budget=budget, counter=counter, policy=Policy())
        manager.ingest(seen[fed:])
        fed = len(seen)
        text = request_text(manager.render_sync(budget=budget).payload)
        lost = [item.statement() for item in session.items_after(index) if not survives(item, text)]
        assert lost == [], f"round {index}"
