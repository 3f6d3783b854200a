"""Where the proxy keeps a session's threads: every name is one the store takes, and reads back."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from orchestrator.cli.parser import store_location
from orchestrator.gateway.places import DatabasePlaces, FolderPlaces, folder_name, places_for
from orchestrator.persistence.postgres.connect import parse_location

URL = "postgresql://proxy@db.internal/agents"


@given(session=st.text(min_size=0, max_size=300), number=st.integers(0, 10**6))
def test_every_session_id_names_a_database_session_the_store_takes(
    session: str, number: int
) -> None:
    location = DatabasePlaces(URL, "anthropic").new(session, number)
    where = parse_location(location, None)  # refuses a name the store cannot keep
    wire, folder, thread = where.session.split("/")[1:]
    assert (wire, folder, thread) == ("anthropic", folder_name(session), f"thread-{number}")
    assert where.conninfo == URL


@given(first=st.text(max_size=120), second=st.text(max_size=120))
def test_two_session_ids_never_share_a_folder(first: str, second: str) -> None:
    if first != second:
        assert folder_name(first) != folder_name(second)


def test_a_folder_thread_is_made_with_the_session_it_belongs_to(tmp_path: Path) -> None:
    places = FolderPlaces(tmp_path)
    made = places.new("s/1", 3)
    assert made == tmp_path / folder_name("s/1") / "thread-3.db"
    assert (made.parent / "session.json").read_text() == '{"session": "s/1"}\n'
    made.touch()
    assert places.existing("s/1") == [(3, made)]


def test_the_store_option_tells_a_database_from_a_folder(tmp_path: Path) -> None:
    assert store_location("postgresql://h/db") == "postgresql://h/db"
    assert store_location("POSTGRES://h/db") == "POSTGRES://h/db"
    assert store_location(str(tmp_path)) == tmp_path
    assert isinstance(places_for(URL, "responses"), DatabasePlaces)
    assert isinstance(places_for(tmp_path, "responses"), FolderPlaces)
    assert places_for(None, "responses") is None
