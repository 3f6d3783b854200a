"""`open_store`: a location picks its backend; what it cannot open is named."""

from __future__ import annotations

import contextlib
from pathlib import Path

import pytest

from context_graph.errors import ConfigurationError, StoreError
from context_graph.testing import WordCounter
from orchestrator.persistence import SQLiteStore, open_store


class TestOpenStore:
    @pytest.mark.parametrize("as_text", [False, True], ids=["path", "text"])
    def test_a_path_opens_a_sqlite_session_file(self, tmp_path: Path, as_text: bool) -> None:
        """A path, as `Path` or as text, is a SQLite file, created with its options."""
        path = tmp_path / "session.db"
        with contextlib.closing(
            open_store(str(path) if as_text else path, counter=WordCounter())
        ) as store:
            assert isinstance(store, SQLiteStore)
            assert store.location == str(path)
            store.restore(clock=lambda: 0.0).raw.add_user("kept")
        assert path.exists()
        reader = open_store(path, counter=WordCounter(), read_only=True)
        assert isinstance(reader, SQLiteStore) and reader.read_only
        assert [node.text for node in reader.restore(clock=lambda: 0.0).raw] == ["kept"]
        reader.close()

    def test_the_counter_is_passed_on(self, tmp_path: Path) -> None:
        """The counter reaches the backend: reopening with another one is refused."""
        path = tmp_path / "session.db"
        open_store(path, counter=WordCounter()).close()
        with pytest.raises(StoreError, match="token counter"):
            open_store(path)

    @pytest.mark.parametrize(
        "url",
        [
            "postgresql://agent@db.internal:5432/sessions",
            "postgres://localhost/sessions",
            "POSTGRESQL://localhost/sessions",
        ],
    )
    def test_a_postgresql_url_without_a_session_is_refused_before_connecting(
        self, url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A database holds many sessions: a URL naming none is refused; no file is made."""
        monkeypatch.chdir(tmp_path)
        with pytest.raises(ConfigurationError, match="name one"):
            open_store(url)
        assert list(tmp_path.iterdir()) == []

    def test_a_session_name_for_a_file_is_refused(self, tmp_path: Path) -> None:
        """A file holds one session, so `session=` with a path is a mistake, named."""
        with pytest.raises(ConfigurationError, match="holds one session"):
            open_store(tmp_path / "session.db", session="s1")
        assert list(tmp_path.iterdir()) == []

    def test_a_url_keeps_its_password_out_of_the_message(self) -> None:
        """The password of a URL's user part is masked in the error."""
        with pytest.raises(ConfigurationError) as refused:
            open_store("postgresql://agent:hunter2@db/sessions")
        assert "hunter2" not in str(refused.value)
        assert "postgresql://agent:***@db/sessions" in str(refused.value)

    def test_a_url_of_another_scheme_is_refused(self) -> None:
        """A URL of a scheme no backend reads is named with the scheme."""
        with pytest.raises(ConfigurationError, match=r"no backend reads `mysql://` URLs"):
            open_store("mysql://localhost/sessions")
