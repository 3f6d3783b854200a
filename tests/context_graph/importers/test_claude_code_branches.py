"""A Claude Code session file with rewound branches imports the branch Claude Code resumes.

A rewind or an edited prompt appends a new branch to the same file (`parentUuid` links
each message to the one it follows); the abandoned turns stay in the file. Read in file
order they were part of the imported conversation. The records are hand-made in the
shape Claude Code 2.1 writes (the real CLI's rewind is in test_claude_code_real.py).
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from context_graph.errors import IngestError
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


def _on(record: Record, parent: str | None) -> Record:
    return {**record, "parentUuid": parent}


def _texts(path: Path) -> list[str]:
    (session, *_) = load_sessions(path, format="claude_code")
    return [part.text for e in session.events for part in e.content if hasattr(part, "text")]


def _exchange(tag: str, parent: str | None) -> list[Record]:
    """A prompt, a call, its result and the answer, each on the one before."""
    return [
        _on(_user(f"{tag}u", f"Prompt {tag}."), parent),
        _on(_assistant(f"{tag}a", f"msg_{tag}_1", _use(f"call_{tag}", command=tag)), f"{tag}u"),
        _on(_user(f"{tag}r", [_result(f"call_{tag}", f"ran {tag}")]), f"{tag}a"),
        _on(_assistant(f"{tag}b", f"msg_{tag}_2", _text(f"Answer {tag}.")), f"{tag}r"),
    ]


def _leaf(uuid: str) -> Record:
    return {"type": "last-prompt", "lastPrompt": "...", "leafUuid": uuid, "sessionId": "s"}


def test_a_rewound_branch_is_left_out(tmp_path: Path) -> None:
    records = [
        *_exchange("one", None),
        *_exchange("gone", "oneb"),
        _leaf("goneb"),
        *_exchange("kept", "oneb"),  # rewound to after the first answer
        _leaf("keptb"),
    ]
    path = _write(tmp_path, records)
    (session,) = load_sessions(path, format="claude_code")
    texts = _texts(path)
    assert "Prompt gone." not in texts and "Answer gone." not in texts
    assert texts == [
        "Prompt one.",
        "ran one",
        "Answer one.",
        "Prompt kept.",
        "ran kept",
        "Answer kept.",
    ]
    assert session.meta["abandoned_records"] == 4
    assert [e.source.line for e in session.events][4:] == [10, 11, 12, 13]
    ContextGraph(counter=WordCounter()).ingest(session.events)


def test_an_edited_prompt_without_a_leaf_record_keeps_the_last_branch(tmp_path: Path) -> None:
    records = [*_exchange("one", None), *_exchange("first try", "oneb"), *_exchange("edit", "oneb")]
    texts = _texts(_write(tmp_path, records))
    assert "Prompt first try." not in texts
    assert texts[-3:] == ["Prompt edit.", "ran edit", "Answer edit."]


def test_the_leaf_record_picks_the_branch_even_when_it_is_not_the_last(tmp_path: Path) -> None:
    """The user went back to the first branch (`last-prompt` points there)."""
    records = [
        *_exchange("one", None),
        *_exchange("back", "oneb"),
        *_exchange("tried", "oneb"),
        _leaf("backb"),
    ]
    texts = _texts(_write(tmp_path, records))
    assert "Prompt tried." not in texts
    assert texts[-3:] == ["Prompt back.", "ran back", "Answer back."]


def test_parallel_calls_and_their_results_off_the_chain_are_kept(tmp_path: Path) -> None:
    """Claude Code writes one line per content block; a call's result hangs on its own
    line, and the next line of the message hangs on the line before: the first call's
    result is off the parent chain from the leaf, and still the conversation."""
    records = [
        _on(_user("u", "Look at both."), None),
        _on(_assistant("a1", "msg_1", _use("c1", command="one")), "u"),
        _on(_assistant("a2", "msg_1", _use("c2", command="two")), "a1"),
        _on(_user("r1", [_result("c1", "first")]), "a1"),
        _on(_user("r2", [_result("c2", "second")]), "a2"),
        _on(_assistant("a3", "msg_2", _text("Both read.")), "r2"),
    ]
    path = _write(tmp_path, records)
    (session,) = load_sessions(path, format="claude_code")
    assert "abandoned_records" not in session.meta
    assert _texts(path) == ["Look at both.", "first", "second", "Both read."]


def test_progress_records_between_messages_break_no_chain(tmp_path: Path) -> None:
    progress = {"type": "progress", "uuid": "p1", "parentUuid": "oneb", "sessionId": "s"}
    records = [*_exchange("one", None), progress, *_exchange("two", "p1")]
    (session,) = load_sessions(_write(tmp_path, records), format="claude_code")
    assert "abandoned_records" not in session.meta
    assert len(session.events) == 8


def test_the_history_before_a_compaction_stays(tmp_path: Path) -> None:
    """A compaction's boundary has no parent; its logical parent may be a line Claude Code
    never wrote. The history before it is kept, with the compaction after it."""
    boundary = {
        "type": "system",
        "subtype": "compact_boundary",
        "uuid": "cb",
        "parentUuid": None,
        "logicalParentUuid": "not-in-the-file",
        "sessionId": "s",
    }
    summary = _on(_user("sum", "The user asked for one.", isCompactSummary=True), "cb")
    records = [*_exchange("one", None), boundary, summary, *_exchange("two", "sum")]
    (session,) = load_sessions(_write(tmp_path, records), format="claude_code")
    assert "abandoned_records" not in session.meta
    assert [e.type for e in session.events].count("compaction") == 1
    assert len(session.events) == 9


def test_a_parent_missing_from_the_file_loses_no_history(tmp_path: Path) -> None:
    records = [*_exchange("one", None), *_exchange("two", "a-lost-line")]
    (session,) = load_sessions(_write(tmp_path, records), format="claude_code")
    assert "abandoned_records" not in session.meta
    assert len(session.events) == 8


def test_a_file_not_linked_by_parents_reads_in_file_order(tmp_path: Path) -> None:
    """Every line without a parent (hand-made logs, exports): nothing is a branch."""
    records = [_on(r, None) for r in [*_exchange("one", None), *_exchange("two", None)]]
    (session,) = load_sessions(_write(tmp_path, records), format="claude_code")
    assert len(session.events) == 8


def test_a_cycle_of_parents_reads_in_file_order(tmp_path: Path) -> None:
    records = [_on(_user("x", "Hello."), "y"), _on(_assistant("y", "m", _text("Hi.")), "x")]
    (session,) = load_sessions(_write(tmp_path, records), format="claude_code")
    assert [e.type for e in session.events] == ["user", "assistant"]


def test_a_record_of_the_wrong_shape_is_refused_at_its_line(tmp_path: Path) -> None:
    records: list[Any] = [*_exchange("one", None), {"type": ["user"], "uuid": 7}]
    with pytest.raises(IngestError, match="line 5"):
        load_sessions(_write(tmp_path, records), format="claude_code")


_SHAPES = ("plain", "parallel", "progress")


def _shaped(tag: str, parent: str | None, shape: str) -> list[Record]:
    """An exchange ending at `<tag>b`: plain, with two parallel calls (one message's two
    lines, each result on its own line), or with a progress record before the result."""
    if shape == "plain":
        return _exchange(tag, parent)
    if shape == "progress":
        plain = _exchange(tag, parent)
        progress = {"type": "progress", "uuid": f"{tag}p", "parentUuid": f"{tag}a"}
        return [*plain[:2], progress, _on(plain[2], f"{tag}p"), plain[3]]
    return [
        _on(_user(f"{tag}u", f"Prompt {tag}."), parent),
        _on(_assistant(f"{tag}a", f"msg_{tag}_1", _use(f"c1_{tag}", command="1")), f"{tag}u"),
        _on(_assistant(f"{tag}a2", f"msg_{tag}_1", _use(f"c2_{tag}", command="2")), f"{tag}a"),
        _on(_user(f"{tag}r", [_result(f"c1_{tag}", f"one {tag}")]), f"{tag}a"),
        _on(_user(f"{tag}r2", [_result(f"c2_{tag}", f"two {tag}")]), f"{tag}a2"),
        _on(_assistant(f"{tag}b", f"msg_{tag}_2", _text(f"Answer {tag}.")), f"{tag}r2"),
    ]


@st.composite
def _branched(draw: st.DrawFn) -> tuple[list[Record], list[Record]]:
    """A conversation, and the same file with abandoned branches written after forks."""
    shapes = draw(st.lists(st.sampled_from(_SHAPES), min_size=1, max_size=5))
    blocks: list[list[Record]] = []
    parent = None
    for number, shape in enumerate(shapes):
        blocks.append(_shaped(f"k{number}", parent, shape))
        parent = f"k{number}b"
    kept = [record for block in blocks for record in block]
    # Each abandoned branch is written when the user was at its fork: right after the
    # fork's exchange (after the branches already written there).
    after: list[list[list[Record]]] = [[] for _ in shapes]
    forks = draw(st.lists(st.integers(0, len(shapes) - 1), max_size=3))
    for number, fork in enumerate(forks):
        after[fork].append(_shaped(f"gone{number}", f"k{fork}b", draw(st.sampled_from(_SHAPES))))
    records = [
        record
        for block, branches in zip(blocks, after, strict=True)
        for record in [*block, *(r for branch in branches for r in branch)]
    ]
    # A branch forked at the last answer is the newest: only the leaf record says not.
    if forks and (len(shapes) - 1 in forks or draw(st.booleans())):
        records.append(_leaf(f"k{len(shapes) - 1}b"))
    return kept, records


@settings(max_examples=60, deadline=None)
@given(_branched())
def test_any_abandoned_branches_import_as_the_conversation_without_them(
    case: tuple[list[Record], list[Record]],
) -> None:
    kept, records = case
    with tempfile.TemporaryDirectory() as folder:
        alone = _texts(_write(Path(folder), kept, "kept.jsonl"))
        branched = _texts(_write(Path(folder), records, "branched.jsonl"))
    assert branched == alone
