"""A reverted opencode session (`/undo`: `revert` in the session's info) imports without the
messages opencode removes at its next prompt, which the model is never sent again. Hand-made
exports and databases in opencode's shapes; what is removed is what opencode's own cleanup
(`SessionRevert.cleanup`) removes.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from context_graph.errors import IngestError
from context_graph.importers import RawInput, load_sessions
from orchestrator.cli import main
from tests.context_graph.importers.test_opencode import (
    _assistant,
    _database,
    _export,
    _text,
    _tool,
    _user,
    _words,
)

Record = dict[str, Any]


def _work() -> Record:
    return _export(
        _user(_text("Read the notes."), message_id="m1"),
        _assistant(_text("Reading."), _tool("c1"), message_id="m2"),
        _user(_text("Now delete them."), message_id="m3"),
        _assistant(_text("Deleting."), _tool("c2"), message_id="m4"),
    )


def _reverted(export: Record, **revert: Any) -> Record:
    return {**export, "info": {**export["info"], "revert": revert}}


def _said(data: Any) -> list[str]:
    (session,) = load_sessions(RawInput(data), format="opencode")
    return [_words(e) for e in session.events]


def test_the_messages_from_the_revert_point_on_are_left_out() -> None:
    data = _reverted(_work(), messageID="m3", snapshot="abc")
    assert _said(data) == ["Read the notes.", "Reading.", "out of c1"]
    (session,) = load_sessions(RawInput(data), format="opencode")
    assert session.meta["reverted_messages"] == 2


def test_a_part_point_keeps_that_messages_parts_before_it() -> None:
    work = _work()
    for k, part in enumerate(work["messages"][3]["parts"]):
        part["id"] = f"p{k}"
    # The parts of m4: step-start, its text, the call, step-finish; back to the call.
    assert _said(_reverted(work, messageID="m4", partID="p2"))[-1] == "Deleting."
    (session,) = load_sessions(RawInput(_reverted(work, messageID="m4", partID="p2")))
    assert session.meta.get("reverted_messages", 0) == 0
    assert not any(e.type == "tool_result" and _words(e) == "out of c2" for e in session.events)


def test_a_point_that_is_not_there_removes_nothing() -> None:
    assert _said(_reverted(_work(), messageID="m9")) == _said(_work())


@pytest.mark.parametrize("revert", ["m3", {"partID": "p1"}, {"messageID": 3}])
def test_a_malformed_revert_is_refused(revert: Any) -> None:
    data = {**_work(), "info": {**_work()["info"], "revert": revert}}
    with pytest.raises(IngestError, match="revert"):
        load_sessions(RawInput(data), format="opencode")


def test_the_database_reads_its_revert_column(tmp_path: Path) -> None:
    path = _database(tmp_path / "opencode.db", [_work()])
    with sqlite3.connect(path) as db:
        db.execute("alter table session add column revert text")
        db.execute("update session set revert = ?", (json.dumps({"messageID": "m3"}),))
    (session,) = load_sessions(path)
    assert [_words(e) for e in session.events] == ["Read the notes.", "Reading.", "out of c1"]


@settings(max_examples=50, deadline=None)
@given(st.integers(0, 3))
def test_any_revert_point_reads_as_the_export_cut_there(point: int) -> None:
    work = _work()
    cut = {**work, "messages": work["messages"][:point]}
    assert _said(_reverted(work, messageID=f"m{point + 1}")) == _said(cut)


def test_the_cli_reads_opencodes_database_and_says_what_was_taken_back(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`inspect` and `replay` take `opencode.db` as a trace (it is SQLite, as the
    proxy's session stores are, which they read as stores); `inspect` says what the
    import left out of a session the user took back."""
    path = _database(tmp_path / "opencode.db", [_work()])
    with sqlite3.connect(path) as db:
        db.execute("alter table session add column revert text")
        db.execute("update session set revert = ?", (json.dumps({"messageID": "m3"}),))
    assert main(["inspect", str(path)]) == 0
    out = capsys.readouterr().out
    assert "taken back:  2 messages of undone turns, left out" in out
    assert main(["inspect", str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["taken_back"] == {"reverted_messages": 2}
    assert main(["replay", str(path), "--budget", "2000"]) == 0
    assert "0 invalid" in capsys.readouterr().out
