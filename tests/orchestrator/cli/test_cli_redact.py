"""With redaction on, no output of the command line holds a secret of the session.

A session with a dozen kinds of made-up credentials (tests/orchestrator/secret_sessions.py)
goes through every command and every output each writes: stdout, stderr, `-o`,
`--report`, `--html`, `--json`, errors. With `--redact`, or a TOML profile whose pipeline
has a `redact` stage, no byte of any of them holds a planted secret; without, the same
outputs do (so the test sees the secrets where they would leak).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from orchestrator.cli import main
from tests.orchestrator.secret_sessions import PLANTED, leaks, write_session

BUDGET = "3000"

REDACT_TOML = """
name = "redacting"
[[stages]]
processor = "redact"
[[stages]]
processor = "mask"
options = { keep_turns = 1, min_tokens = 50 }
[[stages]]
processor = "truncate"
options = { max_tokens = 200 }
"""


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    """The exit code and everything the command printed, stdout and stderr."""
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out + err


def _written(folder: Path) -> str:
    return "".join(path.read_text(encoding="utf-8") for path in sorted(folder.iterdir()))


@pytest.fixture(name="session")
def session_fixture(tmp_path: Path) -> Path:
    return write_session(tmp_path)


@pytest.fixture(name="out")
def out_fixture(tmp_path: Path) -> Path:
    folder = tmp_path / "out"
    folder.mkdir()
    return folder


def _commands(session: Path, out: Path) -> dict[str, list[str]]:
    """Every output of every command that reads a session, by name."""
    s = str(session)
    return {
        "render": ["render", s, "--budget", BUDGET, "-o", str(out / "request.json")],
        "render stdout": ["render", s, "--budget", BUDGET],
        "render json": ["render", s, "--budget", BUDGET, "--json"],
        "render no-compact": ["render", s, "--no-compact", "--format", "anthropic"],
        "replay": [
            "replay",
            s,
            "--budget",
            BUDGET,
            "--report",
            str(out / "report.json"),
            "--html",
            str(out / "report.html"),
            "-o",
            str(out / "last.json"),
        ],
        "replay json": ["replay", s, "--budget", BUDGET, "--json", "--format", "gemini"],
        "inspect": ["inspect", s],
        "inspect json": ["inspect", s, "--json"],
    }


COMMANDS = sorted(_commands(Path("s"), Path("o")))
#: The outputs that carry the session's text (the others are figures and names).
CONTENT = {"render", "render stdout", "render no-compact", "replay"}


class TestRedactSwitch:
    """`--redact`: every output of every command."""

    @pytest.mark.parametrize("command", COMMANDS)
    def test_no_output_holds_a_secret(
        self, capsys: pytest.CaptureFixture[str], session: Path, out: Path, command: str
    ) -> None:
        """Printed or written, JSON or text or HTML: no planted secret in any byte."""
        code, printed = _run(capsys, *_commands(session, out)[command], "--redact")
        assert code == 0, printed
        assert leaks(printed) == []
        assert leaks(_written(out)) == []
        assert "[REDACTED:" in printed + _written(out) or command not in CONTENT

    @pytest.mark.parametrize("command", COMMANDS)
    def test_without_it_the_outputs_hold_them(
        self, capsys: pytest.CaptureFixture[str], session: Path, out: Path, command: str
    ) -> None:
        """The check can see a leak: the same outputs, not redacted, hold the secrets."""
        code, printed = _run(capsys, *_commands(session, out)[command])
        assert code == 0, printed
        if command in CONTENT:
            assert leaks(printed + _written(out))

    def test_an_error_quoting_the_input_is_redacted(
        self, capsys: pytest.CaptureFixture[str], tmp_path: Path
    ) -> None:
        """A message that quotes the bad input (its role) shows the placeholder, as text or JSON."""
        line, _ = PLANTED["github_token"]
        bad = tmp_path / "bad.json"
        history = [{"role": "user", "content": "hi"}, {"role": line, "content": "x"}]
        bad.write_text(json.dumps({"messages": history}), encoding="utf-8")
        for extra in ([], ["--json"]):
            code, printed = _run(capsys, "inspect", str(bad), "--from", "openai", *extra)
            assert code == 2 and leaks(printed)
            code, printed = _run(
                capsys, "inspect", str(bad), "--from", "openai", "--redact", *extra
            )
            assert code == 2 and leaks(printed) == []
            assert "unknown role 'GITHUB_TOKEN=[REDACTED:github_token]'" in printed

    def test_lenient_notes_are_redacted(
        self, capsys: pytest.CaptureFixture[str], tmp_path: Path
    ) -> None:
        """What `--lenient` keeps as a note, and says on stderr, is redacted there too."""
        line, _ = PLANTED["github_token"]
        stray = tmp_path / "stray.json"
        answer = {"functionResponse": {"id": line, "name": "run", "response": {"output": line}}}
        history = [
            {"role": "user", "parts": [{"text": "go"}]},
            {"role": "model", "parts": [{"text": "done"}]},
            {"role": "user", "parts": [answer]},
        ]
        stray.write_text(json.dumps(history), encoding="utf-8")
        code, printed = _run(capsys, "render", str(stray), "--lenient")
        assert code == 0 and "lenient:" in printed and leaks(printed)
        code, printed = _run(capsys, "render", str(stray), "--lenient", "--redact")
        assert code == 0 and "lenient:" in printed
        assert leaks(printed) == []


class TestCheck:
    """`check --redact`: a rule's message quotes the body, cut short; no part of a secret shows."""

    def test_a_quoted_id_is_redacted_even_cut_short(
        self, capsys: pytest.CaptureFixture[str], tmp_path: Path
    ) -> None:
        """An orphan tool result whose id holds a token: the message shows a placeholder."""
        line, token = PLANTED["github_token"]
        body = tmp_path / "body.json"
        history = [{"role": "user", "content": "hi"}, {"role": "tool", "tool_call_id": line}]
        history[1]["content"] = "x"
        body.write_text(json.dumps({"model": "m", "messages": history}), encoding="utf-8")
        code, printed = _run(capsys, "check", str(body), "--format", "openai")
        assert code == 1 and token[:12] in printed
        for extra in ([], ["--json"]):
            code, printed = _run(
                capsys, "check", str(body), "--format", "openai", "--redact", *extra
            )
            assert code == 1 and "tool_result_orphan" in printed
            assert token[:12] not in printed
            assert "[REDACTED:github_token]" in printed


class TestProfileStage:
    """A TOML profile with a `redact` stage switches every output's redaction on too."""

    @pytest.mark.parametrize("command", ["render", "render stdout", "replay", "replay json"])
    def test_no_output_holds_a_secret(
        self,
        capsys: pytest.CaptureFixture[str],
        session: Path,
        out: Path,
        tmp_path: Path,
        command: str,
    ) -> None:
        """No `--redact`: the policy's stage alone redacts requests, reports and lines."""
        policy = tmp_path / "redacting.toml"
        policy.write_text(REDACT_TOML, encoding="utf-8")
        argv = [*_commands(session, out)[command], "--policy", str(policy)]
        code, printed = _run(capsys, *argv)
        assert code == 0, printed
        assert leaks(printed) == []
        assert leaks(_written(out)) == []
