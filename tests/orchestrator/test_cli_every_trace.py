"""`context-graph render` answers on every shared trace at 25%, 50% and 8,000 tokens.

The command runs in-process (`main([...])`), and each file is imported once for its
three budgets: the CLI's reader is pointed at a cache of the imported sessions. A refusal
(exit 3) is allowed only where the `ContextManager` itself refuses the same render and
where `replay`'s last call is refused as well. Run with `-s` to see the refusals.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from benchmarks.sdk_types import sdk_problems
from context_graph.errors import BudgetExceededError
from context_graph.graph.context_graph import ContextGraph
from context_graph.importers import ImportedSession, load_sessions
from context_graph.render import FORMATS, Renderer
from context_graph.testing import strict_trace, trace_files
from context_graph.tokens.counting import ProviderFormat
from context_graph.validate.request import validate
from orchestrator.cli import main
from orchestrator.cli import session as cli_session
from orchestrator.manager import ContextManager
from orchestrator.replay import replay

TRACES = Path(__file__).resolve().parents[2].parent / "shared" / "traces"
FILES = trace_files(TRACES)
BUDGETS = ("25%", "50%", "8000")

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not FILES, reason="shared traces not present"),
]


def _params() -> list[object]:
    """Each file at each budget (tests/conftest.py marks the files no importer reads yet)."""
    return [
        pytest.param(path, level, id=f"{path.relative_to(TRACES)}@{level}")
        for path in FILES
        for level in BUDGETS
    ]


@functools.cache
def _sessions(path: Path) -> list[ImportedSession]:
    return load_sessions(path, strict=strict_trace(path))


@functools.cache
def _raw_tokens(path: Path, fmt: ProviderFormat) -> int:
    graph = ContextGraph()
    graph.ingest(_sessions(path)[0].events)
    return Renderer(format=fmt).render(graph).tokens


def _cached_load(
    source: object, *, format: str | None = None, strict: bool = True
) -> list[ImportedSession]:
    assert format is None and isinstance(source, Path) and strict is strict_trace(source)
    return _sessions(source)


@pytest.fixture(name="refused", scope="module")
def refused_fixture() -> Iterator[list[str]]:
    """Collects the renders the manager refused; printed at the end (run with -s)."""
    table: list[str] = []
    yield table
    print(f"\nrender refused (exit 3, as the manager does) {len(table)} times:")
    for row in table:
        print(f"  {row}")


@pytest.mark.parametrize(("path", "level"), _params())
@pytest.mark.ingests_traces
def test_render_answers_with_a_valid_body(
    path: Path, level: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, refused: list[str]
) -> None:
    """The body is valid for its format; a refusal only where the manager refuses too."""
    _sessions(path)  # raises IngestError for files no importer reads yet
    fmt: ProviderFormat = FORMATS[FILES.index(path) % len(FORMATS)]
    raw = _raw_tokens(path, fmt)
    budget = int(level) if level.isdigit() else max(1, raw * int(level[:-1]) // 100)
    monkeypatch.setattr(cli_session, "load_sessions", _cached_load)
    out = tmp_path / "request.json"
    argv = ["render", str(path), "--format", fmt, "--budget", str(budget), "-o", str(out)]
    argv += [] if strict_trace(path) else ["--lenient"]
    code = main(argv)
    if code == 3:
        events = _sessions(path)[0].events
        manager = ContextManager(fmt, budget, policy="coding")
        manager.ingest(events)
        with pytest.raises(BudgetExceededError):
            manager.render_sync()
        # The refusals are all on short sessions, whose replay is cheap: the last call
        # of a replay (compacting turn by turn) is refused too.
        replayed = replay(
            events,
            budget=budget,
            format=fmt,
            manager=ContextManager(fmt, budget, policy="coding"),
        )
        assert replayed.calls[-1].rendered_tokens is None, replayed.calls[-1]
        refused.append(f"{path.relative_to(TRACES)} {fmt} {level} ({budget:,} of {raw:,})")
        return
    assert code == 0, f"{path} at {budget}"
    body = json.loads(out.read_text(encoding="utf-8"))
    assert validate(body, fmt) == []
    assert sdk_problems(body, fmt) == []


@pytest.mark.parametrize(("path", "level"), _params())
@pytest.mark.ingests_traces
def test_render_in_the_responses_format_is_valid(
    path: Path, level: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`--format responses` gives a body our rules and the openai SDK's types accept."""
    _sessions(path)  # raises IngestError for files no importer reads yet
    raw = _raw_tokens(path, "responses")
    budget = int(level) if level.isdigit() else max(1, raw * int(level[:-1]) // 100)
    monkeypatch.setattr(cli_session, "load_sessions", _cached_load)
    out = tmp_path / "request.json"
    argv = ["render", str(path), "--format", "responses", "--budget", str(budget), "-o", str(out)]
    argv += [] if strict_trace(path) else ["--lenient"]
    code = main(argv)
    if code == 3:
        manager = ContextManager("responses", budget, policy="coding")
        manager.ingest(_sessions(path)[0].events)
        with pytest.raises(BudgetExceededError):
            manager.render_sync()
        return
    assert code == 0, f"{path} at {budget}"
    body = json.loads(out.read_text(encoding="utf-8"))
    assert validate(body, "responses") == []
    assert sdk_problems(body, "responses") == []
    assert "input" in body
