"""Damaged session logs: a last line cut off, a line that is no record.

A session log still being written ends in a line cut off: read leniently, the lines
before it import; read strictly, it is refused, saying why and how to read it.

An agent appends a line at a time to its session file (Claude Code, Codex CLI), so a
file read while the agent runs, or left by one that stopped mid-write, ends in part of
a line with no newline after it. Before, every read of such a file was refused.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from context_graph.errors import IngestError
from context_graph.importers import load_sessions, read_raw
from orchestrator.cli import main
from tests.context_graph.importers.test_claude_code import _assistant, _text, _user

RECORDS = [
    _user("u1", "Count the files."),
    _assistant("a1", "msg_1", _text("There are 3.")),
    _user("u2", "And the folders?"),
    _assistant("a2", "msg_2", _text("Two: src and tests.")),
]


def _lines(records: list[dict[str, object]]) -> str:
    return "".join(json.dumps(r) + "\n" for r in records)


def _cut(tmp_path: Path, keep: int, chars: int) -> Path:
    """The first `keep` records whole, then `chars` characters of the next, no newline."""
    path = tmp_path / "session.jsonl"
    path.write_text(_lines(RECORDS[:keep]) + json.dumps(RECORDS[keep])[:chars], "utf-8")
    return path


def test_a_strict_read_refuses_and_says_how_to_read_it(tmp_path: Path) -> None:
    path = _cut(tmp_path, 3, 40)
    with pytest.raises(IngestError) as info:
        load_sessions(path)
    assert info.value.location.line == 4
    assert "no newline ends it" in str(info.value) and "lenient" in str(info.value)


def test_a_lenient_read_imports_the_lines_before_it(tmp_path: Path) -> None:
    (session,) = load_sessions(_cut(tmp_path, 3, 40), strict=False)
    assert [e.type for e in session.events] == ["user", "assistant", "user"]
    assert session.meta["incomplete_last_line"] == 4
    assert read_raw(_cut(tmp_path, 3, 40), strict=False).incomplete_line == 4


@pytest.mark.parametrize(
    ("text", "line"),
    [
        (_lines(RECORDS[:1]) + "{not json\n" + _lines(RECORDS[1:]), 2),
        (_lines(RECORDS[:3]) + "{not json\n", 4),
    ],
    ids=["a bad line in the middle", "a bad last line that a newline ends"],
)
def test_a_bad_line_that_is_not_cut_off_stays_an_error(
    tmp_path: Path, text: str, line: int
) -> None:
    """Only a last line with no newline after it is a write in progress; any other line
    that is not JSON is a broken file, refused however it is read."""
    path = tmp_path / "session.jsonl"
    path.write_text(text, "utf-8")
    for strict in (True, False):
        with pytest.raises(IngestError) as info:
            load_sessions(path, strict=strict)
        assert info.value.location.line == line
        assert "no newline ends it" not in str(info.value)


def test_the_cli_says_what_it_left_out(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _cut(tmp_path, 3, 40)
    assert main(["inspect", str(path)]) == 2
    assert main(["inspect", "--lenient", str(path)]) == 0
    err = capsys.readouterr().err
    assert "lenient: left out line 4, cut off" in err


@settings(max_examples=50, deadline=None)
@given(st.integers(min_value=1, max_value=3), st.data())
def test_a_cut_anywhere_in_the_last_line_reads_the_lines_before(
    keep: int, data: st.DataObject
) -> None:
    """Cut at any character of the line being written: a lenient read gives the events
    of the whole lines before it."""
    line = json.dumps(RECORDS[keep])
    chars = data.draw(st.integers(min_value=1, max_value=len(line) - 1))
    with tempfile.TemporaryDirectory() as folder:
        cut = _cut(Path(folder), keep, chars)
        (session,) = load_sessions(cut, strict=False)
        whole = Path(folder) / "whole.jsonl"
        whole.write_text(_lines(RECORDS[:keep]), "utf-8")
        (before,) = load_sessions(whole)
    dumped = [e.model_dump(mode="json", exclude={"source"}) for e in session.events]
    assert dumped == [e.model_dump(mode="json", exclude={"source"}) for e in before.events]


@pytest.mark.parametrize(
    ("damage", "said"),
    [('"massive error"', "must be an object"), ("42", "must be an object"), ("{}", "`type`")],
    ids=["a string", "a number", "an object with no type"],
)
def test_a_line_that_is_no_record_is_named(tmp_path: Path, damage: str, said: str) -> None:
    """A Claude Code log with a damaged line among its records is refused at that line;
    before, the file was "unrecognized input", which names no line."""
    path = tmp_path / "session.jsonl"
    path.write_text(_lines(RECORDS[:2]) + damage + "\n" + _lines(RECORDS[2:]), "utf-8")
    with pytest.raises(IngestError) as info:
        load_sessions(path)
    assert info.value.location.line == 3 and said in str(info.value)
