"""`python -m benchmarks.signals`: the bus signals of the bundled example, to diff refactors."""

from __future__ import annotations

import dataclasses
import enum
import json
from pathlib import Path

import pytest
from pydantic import BaseModel

from benchmarks.signals import differences, main, plain, record


class _Colour(enum.Enum):
    RED = "red"


class _Model(BaseModel):
    name: str
    time: float


@dataclasses.dataclass
class _Record:
    model: _Model
    tags: frozenset[str]
    elapsed: float


class TestPlain:
    def test_models_dataclasses_and_enums_become_data_without_clock_fields(self) -> None:
        """Payload objects are compared by their fields, and wall-clock fields are left out."""
        value = {"entry": _Record(_Model(name="a", time=1.5), frozenset({"y", "x"}), 3.0)}
        assert plain(value) == {"entry": {"model": {"name": "a"}, "tags": ["x", "y"]}}
        assert plain((_Colour.RED, None, 2)) == ["red", None, 2]

    def test_an_object_of_no_known_kind_is_kept_as_its_type_name(self) -> None:
        """An object with no fields to compare stands for itself by its type, not its address."""
        assert plain(object()) == "object"


class TestRecord:
    def test_two_recordings_of_the_same_code_are_equal(self) -> None:
        """The recording is deterministic: runs, signals and payload hashes repeat exactly."""
        first, again = record(), record()
        assert first == again
        assert len(first) == 18  # formats x budget shares x profiles
        names = {signal.split(":")[0] for run in first.values() for signal in run}
        assert {"node_added", "render_done", "proposal_applied", "trigger_fired"} <= names


class TestDiff:
    def test_a_changed_signal_is_named_with_its_position(self) -> None:
        """The diff says which run changed and what its first differing signal was and is."""
        before = {"openai/0.5/coding": ["a:1", "b:2"], "gone": ["a:1"]}
        after = {"openai/0.5/coding": ["a:1", "b:3", "c:4"], "new": []}
        assert differences(before, after) == [
            "gone: only in the first",
            "new: only in the second",
            "openai/0.5/coding: signal 2 was b:2, is b:3",
        ]
        assert differences({"k": ["a:1"]}, {"k": ["a:1", "b:2"]}) == [
            "k: signal 2 was (end), is b:2"
        ]

    def test_the_command_diffs_and_refuses_bad_files(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """`--diff` exits 0 on equal recordings, 1 on a difference, and names a bad file."""
        a, b, bad = tmp_path / "a.json", tmp_path / "b.json", tmp_path / "bad.json"
        a.write_text(json.dumps({"k": ["a:1"]}))
        b.write_text(json.dumps({"k": ["a:1"]}))
        bad.write_text("[1]")
        assert main(["--diff", str(a), str(b)]) == 0
        assert "0 of 1 runs differ" in capsys.readouterr().out
        b.write_text(json.dumps({"k": ["a:2"]}))
        assert main(["--diff", str(a), str(b)]) == 1
        with pytest.raises(SystemExit, match="not a signals recording"):
            main(["--diff", str(a), str(bad)])
        with pytest.raises(SystemExit, match="cannot read signals"):
            main(["--diff", str(a), str(tmp_path / "missing.json")])
