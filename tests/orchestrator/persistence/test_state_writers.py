"""Manager state written by more than one writer: by key, the last write of a key winning.

Why last-writer-wins is what each key wants is in `orchestrator.persistence.manager_state`;
these tests pin the behaviour it rests on, on both backends where both apply.
"""

from __future__ import annotations

import contextlib
from typing import Any

import pytest

from context_graph.errors import StoreConflictError
from context_graph.testing import WordCounter
from orchestrator.persistence import PostgresStore, open_store
from tests.orchestrator.persistence.test_store_contract import (
    Opener,
    _clock,
    backend_fixture,
    reopen_fixture,
)
from tests.orchestrator.policy_keywords import open_manager

__all__ = ["backend_fixture", "reopen_fixture"]  # the contract's fixtures, used here


class TestByKey:
    def test_a_write_of_some_keys_keeps_the_others(self, reopen: Opener) -> None:
        """A second writer writing one key leaves the keys the first wrote as they were."""
        first = reopen()
        first.restore(clock=_clock())
        first.put_states({"calibration": 1, "sent": 1})
        first.close()  # SQLite: one writer at a time
        second = reopen()
        second.restore(clock=_clock())
        second.put_states({"sent": 2})
        second.close()
        assert reopen().restore(clock=_clock()).state == {"calibration": 1, "sent": 2}

    def test_the_last_write_of_a_key_wins(self, reopen: Opener) -> None:
        """Two writes of one key: the later value is the one a restore reads."""
        for value in (1, 2):
            store = reopen()
            store.restore(clock=_clock())
            store.put_states({"sent": value})
            store.close()
        assert reopen().restore(clock=_clock()).state == {"sent": 2}


def _pair(location: str) -> list[Any]:
    stores = [open_store(location, counter=WordCounter(), durable=False) for _ in range(2)]
    for store in stores:
        store.restore(clock=_clock())
    return stores


class TestTwoWorkers:
    def test_refresh_brings_the_other_workers_write_of_a_key_in(self, postgres: Any) -> None:
        """B writes a key A wrote: the later value wins, and A's refresh hands it over."""
        a, b = _pair(postgres.location("s"))
        try:
            a.put_states({"sent": 1, "calibration": 1})
            b.put_states({"sent": 2})
            assert a.refresh().state == {"sent": 2, "calibration": 1}
            assert a.refresh().state is None  # nothing moved since
            rows = postgres.execute(
                "SELECT key, version FROM cg_state s JOIN cg_sessions n ON n.id = s.session_id"
                " WHERE n.name = %s ORDER BY key",
                (a.session,),
            )
            assert rows == [("calibration", 1), ("sent", 2)]
        finally:
            for store in (a, b):
                store.close()

    def test_a_stale_worker_writes_no_state_from_its_stale_view(self, postgres: Any) -> None:
        """B's ingest from a view A moved on is refused before any trigger state is written."""
        location = postgres.location("s")
        options: dict[str, Any] = {"counter": WordCounter(), "durable": False, "budget": 400}
        a = open_manager(location, **options)
        b = open_manager(location, **options)
        try:
            a.add_user("Fix the failing test.")
            store = a.store
            assert isinstance(store, PostgresStore)
            stored = store.state()
            with pytest.raises(StoreConflictError):
                b.add_user("x " * 500)  # would fire the budget triggers
            assert store.state() == stored
            assert b.refresh() == 1
            b.add_user("x " * 500)  # from the current view: its triggers and state land
            assert store.state()["pending"] != stored.get("pending")
        finally:
            for manager in (a, b):
                with contextlib.suppress(Exception):
                    manager.close()

    def test_workers_changing_different_keys_keep_both(self, postgres: Any) -> None:
        """A reports usage (calibration), B renders (what was sent): both keys are kept."""
        location = postgres.location("s")
        options: dict[str, Any] = {"counter": WordCounter(), "durable": False}
        a = open_manager(location, **options)
        b = open_manager(location, **options)
        try:
            a.add_user("Fix the failing test.")
            a.render_sync()
            a.report_usage(40)
            b.refresh()
            b.add_user("And the other one.")
            b.render_sync()
            store = b.store
            assert isinstance(store, PostgresStore)
            state = store.state()
            calibration = state["calibration"]
            assert isinstance(calibration, dict) and calibration["observations"] == 1
            assert state["sent"] == {"nodes": 2}
            assert a.refresh() == 1
            assert a.render_sync().payload == b.render_sync().payload  # calibrated alike
        finally:
            for manager in (a, b):
                manager.close()
