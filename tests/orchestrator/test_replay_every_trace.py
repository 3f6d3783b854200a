"""Every shared trace replays in every built-in profile with no invalid request.

Each session is fed to a `ContextManager` configured by the profile and rendered at
every point where the recorded agent called its model (`orchestrator.replay`). One
budget per session and profile keeps the suite fast; the budgets alternate between half
of the session's final raw size and a fixed 8,000 tokens, and the provider formats
rotate, so that every session meets both kinds of budget and every format across the
three profiles.

Calls refused with `BudgetExceededError` (the floor does not fit) are allowed and
counted; run with `-s` to see the counts per session and profile.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from context_graph import ContextGraph
from context_graph.importers import ImportedSession, load_sessions
from context_graph.render import FORMATS, Renderer
from context_graph.testing import strict_trace, trace_files
from context_graph.tokens.counting import ProviderFormat
from orchestrator import POLICIES, ContextManager, ReplayReport, replay

TRACES = Path(__file__).resolve().parents[2].parent / "shared" / "traces"
FILES = trace_files(TRACES)
PROFILE_NAMES = tuple(POLICIES)  # every named policy: coding, service, chat
FIXED_BUDGET = 8_000

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not FILES, reason="shared traces not present"),
]

# (file, session, profile) -> (format, budget, calls, refused), printed at the end.
Refusals = dict[tuple[str, str, str], tuple[str, int, int, int]]


def _own_sessions(path: Path) -> list[ImportedSession]:
    """The sessions of `path`, without sub-agents that are shared as files of their own."""
    subagents = path.with_suffix("") / "subagents"
    return [
        session
        for session in load_sessions(path, strict=strict_trace(path))
        if not (subagents / f"{session.name}.jsonl").is_file()
    ]


def _graph(session: ImportedSession) -> ContextGraph:
    graph = ContextGraph()
    graph.ingest(session.events)
    return graph


def _choice(path: Path, profile: str) -> tuple[ProviderFormat, bool]:
    """The format, and whether the budget is half the raw size (else the fixed one)."""
    turn = FILES.index(path) + PROFILE_NAMES.index(profile)
    return FORMATS[turn % len(FORMATS)], turn % 2 == 0


@pytest.fixture(name="refusals", scope="module")
def refusals_fixture() -> Iterator[Refusals]:
    """Collects the refused calls of every replay and prints them as a table at the end."""
    table: Refusals = {}
    yield table
    print("\nrefused calls per session and profile (BudgetExceededError):")
    for (name, session, profile), (fmt, budget, calls, refused) in sorted(table.items()):
        print(f"  {refused:>4}/{calls:<4} {profile:<8} {fmt:<9} {budget:>7}  {name} [{session}]")
    total = sum(row[3] for row in table.values())
    print(f"  total refused {total} of {sum(row[2] for row in table.values())} calls")


def _check(report: ReplayReport, budget: int, where: str) -> None:
    """No request is invalid or over budget; a refused call says why and sends nothing."""
    assert report.invalid_calls == 0, where
    for call in report.calls:
        assert call.validation_errors == [], f"{where} call {call.index}"
        if call.error is None:
            assert call.rendered_tokens is not None
            assert call.rendered_tokens <= budget, f"{where} call {call.index}"
        else:
            assert call.rendered_tokens is None
            assert "budget" in call.error, f"{where} call {call.index}: {call.error}"


@pytest.mark.parametrize("profile", PROFILE_NAMES)
@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(TRACES)))
@pytest.mark.ingests_traces
def test_every_session_replays_valid(path: Path, profile: str, refusals: Refusals) -> None:
    """Every request rendered at a model call is valid and within the budget."""
    fmt, half = _choice(path, profile)
    for session in _own_sessions(path):
        budget = FIXED_BUDGET
        if half:
            raw = Renderer(format=fmt).render(_graph(session)).tokens
            budget = max(1, raw // 2)
        manager = ContextManager(format=fmt, budget=budget, policy=profile)
        report = replay(session.events, budget=budget, format=fmt, manager=manager)
        where = f"{session.name} {profile} {fmt} budget={budget}"
        assert report.calls, where
        _check(report, budget, where)
        refused = report.over_budget_calls
        key = (str(path.relative_to(TRACES)), session.name, profile)
        refusals[key] = (fmt, budget, len(report.calls), refused)
