from __future__ import annotations

import ast
import importlib.metadata
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from orchestrator.cli import main
from orchestrator.cli.progress import Progress

ROOT = Path(__file__).resolve().parents[2]


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _env() -> dict[str, str]:
    """The environment for a child process that imports this checkout."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    return env


class TestVersion:
    def test_prints_the_package_version(self, capsys: pytest.CaptureFixture[str]) -> None:
        """--version prints `context-graph X.Y.Z` from the package metadata and exits 0."""
        with pytest.raises(SystemExit) as info:
            main(["--version"])
        assert info.value.code == 0
        expected = importlib.metadata.version("context-graph")
        assert capsys.readouterr().out == f"context-graph {expected}\n"


class TestBrokenPipe:
    @pytest.mark.parametrize(
        "argv",
        [["inspect"], ["render", "--format", "anthropic"], ["inspect", "--json"]],
        ids=["inspect", "render", "inspect-json"],
    )
    def test_a_reader_gone_before_the_output_exits_141_quietly(self, argv: list[str]) -> None:
        """stdout closed before anything is written: exit 141, no traceback on stderr."""
        child = subprocess.Popen(
            [sys.executable, "-m", "orchestrator.cli", *argv],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=_env(),
        )
        assert child.stdout is not None and child.stderr is not None
        child.stdout.close()  # the reader leaves at once, as `| head -0` would
        err = child.stderr.read().decode()
        child.stderr.close()
        code = child.wait(timeout=120)
        assert "Traceback" not in err
        assert "BrokenPipe" not in err
        assert code == 141

    def test_a_reader_that_takes_one_line_sees_no_traceback(self) -> None:
        """`context-graph inspect | head -1`: the first line arrives, stderr stays clean."""
        done = subprocess.run(
            f"{sys.executable} -m orchestrator.cli inspect | head -1",
            shell=True,
            capture_output=True,
            text=True,
            env=_env(),
            timeout=120,
            check=False,
        )
        assert done.stdout.startswith("trace:")
        assert done.stderr == ""


class TestProgress:
    @pytest.mark.parametrize(
        ("argv", "phases"),
        [
            (["inspect"], ["reading example_session.jsonl", "ingesting", "counting"]),
            (["render", "--budget", "8000"], ["reading", "ingesting", "compacting and rendering"]),
            (["replay", "--budget", "8000"], ["reading", "replaying", "events (100%)"]),
        ],
        ids=["inspect", "render", "replay"],
    )
    def test_progress_flag_prints_phase_lines(
        self, capsys: pytest.CaptureFixture[str], argv: list[str], phases: list[str]
    ) -> None:
        """With --progress and stderr not a terminal, each phase is a plain line."""
        code, _, err = _run(capsys, *argv, "--progress")
        assert code == 0
        lines = [line for line in err.splitlines() if line.startswith("context-graph: ")]
        found = [next(i for i, line in enumerate(lines) if phase in line) for phase in phases]
        assert found == sorted(found)  # in the order the work runs
        assert "\r" not in err and "\x1b" not in err

    @pytest.mark.parametrize(
        "argv",
        [["inspect"], ["render", "--budget", "8000"], ["replay", "--budget", "8000"]],
        ids=["inspect", "render", "replay"],
    )
    def test_quiet_when_stderr_is_not_a_terminal(
        self, capsys: pytest.CaptureFixture[str], argv: list[str]
    ) -> None:
        """Without --progress and with stderr captured, stderr has the summary line only."""
        _, _, err = _run(capsys, *argv)
        assert len(err.splitlines()) <= 1
        assert "context-graph:" not in err

    def test_live_phase_appears_after_the_delay_and_is_erased(self, tmp_path: Path) -> None:
        """On a terminal a phase shows once it lasts the delay, and close() erases it."""
        stream_path = tmp_path / "tty.txt"
        with stream_path.open("w", encoding="utf-8", newline="") as stream:
            progress = Progress(stream, mode="live", delay=0.0)
            progress.phase("ingesting 5 events...")
            assert progress._timer is not None
            progress._timer.join(timeout=5)
            progress.close()
        text = stream_path.read_bytes().decode()
        assert text == "\r\x1b[Kingesting 5 events...\r\x1b[K"

    def test_live_phase_shorter_than_the_delay_draws_nothing(self, tmp_path: Path) -> None:
        """A phase that ends before the delay leaves the terminal untouched."""
        stream_path = tmp_path / "tty.txt"
        with stream_path.open("w", encoding="utf-8", newline="") as stream:
            progress = Progress(stream, mode="live", delay=60.0)
            progress.phase("reading...")
            progress.count(5, 10, "events")
            progress.close()
        assert stream_path.read_bytes() == b""


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


class TestProgressMode:
    @pytest.mark.parametrize(
        ("terminal", "asked", "mode", "delay"),
        [
            (True, False, "live", 1.0),
            (True, True, "live", 0.0),
            (False, True, "lines", 1.0),
            (False, False, "off", 1.0),
        ],
    )
    def test_mode_follows_the_terminal_and_the_flag(
        self,
        monkeypatch: pytest.MonkeyPatch,
        terminal: bool,
        asked: bool,
        mode: str,
        delay: float,
    ) -> None:
        """Drawn live on a terminal (at once with --progress); plain lines only when asked."""
        monkeypatch.setattr(sys, "stderr", _Terminal() if terminal else io.StringIO())
        progress = Progress.for_stderr(asked=asked)
        assert (progress._mode, progress._delay) == (mode, delay)


class TestJsonErrors:
    @pytest.mark.parametrize("command", ["inspect", "render", "replay"])
    def test_bad_line_is_a_json_object_with_the_place(
        self, capsys: pytest.CaptureFixture[str], tmp_path: Path, command: str
    ) -> None:
        """With --json an ingest error is one JSON object on stdout naming file and line."""
        path = tmp_path / "bad.jsonl"
        path.write_text('{"a": 1}\n{nope\n', encoding="utf-8")
        code, out, err = _run(capsys, command, str(path), "--json")
        assert code == 2
        assert err == ""
        error = json.loads(out)
        assert error["where"] == f"{path} line 2"
        assert error["location"] == {"file": str(path), "line": 2, "index": None}
        assert error["exit_code"] == 2 and "JSON" in error["error"]

    def test_message_index_is_given(
        self, capsys: pytest.CaptureFixture[str], tmp_path: Path
    ) -> None:
        """An error in one message names its index in `where` and `location`."""
        path = tmp_path / "bad.json"
        path.write_text('{"messages": [{"role": "robot", "content": "x"}]}', encoding="utf-8")
        code, out, _ = _run(capsys, "inspect", str(path), "--from", "openai", "--json")
        assert code == 2
        error = json.loads(out)
        assert error["location"]["index"] == 0
        assert "message 0" in error["where"] and "robot" in error["error"]

    def test_check_error_is_json(self, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
        """check --json reports an unreadable body as a JSON object, exit code unchanged."""
        path = tmp_path / "body.json"
        path.write_text("{", encoding="utf-8")
        code, out, _ = _run(capsys, "check", str(path), "--format", "openai", "--json")
        assert code == 2
        assert json.loads(out)["location"]["file"] == str(path)

    def test_over_budget_is_json_with_exit_3(self, capsys: pytest.CaptureFixture[str]) -> None:
        """A budget the floor cannot meet is a JSON error with the sizes, exit 3."""
        code, out, _ = _run(capsys, "render", "--budget", "50", "--json")
        assert code == 3
        error = json.loads(out)
        assert error["where"] == "--budget" and error["budget"] == 50
        assert error["required"] > 50 and error["exit_code"] == 3

    def test_usage_error_is_json(self, capsys: pytest.CaptureFixture[str]) -> None:
        """A bad option value with --json is a JSON object too (exit 2)."""
        with pytest.raises(SystemExit) as info:
            main(["inspect", "--json", "--from", "nope"])
        assert info.value.code == 2
        error = json.loads(capsys.readouterr().out)
        assert "--from" in error["error"] and error["exit_code"] == 2

    def test_without_json_errors_stay_on_stderr(self, capsys: pytest.CaptureFixture[str]) -> None:
        """Without --json the error is one line on stderr and stdout is empty."""
        code, out, err = _run(capsys, "inspect", "--session", "99")
        assert code == 2 and out == ""
        assert len(err.strip().splitlines()) == 1


class TestOutputFolders:
    @pytest.mark.parametrize(
        "argv",
        [
            ["render", "-o", "{missing}/out.json"],
            ["replay", "--report", "{missing}/report.json"],
            ["replay", "-o", "{missing}/last.json"],
        ],
        ids=["render-o", "replay-report", "replay-o"],
    )
    def test_missing_folder_is_named(
        self, capsys: pytest.CaptureFixture[str], tmp_path: Path, argv: list[str]
    ) -> None:
        """A missing output folder is named as such, exit 2."""
        missing = tmp_path / "missing" / "dir"
        code, out, err = _run(capsys, *(a.format(missing=missing) for a in argv))
        assert code == 2 and out == ""
        assert f"the folder {missing} does not exist" in err
        assert len(err.strip().splitlines()) == 1

    def test_nothing_is_written_when_one_folder_is_missing(
        self, capsys: pytest.CaptureFixture[str], tmp_path: Path
    ) -> None:
        """replay with a good --report and a bad -o writes neither."""
        report = tmp_path / "report.json"
        code, _, _ = _run(
            capsys, "replay", "--report", str(report), "-o", str(tmp_path / "no" / "x.json")
        )
        assert code == 2
        assert list(tmp_path.iterdir()) == []

    def test_output_that_is_a_folder(
        self, capsys: pytest.CaptureFixture[str], tmp_path: Path
    ) -> None:
        """-o naming an existing folder is refused with what to give instead."""
        code, _, err = _run(capsys, "render", "-o", str(tmp_path))
        assert code == 2
        assert "is a folder" in err


class TestDocsPointers:
    def test_unrecognized_input_names_the_page_in_the_repository(
        self, capsys: pytest.CaptureFixture[str], tmp_path: Path
    ) -> None:
        """The pointer to docs/ingest.md says it lives in the repository (the wheel has none)."""
        path = tmp_path / "x.json"
        path.write_text("[1, 2]", encoding="utf-8")
        _, _, err = _run(capsys, "inspect", str(path))
        assert "docs/ingest.md in the context-graph repository" in err

    def test_no_message_points_to_a_bare_docs_path(self) -> None:
        """No string in the packages' code (docstrings aside) names docs/ without the repository."""
        offenders = []
        for package in ("context_graph", "processors", "orchestrator"):
            for path in (ROOT / package).rglob("*.py"):
                tree = ast.parse(path.read_text(encoding="utf-8"))
                docstrings = {
                    id(node.value) for node in ast.walk(tree) if isinstance(node, ast.Expr)
                }
                for node in ast.walk(tree):
                    text = node.value if isinstance(node, ast.Constant) else None
                    if not isinstance(text, str) or id(node) in docstrings:
                        continue
                    # A web address (a model table's source) is no pointer into the repository.
                    web = text.startswith(("http://", "https://"))
                    if "docs/" in text and "repository" not in text and not web:
                        offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}")
        assert offenders == []
