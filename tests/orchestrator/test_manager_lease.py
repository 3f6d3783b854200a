"""The manager's compaction under the store's lease, on a SQLite session file.

SQLite has one writer per file, so the lease is granted at once; what is checked here is
that the manager takes it around its runs (joining one its caller holds), that
nothing it writes changes for it, and that appends interleaved with a run, at any
point of it, end in the session one process fed the same log holds.
"""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import anyio
from hypothesis import given, settings
from hypothesis import strategies as st

from context_graph.graph.nodes import Node
from context_graph.render import Renderer
from context_graph.testing import Recorder, WordCounter, graph_snapshot
from orchestrator import ContextManager
from orchestrator.persistence import SQLiteStore, open_store
from orchestrator.policy import Policy
from processors import HistorySummarizer, ObservationMasker
from processors.base import Processor, ProcessorContext, Proposal

_CLOCK = lambda: 1_700_000_000.0  # noqa: E731  (a fixed clock for the audit log)


class FixedSummarizer:
    """Answers one summary; runs `hook` first, once."""

    def __init__(self) -> None:
        self.hook: Callable[[], None] | None = None

    async def summarize(
        self, nodes: Sequence[Node], *, previous: str | None, instructions: str | None
    ) -> str:
        """Run the hook once, then answer."""
        hook, self.hook = self.hook, None
        if hook is not None:
            hook()
        return "The tests ran; all ok."


class Appender:
    """A stage that proposes nothing and appends to the session while the run is on it."""

    name = "appender"

    def __init__(self, append: Callable[[], None]) -> None:
        self._append = append

    def propose(self, targets: Sequence[Node], ctx: ProcessorContext) -> Proposal:
        """Append (the other writer's move), then propose no edit."""
        self._append()
        return Proposal(processor=self.name, base_version=ctx.graph.version)


def _fill(manager: ContextManager, steps: int = 4) -> None:
    manager.add_system("You are a careful coding agent.")
    manager.add_user("Fix the failing test.")
    for step in range(steps):
        manager.add_assistant(
            f"Running the tests, step {step}.",
            tool_calls=[{"id": f"call_{step}", "name": "bash", "arguments": {"cmd": "pytest"}}],
        )
        manager.add_tool_result(f"call_{step}", "\n".join(f"line {j} ok" for j in range(150)))
        manager.add_user(f"Go on with step {step + 1}.")


def _open(path: Path, pipeline: Sequence[Processor], summarizer: Any) -> ContextManager:
    return ContextManager.open(
        path,
        counter=WordCounter(),
        durable=False,
        clock=_CLOCK,
        policy=Policy(summarizer=summarizer, pipeline=list(pipeline)),
    )


def _seen(raw: Any, working: Any) -> tuple[Any, ...]:
    return (
        graph_snapshot(raw),
        working.audit(),
        Renderer(format="anthropic").render(working).payload,
    )


class TestTheLeaseOnSQLite:
    async def test_a_run_holds_the_lease_while_it_works(self, tmp_path: Path) -> None:
        """A lease taken inside the run is the run's own (joined), given back after it."""
        summarizer = FixedSummarizer()
        manager = _open(tmp_path / "s.db", [HistorySummarizer()], summarizer)
        store = manager.store
        assert isinstance(store, SQLiteStore)
        inside: list[Any] = []

        def look() -> None:
            with store.lease(holder="the hook") as lease:
                inside.append(lease)

        summarizer.hook = look
        try:
            _fill(manager)
            with Recorder(manager.bus) as recorder:
                assert (await manager.compact()).applied == 1
            (during,) = inside
            assert during.holder != "the hook"  # the run held it already
            with store.lease(holder="after") as after:
                assert after.token == during.token + 1
            assert "compaction_deferred" not in recorder.names()
        finally:
            manager.close()

    async def test_a_lease_the_caller_holds_is_joined_by_the_run(self, tmp_path: Path) -> None:
        """`with store.lease(): await manager.compact()` still compacts, under one token."""
        summarizer = FixedSummarizer()
        manager = _open(tmp_path / "s.db", [HistorySummarizer()], summarizer)
        store = manager.store
        assert isinstance(store, SQLiteStore)
        inside: list[Any] = []

        def look() -> None:
            with store.lease() as lease:
                inside.append(lease)

        summarizer.hook = look
        try:
            _fill(manager)
            with store.lease(holder="caller") as held:
                assert (await manager.compact()).applied == 1
            assert inside == [held]
        finally:
            manager.close()


_INTERLEAVINGS = st.tuples(
    st.integers(0, 2),  # appends before the run
    st.integers(0, 1),  # the stage of the run they come in at (before the mask, the summary)
    st.integers(1, 3),  # appends during the run
    st.integers(0, 2),  # appends after it
)


@settings(max_examples=20, deadline=None)
@given(interleaving=_INTERLEAVINGS)
def test_appends_interleaved_with_a_run_end_in_one_history(
    interleaving: tuple[int, int, int, int],
) -> None:
    """Appends before, during (at any stage) and after one run: each lands once, in order,
    and the session restores to what one process fed the same log holds."""
    before, stage, during, after = interleaving
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "s.db"
        texts: list[str] = []
        holder: list[ContextManager] = []

        def append(count: int) -> None:
            for _ in range(count):
                text = f"append {len(texts)}"
                holder[0].add_user(text)
                texts.append(text)

        stages: list[Processor] = [ObservationMasker(keep_turns=1), HistorySummarizer()]
        stages.insert(stage, Appender(lambda: append(during)))
        manager = _open(path, stages, FixedSummarizer())
        holder.append(manager)
        try:
            _fill(manager)
            append(before)
            run = anyio.run(manager.compact)
            assert len(texts) == before + during  # the appends during the run happened
            append(after)
            assert run.applied >= 1
            users = [node.text for node in manager.raw if node.kind == "user"]
            assert users[len(users) - len(texts) :] == texts
            expected = _seen(manager.raw, manager.working)
        finally:
            manager.close()
        with contextlib.closing(open_store(path, counter=WordCounter(), read_only=True)) as store:
            session = store.restore(clock=_CLOCK)
            assert _seen(session.raw, session.working) == expected
