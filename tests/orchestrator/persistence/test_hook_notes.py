"""What a memory flush pins is kept by the session store; the hooks themselves are not."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

import pytest

from context_graph.testing import WordCounter
from orchestrator.compaction.hooks import PreCompaction
from tests.orchestrator.policy_keywords import open_manager

NOTE = "Deploys go through the staging cluster first."


def _log(step: int) -> str:
    return "\n".join(f"line {j} of run {step}: status=ok" for j in range(150))


def _options() -> dict[str, Any]:
    return {"format": "anthropic", "counter": WordCounter(), "budget": 2_000, "durable": False}


@pytest.fixture(name="location", params=["sqlite", "postgres"])
def fixture_location(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    """A new session's location on each store."""
    if request.param == "sqlite":
        return tmp_path / "session.db"
    return request.getfixturevalue("postgres").location("hooks")


def test_a_reopened_session_keeps_the_pinned_notes_and_no_hook(location: Any) -> None:
    with contextlib.closing(open_manager(location, **_options())) as manager:
        asked: list[str] = []

        @manager.hooks.before_compaction
        def flush(plan: PreCompaction) -> None:
            asked.append(plan.trigger)
            plan.pin_note(NOTE)

        manager.add_system("You are a deployment agent.")
        manager.add_user("Roll out release 42.")
        for step in range(4):
            manager.add_assistant(
                f"step {step}", tool_calls=[{"id": f"c{step}", "name": "sh", "arguments": {}}]
            )
            manager.add_tool_result(f"c{step}", _log(step))
        manager.render_sync()
        assert asked == ["overflow"]
        [note] = [n for n in manager.raw.transcript() if manager.raw[n].kind == "note"]
    with contextlib.closing(open_manager(location, **_options())) as reopened:
        assert reopened.raw[note].pinned
        assert reopened.raw[note].text == NOTE
        assert reopened.working.is_current(note)
        assert NOTE in repr(reopened.render_sync().payload)
        reopened.add_user("And roll back 41.")
        for step in range(4, 8):
            reopened.add_assistant(
                f"step {step}", tool_calls=[{"id": f"c{step}", "name": "sh", "arguments": {}}]
            )
            reopened.add_tool_result(f"c{step}", _log(step))
        result = reopened.render_sync()  # compacts again: no hook runs, the note stays
        notes = [n for n in reopened.raw.transcript() if reopened.raw[n].kind == "note"]
        assert notes == [note]
        assert NOTE in repr(result.payload)
