"""`ContextManager.expand_line`: a line of a summary leads back to the nodes it came from,
in memory and after the session is reopened from SQLite or PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from context_graph.errors import GraphError, UnknownNodeError
from context_graph.graph.nodes import SummaryNode
from context_graph.testing import WordCounter
from orchestrator import ContextManager
from processors import HistorySummarizer
from tests.orchestrator.policy_keywords import make_manager, open_manager

RULES = (
    "禁止修改 tests/ 目录。",
    "Skip the invoices table.",
    "Mia prefers short bullet lists in status updates.",
)


def _options() -> dict[str, Any]:
    return {
        "format": "openai",
        "counter": WordCounter(),
        "clock": lambda: 1e9,
        "pipeline": [HistorySummarizer()],
    }


@pytest.fixture(name="manager", params=["memory", "sqlite", "postgres"])
def fixture_manager(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[ContextManager]:
    """A session on each backend, with turns that state rules and do tool work."""
    if request.param == "memory":
        manager = make_manager(**_options())
    elif request.param == "sqlite":
        manager = open_manager(tmp_path / "session.db", **_options())
    else:
        location = request.getfixturevalue("postgres").location("lines")
        manager = open_manager(location, **_options())
    manager.add_user("Migrate the billing service.")
    for turn, rule in enumerate(RULES):
        manager.add_user(rule)
        call = {"id": f"c{turn}", "name": "bash", "arguments": {"command": f"make step{turn}"}}
        manager.add_assistant(f"I'll run step {turn}.", [call])
        manager.add_tool_result(f"c{turn}", " ".join(f"out{turn}-{i}" for i in range(80)))
    manager.add_user("Carry on.")
    yield manager
    manager.close()


def _compact(manager: ContextManager) -> SummaryNode:
    run = anyio.run(manager.compact)
    assert run.applied >= 1
    summary = manager.working[manager.working.audit()[-1].added[0]]
    assert isinstance(summary, SummaryNode)
    return summary


def _line_of(summary: SummaryNode, fragment: str) -> int:
    lines = summary.text.split("\n")
    return next(number for number, line in enumerate(lines, 1) if fragment in line)


def _check_lines(manager: ContextManager, summary: SummaryNode) -> None:
    for rule in RULES:
        (source,) = manager.expand_line(summary.id, _line_of(summary, rule))
        assert source.text == rule
        assert source.id in manager.raw
    command = manager.expand_line(summary.id, _line_of(summary, "make step1"))
    assert [n.kind for n in command] == ["tool_call", "tool_result"]
    assert manager.expand_line(summary.id, 1) == ()  # the title: the brief's own words


def test_a_line_leads_to_its_source_and_still_does_after_reopening(
    manager: ContextManager,
) -> None:
    summary = _compact(manager)
    _check_lines(manager, summary)
    if manager.store is None:
        return
    location = manager.store.location
    manager.close()
    again = open_manager(location, **_options())
    try:
        _check_lines(again, again.working[summary.id])  # type: ignore[arg-type]
    finally:
        again.close()


def test_bad_input_is_a_typed_error_naming_it(manager: ContextManager) -> None:
    summary = _compact(manager)
    user = manager.raw.transcript()[0]
    with pytest.raises(GraphError, match=r"is a \w+ node, not a summary"):
        manager.expand_line(user, 1)
    count = len(summary.text.split("\n"))
    with pytest.raises(GraphError, match=f"has lines 1 to {count}, not 0"):
        manager.expand_line(summary.id, 0)
    with pytest.raises(UnknownNodeError):
        manager.expand_line("no-such-node", 1)
