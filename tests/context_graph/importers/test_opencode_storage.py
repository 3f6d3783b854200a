"""opencode's storage folder (the JSON files of its versions before the database), read as
its exports. Hand-made folders in the layout opencode 1.1 writes (the real CLI's is in
test_opencode_real.py): sessions in order of creation, messages and parts in the order of
their ids, and every unreadable record refused by its file.
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
from context_graph.importers import RawInput, load_sessions, reads_folder
from orchestrator.cli import main
from tests.context_graph.importers.test_opencode import _assistant, _export, _text, _tool, _user

Record = dict[str, Any]


def _as_stored(export: Record, n: int = 0) -> Record:
    """`export` with the ids opencode gives: ascending in the order of the records."""
    messages = []
    for k, message in enumerate(export["messages"]):
        message_id = f"msg_{n}_{k:03}"
        parts = [
            {**part, "id": f"prt_{k:03}_{j:03}", "messageID": message_id}
            for j, part in enumerate(message["parts"])
        ]
        info = {**message["info"], "id": message_id, "sessionID": export["info"]["id"]}
        messages.append({"info": info, "parts": parts})
    return {"info": export["info"], "messages": messages}


def _store(root: Path, exports: list[Record], created: list[int] | None = None) -> Path:
    """A storage folder under `root` (the data folder) holding `exports`."""
    storage = root / "storage"
    for n, export in enumerate(exports):
        info = {**export["info"], "projectID": "global", "time": {"created": (created or [n])[n]}}
        _put(storage / "session" / "global" / f"{info['id']}.json", info)
        for message in _as_stored(export, n)["messages"]:
            message_id = message["info"]["id"]
            _put(storage / "message" / info["id"] / f"{message_id}.json", message["info"])
            for part in message["parts"]:
                _put(storage / "part" / message_id / f"{part['id']}.json", part)
    _put(storage / "project" / "global.json", {"id": "global", "worktree": "/"})
    return root


def _put(path: Path, value: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(value), "utf-8")


def _named(export: Record, session_id: str) -> Record:
    return {**export, "info": {**export["info"], "id": session_id}}


def _events(session: Any) -> list[Any]:
    return [e.model_dump(exclude={"source"}) for e in session.events]


_WORK = _export(
    _user(_text("Check the notes.")),
    _assistant(_text("Reading."), _tool("c1"), _tool("c2", status="error")),
    _assistant(_text("All done."), message_id="msg_b"),
)


def test_the_folder_reads_as_the_export_of_each_session(tmp_path: Path) -> None:
    first, second = _named(_WORK, "ses_b"), _named(_WORK, "ses_a")
    root = _store(tmp_path, [first, second], created=[1, 2])
    (expected,) = load_sessions(RawInput(_as_stored(first)), format="opencode")
    for source in (root, root / "storage"):
        sessions = load_sessions(source)
        assert [s.name for s in sessions] == ["ses_b", "ses_a"]  # by creation, not by id
        assert _events(sessions[0]) == _events(expected)
        assert reads_folder(source)
    (one,) = load_sessions(root / "storage" / "session" / "global" / "ses_a.json")
    (alone,) = load_sessions(RawInput(_as_stored(second, 1)), format="opencode")
    assert one.name == "ses_a" and _events(one) == _events(alone)


def test_a_session_never_used_has_no_events(tmp_path: Path) -> None:
    root = _store(tmp_path, [_named(_export(), "ses_empty")])
    (session,) = load_sessions(root)
    assert list(session.events) == []


@pytest.mark.parametrize(
    ("content", "said"),
    [
        ("{not json", "must be JSON"),
        ("[1, 2]", "must be a JSON object, got list"),
        (b"\xff\xfe", "cannot read the record"),
    ],
)
def test_an_unreadable_record_is_refused_by_its_file(
    tmp_path: Path, content: str | bytes, said: str
) -> None:
    root = _store(tmp_path, [_WORK])
    part = root / "storage" / "part" / "msg_0_001" / "prt_001_001.json"
    if isinstance(content, bytes):
        part.write_bytes(content)
    else:
        part.write_text(content, "utf-8")
    with pytest.raises(IngestError, match=said) as caught:
        load_sessions(root)
    assert str(part) in str(caught.value)


def test_a_session_file_without_an_id_is_refused(tmp_path: Path) -> None:
    root = _store(tmp_path, [_WORK])
    (info,) = (root / "storage" / "session" / "global").glob("*.json")
    info.write_text(json.dumps({"title": "no id"}), "utf-8")
    with pytest.raises(IngestError, match="string `id`"):
        load_sessions(root)


def test_a_malformed_part_names_its_place(tmp_path: Path) -> None:
    broken = _export(_user(_text("Hi.")), _assistant({"type": "tool", "tool": "bash"}))
    with pytest.raises(IngestError, match=r"messages\[1\]"):
        load_sessions(_store(tmp_path, [broken]))


def test_another_folder_is_no_session(tmp_path: Path) -> None:
    (tmp_path / "session").mkdir()  # a folder of that name alone is not opencode's
    (tmp_path / "part").mkdir()
    assert not reads_folder(tmp_path)
    with pytest.raises(IngestError, match="cannot read file"):
        load_sessions(tmp_path)


def test_the_cli_reads_the_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = _store(tmp_path / "data", [_WORK])
    assert main(["inspect", str(root)]) == 0
    assert "ses_1" in capsys.readouterr().out
    assert main(["inspect", str(tmp_path / "data" / "storage" / "project")]) != 0
    assert "is a folder" in capsys.readouterr().err


@settings(max_examples=40, deadline=None)
@given(st.permutations(range(4)), st.lists(st.integers(0, 10**13), min_size=4, max_size=4))
def test_any_sessions_read_in_creation_order(order: list[int], created: list[int]) -> None:
    exports = [_named(_WORK, f"ses_{n}") for n in order]
    with tempfile.TemporaryDirectory() as folder:
        sessions = load_sessions(_store(Path(folder), exports, created=created))
    expected = sorted(zip(created, [e["info"]["id"] for e in exports], strict=True))
    assert [s.name for s in sessions] == [name for _, name in expected]
    (alone,) = load_sessions(RawInput(_WORK), format="opencode")
    assert all(len(s.events) == len(alone.events) for s in sessions)
