"""A Codex thread taken back: a rollback (`thread_rolled_back`) and a revert that continues
the history in a new rollout (`history_base`). Both leave turns in the files that the
model was no longer sent; the import is the history Codex rebuilds. Hand-made records in
the shapes Codex 0.171 writes (the real app server's revert is in
test_codex_cli_real.py; the rollback's rebuild as codex-rs's `drop_last_n_user_turns`).
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from context_graph.errors import IngestError
from context_graph.graph.content import TextPart
from context_graph.graph.events import UserTurn
from context_graph.importers import load_sessions
from tests.context_graph.importers.test_codex_cli import _item, _say, _user, _write

Record = dict[str, Any]
THREAD = "01a24f9c-4b55-7261-ad1f-8a76e1e770b4"


def _meta(**extra: Any) -> Record:
    payload = {"id": THREAD, "cwd": "/repo", "cli_version": "0.171.0", **extra}
    return {"timestamp": "2026-01-01T00:00:00Z", "type": "session_meta", "payload": payload}


def _context() -> Record:
    return _user("<environment_context>\n  <cwd>/repo</cwd>\n</environment_context>")


def _rolled_back(turns: Any) -> Record:
    payload = {"type": "thread_rolled_back", "num_turns": turns}
    return {"timestamp": "2026-01-01T00:00:00Z", "type": "event_msg", "payload": payload}


def _turn(text: str) -> list[Record]:
    """A request with its context notice, a call, its output and the answer."""
    call = {"type": "function_call", "name": "exec_command", "call_id": f"c_{text}"}
    output = {"type": "function_call_output", "call_id": f"c_{text}", "output": f"ran {text}"}
    return [_context(), _user(text), _item({**call, "arguments": "{}"}), _item(output), _say("ok")]


def _requests(path: Path, **options: Any) -> list[str]:
    (session,) = load_sessions(path, **options)
    return [
        "".join(p.text for p in e.content if isinstance(p, TextPart))
        for e in session.events
        if isinstance(e, UserTurn) and not e.notice
    ]


class TestRollback:
    def test_the_last_turns_go_with_everything_after_them(self, tmp_path: Path) -> None:
        records = [_meta(), *_turn("one"), *_turn("two"), *_turn("three"), _rolled_back(2)]
        records += _turn("four")
        path = _write(tmp_path, records)
        assert _requests(path) == ["one", "four"]
        (session,) = load_sessions(path)
        assert session.meta["rolled_back_events"] == 10  # two turns, their notices too
        assert sum(isinstance(e, UserTurn) and e.notice for e in session.events) == 2

    def test_more_turns_than_there_are_leave_what_came_before_the_first(
        self, tmp_path: Path
    ) -> None:
        records = [_meta(), _item({"type": "message", "role": "developer", "content": []})]
        records += [*_turn("one"), _rolled_back(5), *_turn("two")]
        assert _requests(_write(tmp_path, records)) == ["two"]

    def test_none_is_no_change(self, tmp_path: Path) -> None:
        records = [_meta(), *_turn("one"), _rolled_back(0), *_turn("two")]
        (session,) = load_sessions(_write(tmp_path, records))
        assert _requests(_write(tmp_path, records)) == ["one", "two"]
        assert "rolled_back_events" not in session.meta

    @pytest.mark.parametrize("turns", [-1, 1.5, "2", None, True])
    def test_a_bad_count_is_refused_at_its_line(self, tmp_path: Path, turns: Any) -> None:
        records = [_meta(), *_turn("one"), _rolled_back(turns)]
        with pytest.raises(IngestError, match="num_turns") as caught:
            load_sessions(_write(tmp_path, records))
        assert caught.value.location.line == 7


def _continuing(base: Path, end: int, thread: str = THREAD) -> Record:
    return _meta(history_base={"thread_id": thread, "end_byte_offset": end})


def _segment_name(segment: str) -> str:
    return f"rollout-2026-01-02T00-00-00-{THREAD}_{segment}.jsonl"


class TestHistoryBase:
    def _thread(self, tmp_path: Path) -> tuple[Path, int]:
        """The thread's first rollout: two turns; the byte where the second begins."""
        day = tmp_path / "sessions" / "2026" / "01" / "01"
        day.mkdir(parents=True)
        first = [_meta(), *_turn("one")]
        path = _write(
            day, [*first, *_turn("reverted")], f"rollout-2026-01-01T00-00-00-{THREAD}.jsonl"
        )
        return path, len("".join(json.dumps(r) + "\n" for r in first).encode())

    def test_a_revert_continues_the_history_up_to_its_byte(self, tmp_path: Path) -> None:
        base, end = self._thread(tmp_path)
        later = tmp_path / "sessions" / "2026" / "01" / "02"  # the next day's folder
        later.mkdir(parents=True)
        path = _write(later, [_continuing(base, end), *_turn("kept")], _segment_name("seg1"))
        assert _requests(path) == ["one", "kept"]
        (session,) = load_sessions(path)
        assert session.meta["history_base"] == [str(base.resolve())]
        sources = [e.source.file for e in session.events]
        assert sources[0] == str(base.resolve()) and sources[-1] == str(path)

    def test_a_revert_of_a_revert_follows_both(self, tmp_path: Path) -> None:
        base, end = self._thread(tmp_path)
        day = base.parent
        head = [_continuing(base, end), *_turn("two")]
        middle = _write(day, [*head, *_turn("gone")], _segment_name("seg1"))
        cut = len("".join(json.dumps(r) + "\n" for r in head).encode())
        newest = _write(
            day, [_continuing(middle, cut, "seg1"), *_turn("three")], _segment_name("seg2")
        )
        assert _requests(newest) == ["one", "two", "three"]

    def test_a_missing_base_is_refused_unless_lenient(self, tmp_path: Path) -> None:
        path = _write(tmp_path, [_continuing(tmp_path, 10), *_turn("alone")], _segment_name("s"))
        with pytest.raises(IngestError, match=f"continues thread '{THREAD}'.*lenient"):
            load_sessions(path)
        assert _requests(path, strict=False) == ["alone"]
        (session,) = load_sessions(path, strict=False)
        assert session.meta["history_base_missing"] == THREAD

    def test_an_offset_inside_a_line_is_refused(self, tmp_path: Path) -> None:
        base, end = self._thread(tmp_path)
        path = _write(base.parent, [_continuing(base, end - 3), *_turn("x")], _segment_name("s"))
        with pytest.raises(IngestError, match="does not end a line"):
            load_sessions(path)

    def test_a_base_that_loops_is_refused(self, tmp_path: Path) -> None:
        """Two segments, each continuing the other past its first line."""
        offsets = [0, 0]
        for _ in range(5):  # until each first line's length settles
            heads = [
                _continuing(tmp_path, offsets[0], "segb"),
                _continuing(tmp_path, offsets[1], "sega"),
            ]
            offsets = [len(json.dumps(heads[1])) + 1, len(json.dumps(heads[0])) + 1]
        a = _write(tmp_path, [heads[0], *_turn("a")], _segment_name("sega"))
        _write(tmp_path, [heads[1], *_turn("b")], _segment_name("segb"))
        with pytest.raises(IngestError, match="loops back"):
            load_sessions(a)

    @pytest.mark.parametrize(
        "base",
        [
            {"thread_id": "../etc", "end_byte_offset": 1},
            {"thread_id": "*", "end_byte_offset": 1},
            {"thread_id": THREAD, "end_byte_offset": -1},
            {"thread_id": THREAD, "end_byte_offset": "10"},
            {"end_byte_offset": 1},
        ],
    )
    def test_a_malformed_base_is_refused(self, tmp_path: Path, base: Record) -> None:
        path = _write(tmp_path, [_meta(history_base=base), *_turn("x")], _segment_name("s"))
        with pytest.raises(IngestError, match=r"thread_id|end_byte_offset"):
            load_sessions(path)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.integers(0, 4), min_size=1, max_size=4),  # turns before each rollback
    st.lists(st.integers(0, 3), min_size=4, max_size=4),  # each rollback's count
)
def test_any_rollbacks_leave_the_requests_a_list_would(
    before: list[int], counts: list[int]
) -> None:
    """The imported requests are those of a list of requests taken back the same way."""
    records, expected, number = [_meta()], [], 0
    for turns, count in zip(before, counts, strict=False):
        for _ in range(turns):
            records += _turn(f"t{number}")
            expected.append(f"t{number}")
            number += 1
        records.append(_rolled_back(count))
        if count:
            expected = expected[: max(0, len(expected) - count)]
    with tempfile.TemporaryDirectory() as folder:
        assert _requests(_write(Path(folder), records)) == expected
