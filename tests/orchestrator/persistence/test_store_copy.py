"""`context-graph store copy`: a session moved between SQLite and PostgreSQL, both ways."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

import pytest

from context_graph import AssistantTurn, UserTurn
from context_graph.render import Renderer
from context_graph.testing import WordCounter, graph_snapshot
from orchestrator.cli import main
from orchestrator.persistence import RestoredSession, open_store
from processors.base import Drop, Proposal

_CLOCK = lambda: 1_700_000_000.0  # noqa: E731  (a fixed clock for the audit log)


def _record(location: str) -> None:
    """A session of four turns, one applied drop and two state keys."""
    with contextlib.closing(open_store(location, counter=WordCounter())) as store:
        session = store.restore(clock=_CLOCK)
        for index in range(4):
            session.raw.ingest([UserTurn(content=f"ask {index}")])
            session.raw.ingest([AssistantTurn(content=f"answer {index} " * 5)])
        view = session.working.snapshot()
        unit = next(u for u in view.units() if u.kind == "assistant")
        session.working.apply(
            Proposal(
                processor="dropper",
                edits=(Drop(targets=unit.node_ids),),
                tokens_before=sum(view.tokens(t) for t in unit.node_ids),
                base_version=view.version,
            )
        )
        store.put_states({"triggers": {"armed": True}, "counters": [1, 2]})


def _read(location: str) -> tuple[Any, ...]:
    with contextlib.closing(open_store(location, counter=WordCounter(), read_only=True)) as store:
        session: RestoredSession = store.restore(clock=_CLOCK)
        return (
            graph_snapshot(session.raw),
            session.working.audit(),
            Renderer(format="anthropic").render(session.working).payload,
            session.state,
            session.entries,
        )


class TestStoreCopy:
    def test_a_session_goes_to_postgresql_and_back(
        self, postgres: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """SQLite -> PostgreSQL -> SQLite: each copy restores to the same session."""
        source, back = str(tmp_path / "a.db"), str(tmp_path / "b.db")
        database = postgres.location("copy")
        _record(source)
        assert main(["store", "copy", source, database, "--counter", "words"]) == 0
        assert "copied 9 entries and 2 state keys" in capsys.readouterr().out
        assert main(["store", "copy", database, back, "--counter", "words", "--json"]) == 0
        assert capsys.readouterr().out.strip() == '{"entries": 9, "state_keys": 2}'
        assert _read(database) == _read(source) == _read(back)

    def test_a_destination_holding_a_session_is_refused(
        self, postgres: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """Copying onto a session that has entries fails (exit 2) and changes nothing."""
        source, database = str(tmp_path / "a.db"), postgres.location("held")
        _record(source)
        with contextlib.closing(open_store(database, counter=WordCounter())) as store:
            store.restore(clock=_CLOCK).raw.add_user("already here")
        before = _read(database)
        assert main(["store", "copy", source, database, "--counter", "words"]) == 2
        assert "already holds a session" in capsys.readouterr().err
        assert _read(database) == before

    def test_the_wrong_counter_is_named(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """Without `--counter words` the copy is refused, naming the recorded counter."""
        source, target = str(tmp_path / "a.db"), tmp_path / "b.db"
        _record(source)
        assert main(["store", "copy", source, str(target)]) == 2
        assert "token counter `words`" in capsys.readouterr().err
        assert not target.exists()
