from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from orchestrator.cli import main

COMMANDS = ["inspect", "render", "replay", "check"]


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    try:
        code = main(list(argv))
    except SystemExit as exc:  # argparse refuses while parsing
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


def _argv(command: str, target: str, *more: str) -> list[str]:
    if command == "check":
        return [command, target, "--format", "openai", *more]
    return [command, target, *more]


def _folder(tmp_path: Path) -> Path:
    folder = tmp_path / "a folder"
    folder.mkdir()
    return folder


def _empty(tmp_path: Path) -> Path:
    path = tmp_path / "empty.jsonl"
    path.write_bytes(b"")
    return path


def _binary(tmp_path: Path) -> Path:
    path = tmp_path / "garbage.json"
    path.write_bytes(bytes(range(256)) * 8)
    return path


def _null(tmp_path: Path) -> Path:
    path = tmp_path / "null.json"
    path.write_text("null", encoding="utf-8")
    return path


def _number(tmp_path: Path) -> Path:
    path = tmp_path / "number.json"
    path.write_text("42\n", encoding="utf-8")
    return path


HOSTILE: dict[str, Callable[[Path], Path]] = {
    "folder": _folder,
    "empty": _empty,
    "binary": _binary,
    "null": _null,
    "number": _number,
}


class TestHostileTrace:
    @pytest.mark.parametrize("command", COMMANDS)
    @pytest.mark.parametrize("kind", list(HOSTILE))
    def test_exits_2_with_one_line_naming_the_file(
        self, capsys: pytest.CaptureFixture[str], tmp_path: Path, command: str, kind: str
    ) -> None:
        """A folder, an empty file, bytes, `null` or a bare number: exit 2, one line, the path."""
        path = HOSTILE[kind](tmp_path)
        code, out, err = _run(capsys, *_argv(command, str(path)))
        assert code == 2, err
        assert out == ""
        assert len(err.strip().splitlines()) == 1
        assert str(path) in err
        assert "Traceback" not in err

    @pytest.mark.parametrize("command", COMMANDS)
    @pytest.mark.parametrize("kind", list(HOSTILE))
    def test_json_error_names_the_file(
        self, capsys: pytest.CaptureFixture[str], tmp_path: Path, command: str, kind: str
    ) -> None:
        """The same inputs with --json give one JSON object whose location is the file."""
        path = HOSTILE[kind](tmp_path)
        code, out, err = _run(capsys, *_argv(command, str(path), "--json"))
        assert code == 2
        assert err == ""
        assert json.loads(out)["location"]["file"] == str(path)


class TestHostileOptions:
    @pytest.mark.parametrize("command", COMMANDS)
    @pytest.mark.parametrize(
        "budget", ["9" * 5000, "1" + "0" * 30, "100000001", "1e6", "²", "12abc", ""]
    )
    def test_budget_exits_2_with_one_line(
        self, capsys: pytest.CaptureFixture[str], tmp_path: Path, command: str, budget: str
    ) -> None:
        """A budget too big, in another notation or not a number: exit 2, one line, `--budget`."""
        body = tmp_path / "body.json"
        body.write_text('{"messages": [{"role": "tool", "content": "x"}]}', encoding="utf-8")
        code, out, err = _run(capsys, *_argv(command, str(body), "--budget", budget))
        assert code == 2
        assert out == ""
        assert len(err.strip().splitlines()) == 1
        assert "--budget" in err
        assert len(err) < 300  # a 5000-digit number is not echoed back whole

    def test_largest_budget_is_accepted(self, capsys: pytest.CaptureFixture[str]) -> None:
        """The largest budget allowed, written with separators, renders."""
        code, _, err = _run(capsys, "render", "--budget", "100_000_000")
        assert code == 0, err

    @pytest.mark.parametrize("command", ["inspect", "render", "replay"])
    @pytest.mark.parametrize(
        ("session", "expected"),
        [("99", "out of range"), ("-1", "out of range"), ("nonesuch", "no session named")],
    )
    def test_session_exits_2_with_one_line(
        self,
        capsys: pytest.CaptureFixture[str],
        command: str,
        session: str,
        expected: str,
    ) -> None:
        """--session out of range or unknown: exit 2, one line that lists what there is."""
        code, out, err = _run(capsys, command, "--session", session)
        assert code == 2
        assert out == ""
        assert expected in err
        assert len(err.strip().splitlines()) == 1

    @pytest.mark.parametrize("command", ["inspect", "render", "replay"])
    def test_unknown_input_format_exits_2(
        self, capsys: pytest.CaptureFixture[str], command: str
    ) -> None:
        """--from with an unknown importer is a one-line usage error."""
        code, _, err = _run(capsys, command, "--from", "nope")
        assert code == 2
        assert "--from" in err and len(err.strip().splitlines()) == 1
