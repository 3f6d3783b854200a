"""A sub-agent's lines inside the main session file (`isSidechain: true` beside the main
conversation's lines) are sessions of their own, not turns of the main conversation.

Claude Code writes a sub-agent's transcript to `<session>/subagents/` today; a file that
holds a sub-agent's lines among its own (older versions, a copied or merged log) was
read as one conversation, the sub-agent's prompt and calls inside the main agent's.
The records are hand-made in Claude Code's shape.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from context_graph.graph.context_graph import ContextGraph
from context_graph.importers import load_sessions
from context_graph.testing import WordCounter
from tests.context_graph.importers.test_claude_code import (
    _assistant,
    _result,
    _text,
    _use,
    _user,
    _write,
)

Record = dict[str, Any]


def _side(record: Record, parent: str | None) -> Record:
    return {**record, "isSidechain": True, "parentUuid": parent}


def _run(tag: str, parent: str) -> list[Record]:
    """A sub-agent run: its prompt, a call, the result, its answer."""
    return [
        _side(_user(f"{tag}1", f"Search for {tag}."), parent),
        _side(
            _assistant(f"{tag}2", f"msg_{tag}_1", _use(f"g{tag}", "Grep", pattern=tag)), f"{tag}1"
        ),
        _side(_user(f"{tag}3", [_result(f"g{tag}", f"{tag}.py:1")]), f"{tag}2"),
        _side(_assistant(f"{tag}4", f"msg_{tag}_2", _text(f"Found {tag}.")), f"{tag}3"),
    ]


def _texts(session: Any) -> list[str]:
    return [getattr(e.content[0], "text", "") if e.content else "" for e in session.events]


def test_a_sub_agents_lines_are_a_session_of_their_own(tmp_path: Path) -> None:
    records = [
        _user("u1", "Where is the config loaded?"),
        _assistant("a1", "msg_1", _use("task1", "Task", prompt="Search for config.")),
        *_run("config", "a1"),
        _user("u2", [_result("task1", "Found config.")]),
        _assistant("a2", "msg_2", _text("In config.py.")),
    ]
    main, sub = load_sessions(_write(tmp_path, records), format="claude_code")
    assert [e.type for e in main.events] == ["user", "assistant", "tool_result", "assistant"]
    assert "Search for config." not in _texts(main)
    assert [e.source.line for e in main.events] == [1, 2, 7, 8]
    assert sub.name == f"{main.name}.sidechain-1"
    assert sub.meta["parent_session"] == main.name
    assert [e.type for e in sub.events] == ["user", "assistant", "tool_result", "assistant"]
    assert _texts(sub)[0] == "Search for config."
    assert [e.source.line for e in sub.events] == [3, 4, 5, 6]
    for session in (main, sub):
        ContextGraph(counter=WordCounter()).ingest(session.events)


def test_a_transcript_of_sidechain_lines_only_is_not_split(tmp_path: Path) -> None:
    """A sub-agent's own transcript (every line a sidechain line) is one session."""
    (session,) = load_sessions(_write(tmp_path, _run("solo", "x")), format="claude_code")
    assert [e.type for e in session.events] == ["user", "assistant", "tool_result", "assistant"]


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=3), min_size=1, max_size=3))
def test_interleaved_runs_come_apart(starts: list[int]) -> None:
    """Parallel sub-agent runs whose lines interleave with each other and with the main
    conversation: each run is one session holding its own lines in order, and the main
    conversation holds none of them."""
    main_lines = [
        _user("u1", "Search everything."),
        _assistant("a1", "msg_1", _use("task", "Task", prompt="go")),
        _user("u2", [_result("task", "done")]),
        _assistant("a2", "msg_2", _text("Done.")),
    ]
    records: list[Record] = list(main_lines)
    tags = [f"r{n}" for n in range(len(starts))]
    for tag, start in zip(tags, starts, strict=True):
        for offset, line in enumerate(_run(tag, "a1")):
            place = min(2 + start + offset * (len(tags) + 1), len(records) - 2)
            records.insert(place, line)
    with tempfile.TemporaryDirectory() as folder:
        main, *subs = load_sessions(_write(Path(folder), records), format="claude_code")
    assert _texts(main)[0] == "Search everything." and len(main.events) == 4
    assert sorted(_texts(s)[0] for s in subs) == sorted(f"Search for {t}." for t in tags)
    for sub in subs:
        assert [e.type for e in sub.events] == ["user", "assistant", "tool_result", "assistant"]
