from __future__ import annotations

import json
from pathlib import Path

import pytest

from orchestrator.cli import main


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _write(tmp_path: Path, body: object, name: str = "body.json") -> str:
    path = tmp_path / name
    path.write_text(json.dumps(body), encoding="utf-8")
    return str(path)


GEMINI = {"contents": [{"role": "user", "parts": [{"text": "hello"}]}]}
ANTHROPIC = {
    "system": "be brief",
    "max_tokens": 64,
    "messages": [{"role": "user", "content": "hi"}],
}
OPENAI = {
    "messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}]
}


class TestCheckDetects:
    @pytest.mark.parametrize(
        ("body", "fmt"), [(GEMINI, "gemini"), (ANTHROPIC, "anthropic"), (OPENAI, "openai")]
    )
    def test_format_is_detected_and_said(
        self, capsys: pytest.CaptureFixture[str], tmp_path: Path, body: object, fmt: str
    ) -> None:
        """Without --format the body's format is told, said, and its rules applied."""
        code, out, _ = _run(capsys, "check", _write(tmp_path, body))
        assert code == 0, out
        assert out.splitlines()[0] == f"format: {fmt} (detected)"
        assert out.splitlines()[-1].startswith("0 violations")

    def test_detected_format_in_json(
        self, capsys: pytest.CaptureFixture[str], tmp_path: Path
    ) -> None:
        """--json reports the format and that it was detected."""
        code, out, _ = _run(capsys, "check", _write(tmp_path, GEMINI), "--json")
        assert code == 0
        result = json.loads(out)
        assert (result["format"], result["detected"], result["note"]) == ("gemini", True, None)

    def test_detected_rules_are_applied(
        self, capsys: pytest.CaptureFixture[str], tmp_path: Path
    ) -> None:
        """A detected Anthropic body is checked by Anthropic's rules."""
        body = {"system": "x", "messages": [{"role": "assistant", "content": "first"}]}
        code, out, _ = _run(capsys, "check", _write(tmp_path, body), "--json")
        assert code == 1
        assert "first_message_not_user" in {v["rule"] for v in json.loads(out)["violations"]}

    @pytest.mark.parametrize(
        ("body", "reason"),
        [
            ({"messages": [{"role": "user", "content": "hi"}]}, "nothing in it is particular"),
            ({"system": "x", "messages": [{"role": "tool", "content": "4"}]}, "openai and"),
            ({"contents": [], "messages": []}, "also `messages`"),
        ],
    )
    def test_ambiguous_body_is_refused(
        self, capsys: pytest.CaptureFixture[str], tmp_path: Path, body: object, reason: str
    ) -> None:
        """A body that could be two formats exits 2 and asks for --format, on one line."""
        code, out, err = _run(capsys, "check", _write(tmp_path, body))
        assert code == 2 and out == ""
        assert "cannot tell the format" in err and "--format" in err and reason in err
        assert len(err.strip().splitlines()) == 1
        asked = err.split("give --format ", 1)[1]
        assert all(fmt in asked for fmt in ("openai", "anthropic", "gemini", "responses"))

    @pytest.mark.parametrize(
        ("body", "given", "note"),
        [
            (GEMINI, "openai", "this looks like a gemini body (top-level `contents`), not openai"),
            (OPENAI, "gemini", "this looks like an openai body"),
            (ANTHROPIC, "gemini", "this looks like an anthropic body (top-level `system`)"),
        ],
    )
    def test_another_formats_body_is_named(
        self,
        capsys: pytest.CaptureFixture[str],
        tmp_path: Path,
        body: object,
        given: str,
        note: str,
    ) -> None:
        """A body given with --format X that looks like another format says which."""
        code, out, _ = _run(capsys, "check", _write(tmp_path, body), "--format", given)
        assert code == 1
        assert f"note: {note}" in out

    def test_matching_format_has_no_note(
        self, capsys: pytest.CaptureFixture[str], tmp_path: Path
    ) -> None:
        """A body that matches the format given gets no note."""
        code, out, _ = _run(capsys, "check", _write(tmp_path, GEMINI), "--format", "gemini")
        assert code == 0
        assert "note:" not in out

    @pytest.mark.parametrize(
        ("text", "held"),
        [("null", "`null`"), ("[1]", "an array"), ('"x"', "a string"), ("7", "a number")],
    )
    def test_a_body_must_be_an_object(
        self, capsys: pytest.CaptureFixture[str], tmp_path: Path, text: str, held: str
    ) -> None:
        """A file holding anything but one JSON object is bad input (exit 2), said plainly."""
        path = tmp_path / "body.json"
        path.write_text(text, encoding="utf-8")
        code, _, err = _run(capsys, "check", str(path))
        assert code == 2
        assert f"holds {held}, not a request body" in err
