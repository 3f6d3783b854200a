"""Every shared trace replays valid with the agent tools on, and an expand after it too.

Each session is replayed with `agent_tools=True` at half of its final raw size (one
budget keeps it affordable), the provider formats rotating over the files. Every request
must be valid and within the budget (or refused with `BudgetExceededError`, as without
the tools); then the first id the last request names is expanded, and the request after
that is valid and within the budget as well.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from context_graph import BudgetExceededError, ContextGraph
from context_graph.importers import ImportedSession, load_sessions
from context_graph.render import FORMATS, Renderer
from context_graph.testing import strict_trace, trace_files
from context_graph.validate.request import validate
from orchestrator import ContextManager, ReplayReport, replay
from orchestrator.policy import Policy

TRACES = Path(__file__).resolve().parents[2].parent / "shared" / "traces"
FILES = trace_files(TRACES)
NAMED = re.compile(r"call context_expand with id ([^\s\]\\]+) to restore")

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not FILES, reason="shared traces not present"),
]


def _own_sessions(path: Path) -> list[ImportedSession]:
    subagents = path.with_suffix("") / "subagents"
    return [
        session
        for session in load_sessions(path, strict=strict_trace(path))
        if not (subagents / f"{session.name}.jsonl").is_file()
    ]


def _check(report: ReplayReport, budget: int, where: str) -> None:
    assert report.invalid_calls == 0, where
    for call in report.calls:
        assert call.validation_errors == [], f"{where} call {call.index}"
        if call.error is None:
            assert call.rendered_tokens is not None
            assert call.rendered_tokens <= budget, f"{where} call {call.index}"
        else:
            assert "budget" in call.error, f"{where} call {call.index}: {call.error}"


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(TRACES)))
@pytest.mark.ingests_traces
def test_every_session_replays_valid_with_agent_tools(path: Path) -> None:
    """Every request is valid and in budget with context_expand in it, expanded or not."""
    fmt = FORMATS[FILES.index(path) % len(FORMATS)]
    for session in _own_sessions(path):
        graph = ContextGraph()
        graph.ingest(session.events)
        budget = max(1, Renderer(format=fmt).render(graph).tokens // 2)
        manager = ContextManager(format=fmt, budget=budget, agent_tools=True, policy=Policy())
        report = replay(session.events, budget=budget, format=fmt, manager=manager)
        where = f"{session.name} {fmt} budget={budget}"
        assert report.calls, where
        _check(report, budget, where)
        named = NAMED.findall(json.dumps(report.last_request or {}, ensure_ascii=False))
        if not named:
            continue
        result = manager.handle_tool_call_sync("context_expand", {"id": named[0]})
        assert result.startswith(("context_expand: restored", "context_expand refused")), where
        try:
            after = manager.render_sync()
        except BudgetExceededError:
            continue  # the floor alone does not fit, as before the expand
        assert validate(after.payload, fmt) == [], where
        assert after.tokens <= budget, where
