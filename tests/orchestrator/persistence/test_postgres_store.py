"""`PostgresStore` beyond the contract: naming, the driver, the schema, its migrations."""

from __future__ import annotations

import contextlib
import sys
import uuid
from typing import Any

import pytest

from context_graph import UserTurn
from context_graph.errors import (
    ConfigurationError,
    StoreError,
    StoreFormatError,
    StoreUnavailableError,
)
from context_graph.testing import WordCounter
from orchestrator import ContextManager
from orchestrator.persistence import PostgresStore, open_store
from orchestrator.persistence.postgres.schema import SCHEMA_VERSION
from orchestrator.policy import Policy

_CLOCK = lambda: 1_700_000_000.0  # noqa: E731  (a fixed clock for the audit log)


def _open(location: str, **options: Any) -> PostgresStore:
    store = open_store(location, counter=WordCounter(), durable=False, **options)
    assert isinstance(store, PostgresStore)
    return store


def _database(postgres: Any) -> str:
    """A fresh, empty database on the test server; its URL."""
    name = f"cg_{uuid.uuid4().hex[:10]}"
    postgres.execute(f"CREATE DATABASE {name}")
    return postgres.url.rsplit("/", 1)[0] + f"/{name}"


class TestNaming:
    def test_the_fragment_or_session_names_the_session(self, postgres: Any) -> None:
        """`#name` and `session="name"` open the same session; its location shows it."""
        name = f"s-{uuid.uuid4().hex[:8]}"
        with contextlib.closing(_open(f"{postgres.url}#{name}")) as store:
            store.restore(clock=_CLOCK).raw.add_user("kept")
            assert store.location.endswith(f"#{name}") and store.session == name
        with contextlib.closing(_open(postgres.url, session=name, read_only=True)) as reader:
            assert [node.text for node in reader.restore(clock=_CLOCK).raw] == ["kept"]

    def test_two_different_names_are_refused(self, postgres: Any) -> None:
        """A fragment and a `session=` that disagree are a `ConfigurationError`."""
        with pytest.raises(ConfigurationError, match="name it once"):
            _open(f"{postgres.url}#a", session="b")

    def test_a_bad_session_name_is_refused(self, postgres: Any) -> None:
        """A session name with a space is refused, naming the allowed characters."""
        with pytest.raises(ConfigurationError, match="letters"):
            _open(postgres.url, session="two words")

    def test_a_read_only_open_of_a_missing_session_is_refused(self, postgres: Any) -> None:
        """Read-only never creates a session; the message says how to start one."""
        with pytest.raises(StoreError, match="no such session"):
            _open(postgres.location(), read_only=True)

    def test_the_counter_is_remembered(self, postgres: Any) -> None:
        """A session recorded with one counter is refused with another, naming both."""
        location = postgres.location()
        _open(location).close()
        with pytest.raises(StoreError, match="token counter `words`"):
            open_store(location)

    def test_a_password_stays_out_of_the_location(self, postgres: Any) -> None:
        """The password given in the URL is masked in `location`."""
        url = postgres.url.replace("postgres@", "postgres:hunter2@")
        with contextlib.closing(_open(f"{url}#pw")) as store:
            assert "hunter2" not in store.location and ":***@" in store.location

    def test_an_unreachable_server_is_unavailable(self) -> None:
        """Nothing listening: `StoreUnavailableError` after the timeout, naming the store."""
        with pytest.raises(StoreUnavailableError, match="cannot be reached"):
            PostgresStore.open("postgresql://u@127.0.0.1:1/db#s", timeout=1.0)


class TestDriver:
    def test_a_missing_driver_names_the_extra(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """Without psycopg, opening a URL says which extra to install."""
        monkeypatch.setitem(sys.modules, "psycopg", None)
        with pytest.raises(ConfigurationError, match=r"pip install '\.\[postgres\]'"):
            open_store("postgresql://localhost/db#s")


class TestSchema:
    def test_a_new_database_is_migrated_once(self, postgres: Any) -> None:
        """The first open creates the tables and records each migration, once."""
        url = _database(postgres)
        _open(f"{url}#a").close()
        _open(f"{url}#b").close()
        with contextlib.closing(_open(f"{url}#a")) as store:
            assert store.session == "a"
        rows = _query(url, "SELECT version FROM cg_schema ORDER BY version")
        assert rows == [(n,) for n in range(1, SCHEMA_VERSION + 1)]

    def test_a_newer_schema_is_refused(self, postgres: Any) -> None:
        """A database migrated past what this version knows is a `StoreFormatError`."""
        url = _database(postgres)
        _open(f"{url}#a").close()
        _query(url, f"INSERT INTO cg_schema (version) VALUES ({SCHEMA_VERSION + 1})")
        with pytest.raises(StoreFormatError, match="newer context-graph"):
            _open(f"{url}#a")
        assert _query(url, "SELECT count(*) FROM cg_sessions") == [(1,)]

    def test_content_is_stored_once_across_sessions(self, postgres: Any) -> None:
        """Two sessions logging the same batch share one content row, by its digest."""
        url = _database(postgres)
        for name in ("a", "b"):
            with contextlib.closing(_open(f"{url}#{name}")) as store:
                store.restore(clock=_CLOCK).raw.ingest([UserTurn(content="same system brief")])
        assert _query(url, "SELECT count(*) FROM cg_log") == [(2,)]
        assert _query(url, "SELECT count(*) FROM cg_content") == [(1,)]

    def test_the_log_is_ordered_by_sequence_not_time(self, postgres: Any) -> None:
        """Entries whose recorded times run backwards still replay in sequence order."""
        url = _database(postgres)
        with contextlib.closing(_open(f"{url}#a")) as store:
            raw = store.restore(clock=_CLOCK).raw
            for index in range(5):
                raw.add_user(f"turn {index}")
        _query(url, "UPDATE cg_log SET written = 1e9 - seq")
        with contextlib.closing(_open(f"{url}#a", read_only=True)) as reader:
            texts = [node.text for node in reader.restore(clock=_CLOCK).raw]
        assert texts == [f"turn {index}" for index in range(5)]

    def test_state_keeps_a_version_per_key(self, postgres: Any) -> None:
        """Each write of a key counts in its version; other keys keep theirs."""
        url = _database(postgres)
        with contextlib.closing(_open(f"{url}#a")) as store:
            store.restore(clock=_CLOCK)
            store.put_states({"triggers": 1, "counters": 1})
            store.put_states({"triggers": 2})
            assert store.state() == {"triggers": 2, "counters": 1}
        rows = _query(url, "SELECT key, value, version FROM cg_state ORDER BY key")
        assert rows == [("counters", "1", 1), ("triggers", "2", 2)]


class TestManager:
    def test_a_manager_resumes_from_a_database(self, postgres: Any) -> None:
        """`ContextManager.open(url, session=...)` resumes to the same request."""
        name = f"m-{uuid.uuid4().hex[:8]}"
        manager = ContextManager.open(
            postgres.url, session=name, counter=WordCounter(), policy=Policy()
        )
        manager.add_user("Fix the failing test.")
        manager.add_assistant("Looking at it.")
        first = manager.render_sync().payload
        manager.close()
        again = ContextManager.open(
            postgres.url, session=name, counter=WordCounter(), policy=Policy()
        )
        try:
            assert isinstance(again.store, PostgresStore)
            assert again.render_sync().payload == first
        finally:
            again.close()


def _query(url: str, sql: str) -> list[tuple[Any, ...]]:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        cursor = conn.execute(sql.encode())
        return list(cursor.fetchall()) if cursor.description else []


class TestFork:
    def test_a_forked_child_opens_its_own_connections(self, postgres: Any) -> None:
        """A child forked while the parent's store is open writes through pools of its own."""
        import os

        location = postgres.location("fork")
        count = "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'context-graph'"
        with contextlib.closing(_open(location)) as parent:
            parent.restore(clock=_CLOCK).raw.add_user("from the parent")
            before = postgres.execute(count)[0][0]
            pid = os.fork()
            if pid == 0:  # pragma: no cover - the child
                code = 1
                with contextlib.suppress(BaseException):
                    child = _open(location)
                    session = child.restore(clock=_CLOCK)
                    session.raw.add_user("from the child")
                    # The child's statements went over a connection of its own.
                    code = 0 if postgres.execute(count)[0][0] > before else 2
                    child.close()
                os._exit(code)
            _, status = os.waitpid(pid, 0)
            assert os.waitstatus_to_exitcode(status) == 0
            assert parent.refresh().entries == 1
            parent.journal()  # the parent's pooled connections still work
        with contextlib.closing(_open(location, read_only=True)) as reader:
            texts = [node.text for node in reader.restore(clock=_CLOCK).raw]
        assert texts == ["from the parent", "from the child"]
