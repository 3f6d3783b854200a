"""Many writers on one PostgreSQL session: conflicts, refresh, the lease, waiting."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from context_graph import UserTurn
from context_graph.errors import StoreConflictError, StoreError
from context_graph.render import Renderer
from context_graph.testing import ScriptedSummarizer, WordCounter, graph_snapshot
from orchestrator import ContextManager
from orchestrator.persistence import PostgresStore, RestoredSession, open_store
from orchestrator.policy import Policy
from orchestrator.working import WorkingGraph
from processors import HistorySummarizer
from processors.base import Drop, Proposal
from tests.orchestrator.policy_keywords import open_manager

_CLOCK = lambda: 1_700_000_000.0  # noqa: E731  (a fixed clock for the audit log)


@pytest.fixture(name="pair")
def pair_fixture(postgres: Any) -> Iterator[list[tuple[PostgresStore, RestoredSession]]]:
    """Two writable stores (two workers) on one fresh session, both restored."""
    location = postgres.location("c")
    stores = [open_store(location, counter=WordCounter(), durable=False) for _ in range(2)]
    pairs = []
    for store in stores:
        assert isinstance(store, PostgresStore)
        pairs.append((store, store.restore(clock=_CLOCK)))
    yield pairs
    for store in stores:
        store.close()


def _seen(session: RestoredSession) -> tuple[Any, ...]:
    return (
        graph_snapshot(session.raw),
        session.working.audit(),
        Renderer(format="openai").render(session.working).payload,
    )


def drop_first(working: WorkingGraph, kind: str = "user") -> Proposal:
    """A proposal that drops the first unit of `kind` in the working view, whole."""
    view = working.snapshot()
    unit = next(u for u in view.units() if u.kind == kind)
    return Proposal(
        processor="dropper",
        edits=(Drop(targets=unit.node_ids),),
        tokens_before=sum(view.tokens(t) for t in unit.node_ids),
        base_version=view.version,
    )


class TestConflicts:
    def test_an_append_from_an_older_view_is_refused_and_changes_nothing(
        self, pair: list[tuple[PostgresStore, RestoredSession]]
    ) -> None:
        """B appends after A did: `StoreConflictError`, B's memory and the log unchanged."""
        (store_a, a), (_, b) = pair
        a.raw.add_user("from A")
        before = _seen(b)
        with pytest.raises(StoreConflictError, match="refresh") as refused:
            b.raw.add_user("from B")
        assert (refused.value.expected, refused.value.found) == (0, 1)
        assert _seen(b) == before
        assert [entry.seq for entry in store_a.journal()] == [1]

    def test_refresh_brings_the_new_entries_in_and_the_retry_lands(
        self, pair: list[tuple[PostgresStore, RestoredSession]]
    ) -> None:
        """After refresh B holds A's entries, its retry lands, and both views agree."""
        (store_a, a), (store_b, b) = pair
        a.raw.add_user("from A")
        a.raw.add_assistant("A answers")
        with pytest.raises(StoreConflictError):
            b.raw.add_user("from B")
        assert store_b.refresh().entries == 2
        b.raw.add_user("from B")
        b.working.apply(drop_first(b.working))
        assert store_a.refresh().entries == 2
        assert _seen(a) == _seen(b)
        with contextlib.closing(open_store(store_a.location, counter=WordCounter())) as fresh:
            assert _seen(fresh.restore(clock=_CLOCK)) == _seen(a)

    def test_an_apply_from_an_older_view_is_refused(
        self, pair: list[tuple[PostgresStore, RestoredSession]]
    ) -> None:
        """A proposal applied from a stale view is a conflict; the audit log is unchanged."""
        (_, a), (store_b, b) = pair
        a.raw.add_user("one")
        store_b.refresh()
        a.raw.add_user("two")
        with pytest.raises(StoreConflictError):
            b.working.apply(drop_first(b.working))
        assert b.working.audit() == ()

    def test_refresh_without_news_brings_nothing(
        self, pair: list[tuple[PostgresStore, RestoredSession]]
    ) -> None:
        """A refresh with nothing new replays nothing and reports no state."""
        (store_a, a), _ = pair
        a.raw.add_user("one")
        assert (store_a.refresh().entries, store_a.refresh().state) == (0, None)

    def test_refresh_inside_an_atomic_block_is_refused(
        self, pair: list[tuple[PostgresStore, RestoredSession]]
    ) -> None:
        """Others' entries are not replayed on top of a block's unwritten changes."""
        (_, a), (store_b, b) = pair
        a.raw.add_user("from A")
        with store_b.atomic():
            with pytest.raises(StoreError, match="inside an atomic"):
                store_b.refresh()
        assert len(b.raw) == 0

    def test_a_block_of_applies_from_an_older_view_is_taken_back(
        self, pair: list[tuple[PostgresStore, RestoredSession]]
    ) -> None:
        """A block of applies only, refused because A appended: taken back, B goes on."""
        (_, a), (store_b, b) = pair
        a.raw.add_user("one")
        store_b.refresh()
        a.raw.add_user("two")
        with pytest.raises(StoreConflictError, match="refresh"), store_b.atomic():
            b.working.apply(drop_first(b.working))
        assert b.working.audit() == ()
        assert store_b.refresh().entries == 1
        b.working.apply(drop_first(b.working))  # the retry lands
        assert [entry.kind for entry in store_b.journal()] == ["events", "events", "proposals"]

    def test_managers_refresh_and_retry(self, postgres: Any) -> None:
        """Two managers on one session: the stale one refreshes, retries, renders the same."""
        location = postgres.location("m")
        first = ContextManager.open(location, counter=WordCounter(), durable=False, policy=Policy())
        second = ContextManager.open(
            location, counter=WordCounter(), durable=False, policy=Policy()
        )
        try:
            first.add_user("from the first worker")
            with pytest.raises(StoreConflictError):
                second.add_user("from the second worker")
            assert second.refresh() == 1
            second.add_user("from the second worker")
            assert first.refresh() == 1
            assert first.render_sync().payload == second.render_sync().payload
        finally:
            first.close()
            second.close()


class TestLease:
    def test_one_worker_holds_the_lease_at_a_time(
        self, pair: list[tuple[PostgresStore, RestoredSession]]
    ) -> None:
        """While A holds the lease, B's attempt is refused, naming the holder."""
        (store_a, _), (store_b, _) = pair
        with store_a.lease(holder="compactor-a") as lease:
            with pytest.raises(StoreConflictError, match="compactor-a"), store_b.lease():
                pass
        with store_b.lease(holder="compactor-b") as later:
            assert later.token > lease.token

    def test_a_stale_compactors_result_is_refused(
        self, pair: list[tuple[PostgresStore, RestoredSession]], postgres: Any
    ) -> None:
        """A lease that expired and was taken over: its holder's block writes nothing."""
        (store_a, a), (store_b, b) = pair
        a.raw.add_user("one")
        store_b.refresh()
        with store_a.lease(holder="slow") as stale:
            postgres.execute(
                "UPDATE cg_sessions SET lease_until = now() - interval '1 second'"
                " WHERE lease_holder = 'slow'"
            )
            with store_b.lease(holder="fast") as fresh:
                assert fresh.token == stale.token + 1
                with pytest.raises(StoreConflictError, match="taken over"), store_a.atomic():
                    a.working.apply(drop_first(a.working))
        assert [entry.kind for entry in store_b.journal()] == ["events"]
        assert a.working.audit() == ()  # the refused block was taken back from memory
        b.working.apply(drop_first(b.working))  # the worker holding the lease goes on
        store_a.refresh()
        a.raw.add_user("two")  # and the refused one's store still writes
        assert _seen(a) == _seen(b) if store_b.refresh().entries == 1 else False


class TestWaiting:
    def test_a_waiter_wakes_on_another_workers_append(
        self, pair: list[tuple[PostgresStore, RestoredSession]]
    ) -> None:
        """`wait` returns once B's append commits (NOTIFY), well before its timeout."""
        (_, a), (store_b, _) = pair
        woke: list[bool] = []
        listening = threading.Thread(target=lambda: woke.append(store_b.wait(timeout=30)))
        listening.start()
        a.raw.ingest([UserTurn(content="news")])
        listening.join(timeout=30)
        assert woke == [True]
        assert store_b.refresh().entries == 1

    def test_a_wait_with_nothing_new_ends_at_its_timeout(
        self, pair: list[tuple[PostgresStore, RestoredSession]]
    ) -> None:
        """Without appends, `wait` gives up after its timeout and says so."""
        (_, a), (store_b, _) = pair
        a.raw.add_user("seen")
        store_b.refresh()
        assert store_b.wait(timeout=0.3, poll=0.1) is False


def fill(manager: ContextManager) -> None:
    """A coding session with four large tool outputs, enough for a compaction to work on."""
    manager.add_system("You are a careful coding agent.")
    manager.add_user("Fix the failing test.")
    for step in range(4):
        manager.add_assistant(
            f"Running the tests, step {step}.",
            tool_calls=[{"id": f"call_{step}", "name": "bash", "arguments": {"cmd": "pytest"}}],
        )
        manager.add_tool_result(f"call_{step}", "\n".join(f"line {j} ok" for j in range(200)))
        manager.add_user(f"Go on with step {step + 1}.")


class TestManagerCompaction:
    async def test_a_compaction_under_a_lost_lease_keeps_nothing(self, postgres: Any) -> None:
        """A manager compacting after its lease was taken over: refused, the log unchanged."""
        location = postgres.location("lm")

        def manager() -> ContextManager:
            summarizer = ScriptedSummarizer(["The tests ran four times; all ok."] * 4)
            return ContextManager.open(
                location,
                counter=WordCounter(),
                durable=False,
                policy=Policy(summarizer=summarizer, pipeline=[HistorySummarizer()]),
            )

        slow, fast = manager(), manager()
        try:
            fill(slow)
            fast.refresh()
            slow_store, fast_store = slow.store, fast.store
            assert isinstance(slow_store, PostgresStore) and isinstance(fast_store, PostgresStore)
            entries = len(list(fast_store.journal()))
            with slow_store.lease(holder="slow"):
                postgres.execute(
                    "UPDATE cg_sessions SET lease_until = now() - interval '1 second'"
                    " WHERE lease_holder = 'slow'"
                )
                with fast_store.lease(holder="fast"):
                    with pytest.raises(StoreConflictError, match="taken over"):
                        await slow.compact()
                    assert len(list(fast_store.journal())) == entries
                    run = await fast.compact()  # the lease holder's run lands
            assert run.applied == 1
            assert [e.kind for e in fast_store.journal()][entries:] == ["proposals"]
        finally:
            slow.close()
            fast.close()

    async def test_a_compaction_from_a_current_view_lands_for_everyone(self, postgres: Any) -> None:
        """A run under the lease lands; another worker's refresh renders what it renders."""
        location = postgres.location("lc")
        summarizer = ScriptedSummarizer(["The tests ran four times; all ok."] * 4)
        options: dict[str, Any] = {"counter": WordCounter(), "durable": False}
        worker = open_manager(location, **options)
        compactor = open_manager(
            location,
            **options,
            policy=Policy(summarizer=summarizer, pipeline=[HistorySummarizer()]),
        )
        try:
            fill(worker)
            compactor.refresh()
            store = compactor.store
            assert isinstance(store, PostgresStore)
            with store.lease(holder="compactor"):
                assert (await compactor.compact()).applied == 1
            assert worker.refresh() == 1
            assert (await worker.render()).payload == (await compactor.render()).payload
        finally:
            worker.close()
            compactor.close()


_MOVES = st.lists(st.tuples(st.integers(0, 2), st.sampled_from(["ingest", "refresh"])), max_size=12)


@settings(max_examples=15, deadline=None)
@given(moves=_MOVES)
def test_any_interleaving_of_writers_ends_in_one_history(postgres: Any, moves: list[Any]) -> None:
    """Three writers ingesting and refreshing in any order: each lands once, all agree."""
    location = postgres.location("h")
    stores = [open_store(location, counter=WordCounter(), durable=False) for _ in range(3)]
    try:
        sessions = [store.restore(clock=_CLOCK) for store in stores]
        landed = []
        for number, (writer, move) in enumerate(moves):
            if move == "refresh":
                stores[writer].refresh()
                continue
            text = f"writer {writer} move {number}"
            try:
                sessions[writer].raw.add_user(text)
            except StoreConflictError:
                stores[writer].refresh()
                sessions[writer].raw.add_user(text)
            landed.append(text)
        for store in stores:
            store.refresh()
        assert [node.text for node in sessions[0].raw] == landed
        assert _seen(sessions[0]) == _seen(sessions[1]) == _seen(sessions[2])
    finally:
        for store in stores:
            store.close()
