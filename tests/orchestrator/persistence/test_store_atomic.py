"""A compaction run lands in the session file whole or not at all, even when killed."""

from __future__ import annotations

import os
import random
import signal
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio
import pytest

from context_graph.graph.events import AgentEvent
from context_graph.graph.nodes import Node
from context_graph.importers import load_events
from context_graph.testing import ScriptedSummarizer, WordCounter, graph_snapshot
from orchestrator import ContextManager
from processors.base import ProcessorContext, Proposal
from processors.distill import Distiller
from processors.mask import ObservationMasker
from processors.summarize import HistorySummarizer
from processors.truncate import ToolOutputTruncator
from tests.orchestrator.policy_keywords import open_manager

ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = ROOT / "context_graph" / "examples" / "example_session.jsonl"
STAGES = 4

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")


@pytest.fixture(scope="module", name="events")
def fixture_events() -> list[AgentEvent]:
    return list(load_events(EXAMPLE))


class _Killer:
    """A stage that kills its own process with SIGKILL: a crash between two proposals."""

    name = "killer"

    def propose(self, targets: Sequence[Node], ctx: ProcessorContext) -> Proposal:
        os.kill(os.getpid(), signal.SIGKILL)
        return Proposal(processor=self.name)  # never reached


def _stages(kill_at: int | None) -> list[Any]:
    stages: list[Any] = [
        ObservationMasker(keep_turns=1, min_tokens=5),
        ToolOutputTruncator(max_tokens=40),
        Distiller(),
        HistorySummarizer(),
    ]
    if kill_at is not None:
        stages.insert(kill_at, _Killer())
    return stages


def _options(kill_at: int | None = None) -> dict[str, Any]:
    summarizer = ScriptedSummarizer(["The agent read files and ran the tests."] * 4)
    return {
        "counter": WordCounter(),
        "pipeline": _stages(kill_at),
        "summarizer": summarizer,
        "clock": lambda: 1e9,
    }


def _observed(manager: ContextManager) -> tuple[Any, ...]:
    """What a reopened session is judged by: record, view, audit and the request."""
    return (
        graph_snapshot(manager.raw),
        manager.working.view.transcript(),
        manager.working.audit(),
        manager.render_sync(budget=None).payload,
    )


def _compact_in_child(path: Path, kill_at: int) -> int:
    """Reopen `path` in a forked process, compact with a killing stage; its exit status."""
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        code = 1
        try:
            manager = open_manager(path, durable=True, **_options(kill_at))
            anyio.run(manager.compact)
            code = 0
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    return status


class TestKilledRun:
    def test_a_run_killed_between_proposals_reopens_before_or_after_it(
        self, tmp_path: Path, events: list[AgentEvent]
    ) -> None:
        """Killed at a random stage (seeded, 12 times), a reopened session is before or after."""
        half = events[: len(events) // 2]
        before_path, after_path = tmp_path / "before.db", tmp_path / "after.db"
        for target in (before_path, after_path):
            seed = open_manager(target, durable=False, **_options())
            seed.ingest(half)
            seed.close()
        done = open_manager(after_path, durable=False, **_options())
        run = anyio.run(done.compact)
        done.close()
        assert run.applied >= 2, "the uninterrupted run applies several proposals"
        before = open_manager(before_path, durable=False, **_options())
        after = open_manager(after_path, durable=False, **_options())
        expected = {"before": _observed(before), "after": _observed(after)}
        before.close()
        after.close()
        rng = random.Random(15)
        seen = set()
        for attempt in range(12):
            path = tmp_path / f"killed-{attempt}.db"
            path.write_bytes(before_path.read_bytes())
            kill_at = rng.randint(1, STAGES)
            status = _compact_in_child(path, kill_at)
            assert os.WIFSIGNALED(status), f"attempt {attempt}: the child was not killed"
            reopened = open_manager(path, durable=False, **_options())
            observed = _observed(reopened)
            reopened.close()
            matches = [name for name, value in expected.items() if value == observed]
            assert matches, f"killed before stage {kill_at}: neither before nor after the run"
            seen.add(kill_at)
        assert len(seen) > 1, "the seed kills at more than one point"
