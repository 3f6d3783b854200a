"""`--lenient` on inspect, render and replay: a stray is kept as a note and listed on stderr."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from context_graph.validate.request import validate
from orchestrator.cli import main

#: A Gemini history whose last content answers no call (as the CLI's trajectory.json does).
STRAY = [
    {"role": "user", "parts": [{"text": "go"}]},
    {"role": "model", "parts": [{"text": "done"}]},
    {
        "role": "user",
        "parts": [{"functionResponse": {"id": "nl", "name": "run", "response": {"output": "x"}}}],
    },
]


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(name="stray_file")
def stray_file_fixture(tmp_path: Path) -> Path:
    """A history file holding one stray response."""
    path = tmp_path / "history.json"
    path.write_text(json.dumps(STRAY), encoding="utf-8")
    return path


class TestLenient:
    @pytest.mark.parametrize("command", ["inspect", "render", "replay"])
    def test_strict_by_default(
        self, capsys: pytest.CaptureFixture[str], stray_file: Path, command: str
    ) -> None:
        """Without the flag the stray is refused as bad input (exit 2), naming its place."""
        code, _, err = _run(capsys, command, str(stray_file))
        assert code == 2
        assert "message 2" in err and "tool result `nl` has no matching tool call" in err

    @pytest.mark.parametrize("command", ["inspect", "render", "replay"])
    def test_lenient_keeps_the_stray_and_says_so(
        self, capsys: pytest.CaptureFixture[str], stray_file: Path, command: str
    ) -> None:
        """With `--lenient` the command succeeds and stderr lists the stray with its place."""
        code, _, err = _run(capsys, command, str(stray_file), "--lenient")
        assert code == 0, err
        assert f"lenient: kept as a note: {stray_file} message 2" in err

    @pytest.mark.parametrize("fmt", ["openai", "anthropic", "gemini"])
    def test_lenient_render_is_valid(
        self, capsys: pytest.CaptureFixture[str], stray_file: Path, fmt: str
    ) -> None:
        """The note renders into a valid request in each format."""
        code, out, err = _run(capsys, "render", str(stray_file), "--lenient", "--format", fmt)
        assert code == 0, err
        assert validate(json.loads(out), fmt) == []
