"""The manager's own compaction on a shared PostgreSQL session: its lease, and rebases.

Two workers are two managers, each with its own store (and its own connections). A
compaction is held mid-run by its summarizer, which waits for the test (a thread) or
runs the other worker's move itself (a hook), so every interleaving is deterministic.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Awaitable, Callable, Iterator, Sequence
from typing import Any

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from context_graph.errors import StoreConflictError, StoreError
from context_graph.graph.nodes import Node
from context_graph.render import Renderer
from context_graph.testing import Recorder, WordCounter, graph_snapshot
from context_graph.validate import validate
from orchestrator import ContextManager
from orchestrator.persistence import PostgresStore, open_store
from orchestrator.policy import Policy
from processors import HistorySummarizer, ObservationMasker
from tests.orchestrator.persistence.test_postgres_concurrency import drop_first, fill
from tests.orchestrator.policy_keywords import open_manager
from tests.orchestrator.test_manager_lease import Appender

_CLOCK = lambda: 1_700_000_000.0  # noqa: E731  (a fixed clock for the audit log)
_SUMMARY = "The tests ran four times; all ok."


class HookSummarizer:
    """A summarizer that runs `hook` (another worker's move) before it answers."""

    def __init__(self, hook: Callable[[], Awaitable[None]] | None = None) -> None:
        self.hook = hook
        self.calls = 0

    async def summarize(
        self, nodes: Sequence[Node], *, previous: str | None, instructions: str | None
    ) -> str:
        """Run the hook once, then answer the same summary every time."""
        self.calls += 1
        hook, self.hook = self.hook, None
        if hook is not None:
            await hook()
        return _SUMMARY


def _open(location: str, summarizer: Any = None, **options: Any) -> ContextManager:
    options.setdefault("pipeline", [HistorySummarizer()])
    return open_manager(
        location,
        counter=WordCounter(),
        durable=False,
        clock=_CLOCK,
        **options,
        policy=Policy(summarizer=summarizer if summarizer is not None else HookSummarizer()),
    )


def _store(manager: ContextManager) -> PostgresStore:
    store = manager.store
    assert isinstance(store, PostgresStore)
    return store


def _kinds(manager: ContextManager) -> list[str]:
    return [entry.kind for entry in _store(manager).journal()]


def _single_process(location: str) -> tuple[Any, ...]:
    """What one process fed the stored log holds and renders."""
    with contextlib.closing(open_store(location, counter=WordCounter(), read_only=True)) as store:
        session = store.restore(clock=_CLOCK)
    return _seen(session.raw, session.working)


def _seen(raw: Any, working: Any) -> tuple[Any, ...]:
    return (
        graph_snapshot(raw),
        working.audit(),
        Renderer(format="openai").render(working).payload,
    )


@pytest.fixture(name="location")
def location_fixture(postgres: Any) -> str:
    """A fresh session's URL."""
    return str(postgres.location("mc"))


@pytest.fixture(name="summarizers")
def summarizers_fixture() -> list[HookSummarizer]:
    """The two workers' summarizers (set `hook` to act while one summarizes)."""
    return [HookSummarizer(), HookSummarizer()]


@pytest.fixture(name="workers")
def workers_fixture(
    location: str, summarizers: list[HookSummarizer]
) -> Iterator[list[ContextManager]]:
    """Two managers on the session (the first filled it), both up to date."""
    first, second = (_open(location, summarizer) for summarizer in summarizers)
    fill(first)
    second.refresh()
    yield [first, second]
    for manager in (first, second):
        with contextlib.suppress(Exception):
            manager.close()


def _expire(postgres: Any, location: str) -> None:
    session = location.rpartition("#")[2]
    postgres.execute(
        "UPDATE cg_sessions SET lease_until = now() - interval '1 second' WHERE name = %s",
        (session,),
    )


class TestTheManagerTakesTheLease:
    def test_a_worker_holding_the_lease_compacts_and_another_renders_meanwhile(
        self, workers: list[ContextManager], summarizers: list[HookSummarizer]
    ) -> None:
        """While A compacts (in its thread), B's over-budget render defers, fits and is valid."""
        a, b = workers
        started, finish = threading.Event(), threading.Event()

        async def hold() -> None:
            started.set()
            await anyio.to_thread.run_sync(finish.wait)

        summarizers[0].hook = hold
        done: list[Any] = []
        compacting = threading.Thread(target=lambda: done.append(anyio.run(a.compact)))
        compacting.start()
        try:
            assert started.wait(timeout=30)
            with Recorder(b.bus) as recorder:
                result = b.render_sync(budget=900)
        finally:
            finish.set()
            compacting.join(timeout=60)
        (deferred, *more) = [e for e in recorder.events if e.name == "compaction_deferred"]
        assert "being compacted" in deferred.payload["reason"]
        assert more == [] or all(e.payload["floor"] for e in more)
        assert "compaction_done" not in recorder.names()
        assert result.tokens <= 900
        assert validate(result.payload, "openai") == []
        assert b.working.audit() == ()  # B compacted nothing
        assert done[0].applied == 1  # A did, and its run landed
        assert _kinds(a).count("proposals") == 1
        assert b.refresh() == 1
        assert (
            _seen(b.raw, b.working)
            == _seen(a.raw, a.working)
            == _single_process(_store(a).location)
        )

    async def test_a_compaction_does_not_wait_for_a_lease_held_elsewhere(
        self, workers: list[ContextManager]
    ) -> None:
        """`compact()` under another worker's lease applies nothing, says so, and raises not."""
        a, b = workers
        with _store(a).lease(holder="worker-a"), Recorder(b.bus) as recorder:
            run = await b.compact()
        assert (run.applied, run.stages) == (0, [])
        (event,) = [e for e in recorder.events if e.name == "compaction_deferred"]
        assert "worker-a" in event.payload["reason"]
        assert not event.payload["background"]
        assert _kinds(b).count("proposals") == 0
        assert (await b.compact()).applied == 1  # once the lease is free, B compacts

    async def test_the_lease_is_given_back_after_a_run(self, workers: list[ContextManager]) -> None:
        """After the manager's run the lease is free for another worker at once."""
        a, b = workers
        assert (await a.compact()).applied == 1
        b.refresh()
        with _store(b).lease(holder="next") as lease:
            assert lease.token >= 2  # the run's lease came first

    async def test_a_stale_compactors_run_is_refused_and_nothing_of_it_written(
        self,
        workers: list[ContextManager],
        summarizers: list[HookSummarizer],
        postgres: Any,
        location: str,
    ) -> None:
        """A's lease expires mid-run and B takes over: A's run is refused, A stays usable."""
        a, b = workers

        async def lose_the_lease() -> None:
            _expire(postgres, location)
            assert (await b.compact()).applied == 1  # B takes the lease over and lands

        summarizers[0].hook = lose_the_lease
        before = _kinds(b)
        with pytest.raises(StoreConflictError, match="taken over"):
            await a.compact()
        assert _kinds(a) == [*before, "proposals"]  # only B's run is in the log
        assert a.working.audit() == ()  # A's run was taken back from memory
        assert a.refresh() == 1
        a.add_user("A goes on")  # the store still writes
        b.refresh()
        assert _seen(a.raw, a.working) == _seen(b.raw, b.working) == _single_process(location)


class TestARunThatRacesAnAppendRebases:
    async def test_an_append_during_a_run_lands_first_and_the_run_after_it(
        self, workers: list[ContextManager], summarizers: list[HookSummarizer], location: str
    ) -> None:
        """B ingests while A compacts: A's run lands after B's turn; nothing is lost."""
        a, b = workers

        async def append() -> None:
            b.add_user("B's turn, while A compacts")

        summarizers[0].hook = append
        before = _kinds(a)
        run = await a.compact()
        assert run.applied == 1
        assert _kinds(a) == [*before, "events", "proposals"]
        assert [node.text for node in a.raw][-1] == "B's turn, while A compacts"
        a.add_user("A goes on")  # the store still writes
        assert b.refresh() == 2
        assert _seen(a.raw, a.working) == _seen(b.raw, b.working) == _single_process(location)
        assert (await a.render()).payload == (await b.render()).payload

    async def test_a_run_made_invalid_by_the_newer_log_is_dropped_whole(
        self, workers: list[ContextManager], summarizers: list[HookSummarizer], location: str
    ) -> None:
        """B drops nodes A's summary takes: A's proposal is refused on the bus, not written."""
        a, b = workers

        async def touch() -> None:
            b.working.apply(drop_first(b.working, "assistant"))

        summarizers[0].hook = touch
        before = _kinds(a)
        with Recorder(a.bus) as recorder:
            run = await a.compact()
        (rejected,) = [e for e in recorder.events if e.name == "proposal_rejected"]
        assert rejected.payload["proposal"].processor == "summarize"
        assert "targets_current" in rejected.payload["reason"]
        assert (run.applied, run.rejected) == (0, 1)
        assert (a.stats().proposals_applied, a.stats().proposals_rejected) == (0, 1)
        assert _kinds(a) == [*before, "proposals"]  # B's drop only
        assert [entry.processor for entry in a.working.audit()] == ["dropper"]
        assert _seen(a.raw, a.working) == _single_process(location)
        a.add_user("A goes on")

    async def test_a_run_rebases_over_several_appends(
        self, workers: list[ContextManager], summarizers: list[HookSummarizer], location: str
    ) -> None:
        """Three appends of B (turns and an output) during A's run all land before it."""
        a, b = workers

        async def append() -> None:
            b.add_user("first")
            b.add_assistant(
                "checking", tool_calls=[{"id": "late", "name": "bash", "arguments": {}}]
            )
            b.add_tool_result("late", "ok")

        summarizers[0].hook = append
        before = _kinds(a)
        assert (await a.compact()).applied == 1
        assert _kinds(a) == [*before, "events", "events", "events", "proposals"]
        b.refresh()
        assert _seen(a.raw, a.working) == _seen(b.raw, b.working) == _single_process(location)

    async def test_a_run_its_own_worker_ingested_into_is_refused_when_the_log_moved(
        self, workers: list[ContextManager], summarizers: list[HookSummarizer]
    ) -> None:
        """A ingests during its own run and B appends: A's run cannot be rebased, and says so."""
        a, b = workers

        async def both() -> None:
            a.add_user("A's turn, during its own run")  # joins A's run in the log
            b.add_user("B's turn")

        summarizers[0].hook = both
        before = _kinds(b)
        with pytest.raises(StoreConflictError, match="refresh"):
            await a.compact()
        assert _kinds(b) == [*before, "events"]  # B's turn only
        with pytest.raises(StoreError, match="reopen"):
            a.add_user("A goes on")


_INTERLEAVINGS = st.tuples(
    st.integers(0, 2),  # B's appends before A's run (A has not refreshed them)
    st.integers(0, 1),  # the stage of A's run B appends at (before the mask, the summary)
    st.integers(0, 3),  # B's appends during the run
)


@settings(max_examples=12, deadline=None)
@given(interleaving=_INTERLEAVINGS)
def test_appends_of_another_worker_at_any_point_of_a_run(
    postgres: Any, interleaving: tuple[int, int, int]
) -> None:
    """B appends before and during A's run, at any stage: A's run lands after all of it,
    no turn is lost, and both workers hold what one process fed the log holds."""
    before, stage, during = interleaving
    location = postgres.location("hi")
    texts: list[str] = []
    workers: list[ContextManager] = []

    def append(count: int) -> None:
        for _ in range(count):
            text = f"B's turn {len(texts)}"
            try:
                workers[1].add_user(text)
            except StoreConflictError:  # the worker's loop: refresh, then retry
                workers[1].refresh()
                workers[1].add_user(text)
            texts.append(text)

    stages: list[Any] = [ObservationMasker(keep_turns=1), HistorySummarizer()]
    stages.insert(stage, Appender(lambda: append(during)))
    a = _open(location, pipeline=stages)
    workers.extend([a, _open(location)])
    b = workers[1]
    try:
        fill(a)
        b.refresh()
        append(before)
        try:
            a.add_user("A's own turn")
        except StoreConflictError:  # B appended first: A refreshes and retries
            a.refresh()
            a.add_user("A's own turn")
        texts.append("A's own turn")
        run = anyio.run(a.compact)
        assert run.applied >= 1
        assert len(texts) == before + 1 + during  # B's appends during the run happened
        kinds = _kinds(a)  # the run's entries are the last, after everything B appended
        assert kinds[-run.applied :] == ["proposals"] * run.applied
        assert kinds.count("proposals") == run.applied
        b.refresh()
        users = [node.text for node in a.raw if node.kind == "user"]
        assert [text for text in users if "turn" in text] == texts
        assert _seen(a.raw, a.working) == _seen(b.raw, b.working) == _single_process(location)
    finally:
        for manager in workers:
            manager.close()
