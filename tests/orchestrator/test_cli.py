from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from context_graph.examples import EXAMPLE_SESSION
from context_graph.graph.context_graph import ContextGraph
from context_graph.graph.events import UserTurn
from context_graph.importers import load_sessions
from context_graph.testing import strict_trace, trace_files
from orchestrator.cli import main

TRACES = Path(__file__).resolve().parents[2].parent / "shared" / "traces"


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


class TestInspect:
    def test_runs_on_the_bundled_example(self, capsys: pytest.CaptureFixture[str]) -> None:
        """With no trace, inspect summarizes the example session shipped in the package."""
        code, out, err = _run(capsys, "inspect")
        assert code == 0, err
        assert str(EXAMPLE_SESSION) in out
        for label in ("nodes:", "tokens:", "units:", "tool calls:", "files read:", "sub-agents:"):
            assert label in out

    def test_json_summary_matches_the_graph(self, capsys: pytest.CaptureFixture[str]) -> None:
        """The JSON summary reports what the session really holds."""
        code, out, _ = _run(capsys, "inspect", "--json")
        assert code == 0
        summary = json.loads(out)
        events = load_sessions(EXAMPLE_SESSION)[0].events
        calls = sum(len(getattr(e, "tool_calls", ())) for e in events)
        assert summary["tool_calls"] == calls
        # One node per event, plus one per tool call; tokens as the library counts them.
        assert summary["nodes"] == len(events) + calls
        graph = ContextGraph()
        graph.ingest(events)
        assert summary["total_tokens"] == sum(graph.tokens(i) for i in graph.transcript())
        assert summary["sessions_in_file"] == len(load_sessions(EXAMPLE_SESSION))
        users = [e for e in events if isinstance(e, UserTurn)]
        assert summary["notices"] == sum(e.notice for e in users) >= 1
        assert summary["user_turns"] == len(users) - summary["notices"]

    def test_text_summary_counts_turns_and_notices(
        self, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """The example's one request and its task notification, counted apart."""
        _, out, _ = _run(capsys, "inspect")
        assert "(user turns: 1, notices: 1)" in out

    def test_example_has_what_the_demo_promises(self, capsys: pytest.CaptureFixture[str]) -> None:
        """The example has tool calls, a file read twice, an error and a sub-agent."""
        _, out, _ = _run(capsys, "inspect", "--json")
        summary = json.loads(out)
        assert summary["tool_calls"] > 0
        assert max(summary["files_read"].values()) >= 2
        assert summary["tool_errors"] >= 1
        assert len(summary["subagents"]) >= 1

    def test_selects_a_session_by_index(
        self, capsys: pytest.CaptureFixture[str], tmp_path: Path
    ) -> None:
        """--session picks one run of a multi-run file."""
        runs = [
            {"task_id": i, "traj": [{"role": "user", "content": f"run {i}"}], "info": {}}
            for i in range(3)
        ]
        path = tmp_path / "runs.json"
        path.write_text(json.dumps(runs), encoding="utf-8")
        code, out, err = _run(capsys, "inspect", str(path), "--session", "2", "--json")
        assert code == 0, err
        assert json.loads(out)["sessions_in_file"] == 3


class TestBadInput:
    @pytest.mark.parametrize(
        ("content", "expected"),
        [
            ('{"messages": [{"role": "robot", "content": "x"}]}', "unrecognized input"),
            ('{"role": "user"}\n{not json}\n', "line 2"),
            ("", "empty"),
            ("[1, 2, 3]", "unrecognized input"),
        ],
    )
    def test_bad_input_exits_2_with_one_line(
        self,
        capsys: pytest.CaptureFixture[str],
        tmp_path: Path,
        content: str,
        expected: str,
    ) -> None:
        """Bad input gives exit code 2 and one line on stderr that names the problem."""
        path = tmp_path / "bad.json"
        path.write_text(content, encoding="utf-8")
        code, out, err = _run(capsys, "inspect", str(path))
        assert code == 2
        assert out == ""
        assert expected in err
        assert len(err.strip().splitlines()) == 1

    def test_unknown_role_with_explicit_format_names_it(
        self, capsys: pytest.CaptureFixture[str], tmp_path: Path
    ) -> None:
        """With the format given, an unknown role is reported with its message index."""
        path = tmp_path / "bad.json"
        path.write_text('{"messages": [{"role": "robot", "content": "x"}]}', encoding="utf-8")
        code, _, err = _run(capsys, "inspect", str(path), "--from", "openai")
        assert code == 2
        assert "robot" in err and "message 0" in err

    def test_missing_file_exits_2(self, capsys: pytest.CaptureFixture[str]) -> None:
        """A path that does not exist is bad input, not a crash."""
        code, _, err = _run(capsys, "inspect", "/nonexistent/session.jsonl")
        assert code == 2
        assert "cannot read" in err

    def test_non_utf8_file_exits_2(
        self, capsys: pytest.CaptureFixture[str], tmp_path: Path
    ) -> None:
        """Bytes that are not UTF-8 are reported with their line."""
        path = tmp_path / "latin1.jsonl"
        path.write_bytes(b'{"a": 1}\n{"b": "caf\xe9"}\n')
        code, _, err = _run(capsys, "inspect", str(path))
        assert code == 2
        assert "line 2" in err and "UTF-8" in err

    def test_out_of_range_session_exits_2(self, capsys: pytest.CaptureFixture[str]) -> None:
        """Asking for a session the file does not have is bad input."""
        code, _, err = _run(capsys, "inspect", "--session", "999")
        assert code == 2
        assert "out of range" in err


def test_console_script_entry_point_runs() -> None:
    """`python -m orchestrator.cli inspect` works as a separate process."""
    done = subprocess.run(
        [sys.executable, "-m", "orchestrator.cli", "inspect"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "nodes:" in done.stdout


@pytest.mark.skipif(not TRACES.exists(), reason="shared traces not present")
@pytest.mark.parametrize("path", trace_files(TRACES), ids=lambda p: str(p.relative_to(TRACES)))
@pytest.mark.ingests_traces
def test_inspect_runs_on_every_shared_trace(capsys: pytest.CaptureFixture[str], path: Path) -> None:
    """Every shared trace file can be inspected."""
    # Raises IngestError for the files no importer reads yet (tests/conftest.py marks them).
    ContextGraph().ingest(load_sessions(path, strict=strict_trace(path))[0].events)
    lenient = () if strict_trace(path) else ("--lenient",)
    code, _, err = _run(capsys, "inspect", str(path), *lenient)
    assert code == 0, f"{path}: {err}"


class TestRender:
    @pytest.mark.parametrize("fmt", ["openai", "anthropic", "gemini"])
    def test_renders_the_example_under_budget(
        self, capsys: pytest.CaptureFixture[str], fmt: str
    ) -> None:
        """render writes a valid request body and one summary line on stderr."""
        from context_graph.validate.request import validate

        code, out, err = _run(capsys, "render", "--budget", "8000", "--format", fmt)
        assert code == 0, err
        payload = json.loads(out)
        assert validate(payload, fmt) == []
        assert len(err.strip().splitlines()) == 1
        assert "tokens before" in err and "units dropped" in err

    def test_writes_to_a_file(self, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
        """-o writes the JSON there and nothing to stdout."""
        out_file = tmp_path / "request.json"
        code, out, _ = _run(capsys, "render", "--format", "anthropic", "-o", str(out_file))
        assert code == 0
        assert out == ""
        assert "messages" in json.loads(out_file.read_text(encoding="utf-8"))

    def test_impossible_budget_exits_3(self, capsys: pytest.CaptureFixture[str]) -> None:
        """A budget the floor cannot meet exits 3 and says what it would need."""
        code, out, err = _run(capsys, "render", "--budget", "50")
        assert code == 3
        assert out == ""
        assert "at least" in err and "50" in err

    @pytest.mark.parametrize("budget", ["-5", "lots"])
    def test_bad_budget_is_a_usage_error(
        self, capsys: pytest.CaptureFixture[str], budget: str
    ) -> None:
        """A negative or non-numeric budget is refused by the argument parser (exit 2)."""
        with pytest.raises(SystemExit) as info:
            main(["render", "--budget", budget])
        assert info.value.code == 2
        assert "budget" in capsys.readouterr().err

    def test_bad_trace_exits_2(self, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
        """Bad input to render is reported like inspect does."""
        path = tmp_path / "bad.jsonl"
        path.write_text('{"a": 1}\n{nope\n', encoding="utf-8")
        code, _, err = _run(capsys, "render", str(path))
        assert code == 2
        assert "line 2" in err


class TestCheck:
    def _write(self, tmp_path: Path, payload: object) -> str:
        path = tmp_path / "body.json"
        path.write_text(json.dumps(payload), encoding="utf-8")
        return str(path)

    def test_valid_body_exits_0(self, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
        """A valid body passes with a count of its tokens."""
        body = {"messages": [{"role": "user", "content": "hello"}]}
        code, out, _ = _run(capsys, "check", self._write(tmp_path, body), "--format", "openai")
        assert code == 0
        assert out.strip().startswith("0 violations")

    def test_lists_every_broken_rule_with_its_place(
        self, capsys: pytest.CaptureFixture[str], tmp_path: Path
    ) -> None:
        """Each broken rule is listed with the message index; the exit code is 1."""
        body = {
            "messages": [
                {
                    "role": "assistant",
                    "content": [
                        {"type": "tool_use", "id": "a.b", "name": "t", "input": {}},
                        {"type": "tool_use", "id": "ok_1", "name": "t", "input": {}},
                    ],
                },
                {"role": "assistant", "content": "again"},
            ]
        }
        path = self._write(tmp_path, body)
        code, out, _ = _run(capsys, "check", path, "--format", "anthropic", "--json")
        assert code == 1
        rules = {v["rule"] for v in json.loads(out)["violations"]}
        assert {"first_message_not_user", "roles_not_alternating", "tool_use_id_invalid"} <= rules
        assert "tool_call_unanswered" in rules

    def test_budget_is_checked(self, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
        """With --budget, a body over it is a violation."""
        body = {"messages": [{"role": "user", "content": "word " * 200}]}
        path = self._write(tmp_path, body)
        code, out, _ = _run(capsys, "check", path, "--format", "openai", "--budget", "10")
        assert code == 1
        assert "over_budget" in out

    def test_not_json_exits_2(self, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
        """A file that is not JSON is bad input."""
        path = tmp_path / "body.json"
        path.write_text("{", encoding="utf-8")
        code, _, err = _run(capsys, "check", str(path), "--format", "gemini")
        assert code == 2
        assert "JSON" in err

    def test_renders_pass_check(self, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
        """What render writes, check accepts."""
        out_file = tmp_path / "request.json"
        assert _run(capsys, "render", "--format", "gemini", "-o", str(out_file))[0] == 0
        code, out, _ = _run(capsys, "check", str(out_file), "--format", "gemini")
        assert code == 0, out
