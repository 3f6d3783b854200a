"""A render on a shared PostgreSQL session answers, whoever holds the lease or wins a race.

A render is a read for its caller: when the compaction it needs cannot be written (another
worker holds the lease, or other workers' appends keep moving the log), it still answers
under its budget, from its own fit, and nothing of the session is lost.
"""

from __future__ import annotations

import contextlib
import threading
from typing import Any

from context_graph.errors import StoreConflictError
from context_graph.render import Renderer
from context_graph.testing import Recorder, WordCounter, graph_snapshot
from context_graph.validate import validate
from orchestrator import ContextManager
from orchestrator.persistence import PostgresStore, open_store
from processors import HistorySummarizer
from tests.orchestrator.persistence.test_postgres_compaction import HookSummarizer
from tests.orchestrator.persistence.test_postgres_concurrency import fill
from tests.orchestrator.policy_keywords import open_manager

_CLOCK = lambda: 1_700_000_000.0  # noqa: E731  (a fixed clock for the audit log)
_BIG = "\n".join(f"line {j}: collected 12 items, 1 failed" for j in range(400))


def _open(location: str, **options: Any) -> ContextManager:
    return open_manager(location, counter=WordCounter(), durable=False, clock=_CLOCK, **options)


def _store(manager: ContextManager) -> PostgresStore:
    store = manager.store
    assert isinstance(store, PostgresStore)
    return store


def _fresh(location: str) -> tuple[Any, ...]:
    """What a fresh reader of the log holds and renders."""
    with contextlib.closing(open_store(location, counter=WordCounter(), read_only=True)) as store:
        session = store.restore(clock=_CLOCK)
    payload = Renderer(format="openai").render(session.working).payload
    return graph_snapshot(session.raw), session.working.audit(), payload


def _big_latest_turn(manager: ContextManager) -> None:
    """A session whose latest turn (a call and its 3,600-word output) alone exceeds 900."""
    manager.add_system("You are a careful coding agent.")
    manager.add_user("Run the tests and fix what fails.")
    manager.add_assistant(
        "Running them.", tool_calls=[{"id": "run", "name": "bash", "arguments": {"cmd": "pytest"}}]
    )
    manager.add_tool_result("run", _BIG)


class TestARenderUnderAnotherWorkersLease:
    def test_a_latest_turn_over_the_budget_is_fitted_without_writing(self, postgres: Any) -> None:
        """A holds the lease; B's render of a turn too big for the budget answers under it,
        valid, and writes nothing: the log and a fresh reader still hold the whole output."""
        location = postgres.location("rl")
        a, b = _open(location), _open(location)
        try:
            _big_latest_turn(b)
            a.refresh()
            before = _fresh(location)
            with _store(a).lease(holder="worker-a"), Recorder(b.bus) as recorder:
                result = b.render_sync(budget=900)
            assert result.tokens <= 900
            assert validate(result.payload, "openai") == []
            assert "compaction_deferred" in recorder.names()
            assert _fresh(location) == before  # B wrote no entry
            assert [entry.kind for entry in _store(b).journal()].count("proposals") == 0
            assert b.working.audit() == ()  # and its own view is the log's
            assert a.render_sync(budget=900).tokens <= 900  # the lease is free again: A fits it
        finally:
            a.close()
            b.close()

    async def test_an_async_render_under_the_lease_fits_too(self, postgres: Any) -> None:
        """The same through `await render()`: under budget, nothing written."""
        location = postgres.location("ra")
        a, b = _open(location), _open(location)
        try:
            _big_latest_turn(b)
            a.refresh()
            with _store(a).lease(holder="worker-a"):
                result = await b.render(budget=900)
            assert result.tokens <= 900
            assert b.working.audit() == ()
        finally:
            a.close()
            b.close()


class TestARenderWhoseCompactionIsNotKept:
    def test_the_floors_truncation_racing_an_append_lands_after_it(self, postgres: Any) -> None:
        """A appends while B's render cuts the floor: the cut lands after A's turn (rebased),
        the render answers under budget, and B and a fresh reader hold the same."""
        location = postgres.location("rf")
        # No truncator in B's pipeline: the render's own run cannot cut the big output,
        # so the floor's truncation does.
        a, b = _open(location), _open(location, pipeline=[HistorySummarizer()])
        try:
            _big_latest_turn(b)
            a.refresh()

            def append(_: object, **event: Any) -> None:
                if event["proposal"].processor == "truncate" and not a.working.audit():
                    a.add_user("A's turn, while B cuts its floor")

            b.bus.connect("proposal_made", append)
            result = b.render_sync(budget=900)
            assert result.tokens <= 900
            assert validate(result.payload, "openai") == []
            kinds = [entry.kind for entry in _store(b).journal()]
            assert kinds[-2:] == ["events", "proposals"]  # A's turn, then B's cut
            assert [n.text for n in b.raw][-1] == "A's turn, while B cuts its floor"
            assert _fresh(location)[:2] == (graph_snapshot(b.raw), b.working.audit())
        finally:
            a.close()
            b.close()

    def test_a_run_whose_lease_is_taken_over_still_answers(self, postgres: Any) -> None:
        """B's render compacts; mid-run its lease expires and A takes it over: B's run is
        refused by the store, yet the render answers under budget and writes nothing."""
        location = postgres.location("rt")
        options: dict[str, Any] = {"pipeline": [HistorySummarizer()]}
        a = _open(location, summarizer=HookSummarizer(), **options)
        b = _open(location, summarizer=HookSummarizer(), **options)
        held = contextlib.ExitStack()
        try:
            fill(b)
            a.refresh()
            before = _fresh(location)

            def take_over(_: object, **event: Any) -> None:
                if event["proposal"].processor == "summarize" and not held._exit_callbacks:
                    session = location.rpartition("#")[2]
                    postgres.execute(
                        "UPDATE cg_sessions SET lease_until = now() - interval '1 second'"
                        " WHERE name = %s",
                        (session,),
                    )
                    held.enter_context(_store(a).lease(holder="worker-a"))

            b.bus.connect("proposal_made", take_over)
            with Recorder(b.bus) as recorder:
                result = b.render_sync(budget=900)
            assert held._exit_callbacks  # the take-over happened mid-run
            assert result.tokens <= 900
            assert validate(result.payload, "openai") == []
            reasons = [
                e.payload["reason"] for e in recorder.events if e.name == "compaction_deferred"
            ]
            assert any("taken over" in reason for reason in reasons)
            assert _fresh(location) == before  # nothing of B's run was written
            assert b.working.audit() == ()  # and B's memory is the log's
            assert b.stats().proposals_applied == 0
        finally:
            held.close()
            a.close()
            b.close()


def _worker(location: str, name: str, turns: int, failures: list[BaseException]) -> list[str]:
    """One worker's loop: refresh, ingest (retried on a conflict), render under a small budget."""
    manager = _open(location)
    landed: list[str] = []
    try:
        for turn in range(turns):
            text = f"{name} turn {turn}"
            events: list[dict[str, Any]] = [
                {"type": "user", "content": text},
                {
                    "type": "assistant",
                    "content": "checking",
                    "tool_calls": [{"id": f"{name}-{turn}", "name": "bash", "arguments": {}}],
                },
                {"type": "tool_result", "call_id": f"{name}-{turn}", "content": _BIG[:3000]},
            ]
            manager.refresh()
            while True:
                try:
                    manager.ingest(events)
                    break
                except StoreConflictError:
                    manager.refresh()
            landed.append(text)
            try:
                result = manager.render_sync(budget=1500)
            except BaseException as exc:
                failures.append(exc)
                continue
            assert result.tokens <= 1500
    finally:
        manager.close()
    return landed


class TestRendersRacingAppends:
    def test_four_workers_appending_and_rendering_at_once(self, postgres: Any) -> None:
        """4 workers each ingest and render 30 turns on one session at once: no render raises,
        every turn is in the log once and in order per worker, and a worker's render after
        refresh equals a fresh reader's."""
        location = postgres.location("rr")
        seed = _open(location)
        seed.add_system("You are a careful coding agent.")
        seed.close()
        failures: list[BaseException] = []
        landed: dict[str, list[str]] = {}

        def run(name: str) -> None:
            landed[name] = _worker(location, name, 30, failures)

        threads = [threading.Thread(target=run, args=(f"w{n}",)) for n in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=300)
        assert failures == []
        with contextlib.closing(open_store(location, counter=WordCounter(), read_only=True)) as s:
            users = [n.text for n in s.restore(clock=_CLOCK).raw if n.kind == "user"]
        assert sorted(users) == sorted(t for texts in landed.values() for t in texts)
        for name, texts in landed.items():
            assert [u for u in users if u.startswith(f"{name} ")] == texts
        readers = [_open(location), _open(location)]
        try:
            readers[0].add_user("one more turn")  # the first reader moves on, the second refreshes
            assert readers[1].refresh() == 1
            assert _fresh(location)[:2] == (
                graph_snapshot(readers[1].raw),
                readers[1].working.audit(),
            )
            assert (
                _fresh(location)[2] == Renderer(format="openai").render(readers[1].working).payload
            )
        finally:
            for reader in readers:
                reader.close()
