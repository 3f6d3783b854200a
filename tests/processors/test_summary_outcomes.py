"""How a tool call ended: failed, ok or unknown, read from its flag, status and output."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from context_graph import ContextGraph
from context_graph.graph.content import TextPart
from context_graph.graph.nodes import Node, ToolCallNode, ToolResultNode
from context_graph.importers import load_sessions
from context_graph.testing import WordCounter
from processors.summarize.extractive import ExtractiveSummarizer
from processors.summarize.facts import (
    ToolUse,
    _shows_content,
    command_of,
    errors_of,
    outcome_of,
    tool_uses,
)
from processors.summarize.outcomes import exit_code, read_outcome

TRACES = Path(__file__).resolve().parents[2].parent / "shared" / "traces"

PYTEST_FAILED = """\
============================= test session starts ==============================
collected 3 items

tests/test_main.py .F.                                                   [100%]

=================================== FAILURES ===================================
__________________________________ test_total __________________________________

    def test_total():
>       assert total([1, 2]) == 4
E       AssertionError: assert 3 == 4

tests/test_main.py:9: AssertionError
=========================== short test summary info ============================
FAILED tests/test_main.py::test_total - AssertionError: assert 3 == 4
!!!!!!!!!!!!!!!!!!!!!!!!!! stopping after 1 failures !!!!!!!!!!!!!!!!!!!!!!!!!!!
========================= 1 failed, 1 passed in 0.05s =========================="""

PYTEST_PASSED = """\
tests/test_errors.py::test_error_handling PASSED                         [ 50%]
tests/test_errors.py::test_failure_is_reported PASSED                    [100%]

============================== 2 passed in 0.02s ==============================="""


def _outcome(text: str, *, is_error: bool = False, content: bool = False) -> str:
    return read_outcome(text, is_error=is_error, code=None, content=content).describe()


def _status(text: str, *, is_error: bool = False, content: bool = False) -> str:
    return read_outcome(text, is_error=is_error, code=None, content=content).status


def _call(call_id: str, command: str) -> dict[str, Any]:
    return {"id": call_id, "name": "bash", "arguments": {"command": command}}


class TestReadOutcome:
    def test_the_issue_case_reads_failed(self) -> None:
        """A pytest run whose output has FAILED, AssertionError and `1 failed` failed."""
        assert _outcome(PYTEST_FAILED) == (
            "failed: 1 failed, 1 passed in 0.05s: tests/test_main.py::test_total - "
            "AssertionError: assert 3 == 4"
        )

    @pytest.mark.parametrize(
        ("text", "status"),
        [
            (PYTEST_PASSED, "ok"),
            ("Ran 4 tests in 0.010s\n\nFAILED (failures=1)", "failed"),
            ("Ran 4 tests in 0.010s\n\nOK", "ok"),
            ("Ran 2 tests in 0.001s\n\nOK (expected failures=1)", "ok"),
            ("Tests:       1 failed, 4 passed, 5 total\nTime: 1.2 s", "failed"),
            ("Tests:       5 passed, 5 total", "ok"),
            ("  12 passing (40ms)\n  1 failing\n\n  1) adds numbers:", "failed"),
            ("  12 passing (40ms)", "ok"),
            ("--- FAIL: TestParse (0.00s)\nFAIL\texample.com/parse\t0.004s", "failed"),
            ("ok  \texample.com/parse\t0.004s", "ok"),
            ("test result: FAILED. 3 passed; 1 failed; 0 ignored; 0 measured", "failed"),
            ("test result: ok. 4 passed; 0 failed; 0 ignored; 0 measured", "ok"),
            ("Finished in 0.8 seconds\n18 tests, 2 failures", "failed"),
            ("Finished in 0.8 seconds\n3 doctests, 18 tests, 0 failures", "ok"),
            (
                "src/app.py:12: error: Incompatible return value type\nFound 1 error in 1 file",
                "failed",
            ),
            ("Success: no issues found in 7 source files", "ok"),
            ("src/app.py:3:1: F401 `os` imported but unused\nFound 1 error.", "failed"),
            ("All checks passed!", "ok"),
            ("main.c:4:5: error: use of undeclared identifier 'x'", "failed"),
            ("src/a.ts(3,7): error TS2322: Type 'string' is not assignable", "failed"),
            ("error[E0308]: mismatched types\n --> src/main.rs:2:18", "failed"),
            (
                '  File "app.py", line 2\n    def f(\n         ^\n'
                "SyntaxError: '(' was never closed",
                "failed",
            ),
            (
                "Traceback (most recent call last):\n  File \"x.py\", line 1\nKeyError: 'k'",
                "failed",
            ),
            ("bash: line 1: pyhton: command not found", "failed"),
            ("zsh: command not found: pyhton", "failed"),
            ("fatal: not a git repository (or any of the parent directories): .git", "failed"),
            ("Process exited with code 2", "failed"),
            ("[Command finished with exit code 1]", "failed"),
            ("<returncode>1</returncode>\n<output>\n</output>", "failed"),
            ("Exit code 127", "failed"),
            ("done\nexit code 0", "ok"),
            ("Successfully installed requests-2.32.3", "ok"),
            ("The file /src/app.py has been updated successfully.", "ok"),
            ("hello world", "unknown"),
            ("", "unknown"),
        ],
    )
    def test_outputs(self, text: str, status: str) -> None:
        """Each runner summary, error line, exit line or success line gives its status."""
        assert _status(text) == status

    @pytest.mark.parametrize(
        "text",
        [
            PYTEST_PASSED,
            "<returncode>0</returncode>\n<output>value rejected with error: not a bool\n</output>",
            "Checked error_handler.py and failure_modes.md: nothing to change.\nexit code 0",
            "The script should exit with code 1 when the file is missing.",
            "    error: indented, as in a source listing",
            # gemini-cli's shell tool wrote every field, `(none)` when there was none
            "Command: gh issue view 17029\nDirectory: (root)\nOutput: title: Allow it\n"
            "Error: (none)\nExit Code: (none)\nSignal: (none)\nBackground PIDs: (none)",
        ],
    )
    def test_incidental_words_do_not_fail(self, text: str) -> None:
        """A failure word in a name, a sentence or a listing does not make a failure."""
        assert _status(text) != "failed"

    def test_a_field_saying_no_error_is_not_the_failures_line(self) -> None:
        """A failed gemini-cli command is told by its exit code; `Error: (none)` is not
        what went wrong, and a real process error still fails."""
        text = "Command: make\nOutput: (empty)\nError: (none)\nExit Code: 2\nSignal: (none)"
        outcome = read_outcome(text, is_error=False, code=None, content=False)
        assert outcome.failed and outcome.code == 2 and "(none)" not in outcome.line
        spawned = "Command: mk\nOutput: (empty)\nError: spawn mk ENOENT\nSignal: (none)"
        outcome = read_outcome(spawned, is_error=False, code=None, content=False)
        assert outcome.failed and outcome.line == "Error: spawn mk ENOENT"

    def test_a_success_names_what_said_so(self) -> None:
        """An ok outcome shows the exit status and the counts that back it."""
        text = "Finished in 1.5 seconds\n14 doctests, 65 tests, 0 failures\nexit code 0"
        assert _outcome(text) == "ok (exit 0, 79 passed)"
        assert _outcome("Session published successfully: https://example.org/g/1") == (
            "ok (Session published successfully: https://example.org/g/1)"
        )
        assert _outcome("The upload did not finish successfully") == "outcome unknown"

    def test_summary_beats_an_exit_status_zero(self) -> None:
        """A pipe through `tail` exits 0; the test summary it shows still decides."""
        text = f"<returncode>0</returncode>\n<output>\n{PYTEST_FAILED}\n</output>"
        assert _outcome(text).startswith("failed (exit 0): 1 failed, 1 passed")

    def test_non_zero_exit_beats_a_passing_summary(self) -> None:
        """`pytest && mypy` can pass its tests and still exit 1."""
        assert _status(f"{PYTEST_PASSED}\nexit code 1") == "failed"

    def test_content_is_not_a_report(self) -> None:
        """A file or search that shows a traceback or FAILED did not fail; nothing tells."""
        assert _status(PYTEST_FAILED, content=True) == "unknown"
        assert _status(PYTEST_FAILED, content=True, is_error=True) == "failed"
        assert (
            _status("[Command finished with exit code 0]\n" + PYTEST_FAILED, content=True) == "ok"
        )

    def test_a_mention_of_an_exit_status_in_a_page_is_not_one(self) -> None:
        """Only the harness's own forms of an exit status are read from content."""
        assert _status("Hooks exit with exit code 2 to block.\nexit code 2", content=True) == (
            "unknown"
        )

    def test_frames_keep_their_angle_brackets(self) -> None:
        """`<string>` and `<module>` are not harness tags: the gist names the exception."""
        text = (
            "<returncode>0</returncode>\n<output>\nTraceback (most recent call last):\n"
            "  File \"<string>\", line 1, in <module>\nNameError: name 'x' is not defined\n"
            "</output>"
        )
        assert _outcome(text) == "failed (exit 0): NameError: name 'x' is not defined"

    @pytest.mark.parametrize(
        ("text", "code"),
        [
            ("Process exited with code 2", 2),
            ("[Command finished with exit code 0]", 0),
            ("<returncode>-9</returncode>", -9),
            ("Error: Process completed with exit code 1.", 1),
            ("exit status 3", 3),
            ("it will exit with code 4 if asked to, and does", None),
        ],
    )
    def test_exit_lines(self, text: str, code: int | None) -> None:
        """An exit status is read from a line that states it, not from a sentence."""
        assert exit_code(text) == code


_NAME = st.text(alphabet="abcdefghijklmnopqrstuvwxyz_", min_size=1, max_size=30)
_PLAIN = st.text(alphabet="abcdefghijklmnopqrstuvwxyz .,\n", max_size=400)


class TestErrorVerbatim:
    """The latest error is quoted as the agent saw it (issue: "the latest error verbatim")."""

    REFUSAL = "<tool_use_error>File has not been read yet. Read it first.</tool_use_error>"

    def test_a_tools_refusal_keeps_its_tags(self) -> None:
        outcome = read_outcome(self.REFUSAL, is_error=True, code=None, content=False)
        assert outcome.status == "failed"
        assert outcome.line == self.REFUSAL

    def test_the_brief_quotes_the_refusal_whole(self) -> None:
        graph = ContextGraph(counter=WordCounter())
        graph.add_user("Update the config.")
        graph.add_assistant(
            "Writing it.",
            tool_calls=[{"id": "w1", "name": "Write", "arguments": {"file_path": "/srv/c.toml"}}],
        )
        graph.add_tool_result("w1", self.REFUSAL, is_error=True)
        graph.add_assistant("Reading it first.")
        nodes = [graph[i] for i in graph.transcript()]
        assert self.REFUSAL in ExtractiveSummarizer().brief(nodes)

    def test_a_harness_wrapper_of_the_whole_output_is_not_quoted(self) -> None:
        text = "<returncode>1</returncode>\n<output>KeyError: 'DEPLOY_TOKEN'</output>"
        outcome = read_outcome(text, is_error=False, code=None, content=False)
        assert outcome.line == "KeyError: 'DEPLOY_TOKEN'"


class TestProperties:
    @settings(max_examples=200, deadline=None)
    @given(st.lists(_NAME, min_size=1, max_size=8, unique=True), st.floats(0, 99))
    def test_a_passing_pytest_run_never_reads_failed(
        self, names: list[str], seconds: float
    ) -> None:
        """Whatever the tests are called (`test_error`, `test_failed_...`), all passed is ok."""
        lines = [f"tests/test_x.py::test_{name} PASSED" for name in names]
        lines.append(f"==== {len(names)} passed in {seconds:.2f}s ====")
        outcome = read_outcome("\n".join(lines), is_error=False, code=None, content=False)
        assert outcome.status == "ok"
        # The runner's own summary, verbatim: it says the counts itself.
        assert outcome.gist == f"{len(names)} passed in {seconds:.2f}s"

    @settings(max_examples=200, deadline=None)
    @given(_PLAIN, st.integers(1, 255), st.booleans())
    def test_a_non_zero_exit_always_fails(self, text: str, code: int, content: bool) -> None:
        """A non-zero exit status is a failure, whatever the output says around it."""
        outcome = read_outcome(text, is_error=False, code=code, content=content)
        assert outcome.failed and outcome.code == code

    @settings(max_examples=200, deadline=None)
    @given(_PLAIN)
    def test_output_that_says_nothing_is_unknown(self, text: str) -> None:
        """Without a flag, a status or a report in the output, the outcome is unknown."""
        assert read_outcome(text, is_error=False, code=None, content=False).status == "unknown"


class TestResolution:
    def _uses(self, *results: str) -> list[ToolUse]:
        graph = ContextGraph(counter=WordCounter())
        graph.add_user("Make the tests pass.")
        for index, result in enumerate(results):
            graph.add_assistant(tool_calls=[_call(f"c{index}", "pytest -x")])
            graph.add_tool_result(f"c{index}", result)
        return tool_uses(_nodes(graph))

    def test_an_unknown_outcome_resolves_nothing(self) -> None:
        """After a failure, a run that says nothing leaves the error open."""
        errors = errors_of(self._uses(PYTEST_FAILED, "collected 3 items"))
        assert [(e.key, e.resolved) for e in errors] == [("pytest -x", False)]

    def test_a_run_that_says_ok_resolves(self) -> None:
        """After a failure, a passing summary resolves the error."""
        errors = errors_of(self._uses(PYTEST_FAILED, PYTEST_PASSED))
        assert [(e.key, e.resolved) for e in errors] == [("pytest -x", True)]

    def test_the_brief_says_what_it_knows(self) -> None:
        """The brief lists the failed run as failed and the silent one as unknown."""
        graph = ContextGraph(counter=WordCounter())
        graph.add_user("Make the tests pass.")
        graph.add_assistant(tool_calls=[_call("a", "pytest -x")])
        graph.add_tool_result("a", PYTEST_FAILED)
        graph.add_assistant(tool_calls=[_call("b", "make fmt")])
        graph.add_tool_result("b", "formatted 3 files")
        text = ExtractiveSummarizer(counter=WordCounter()).brief(_nodes(graph))
        assert (
            "- ran `pytest -x`: failed: 1 failed, 1 passed in 0.05s; "
            "output of `bash`: `tests/test_main.py::test_total" in text
        )
        assert "- ran `make fmt`: outcome unknown" in text
        assert "[open] `pytest -x`: 1 failed, 1 passed in 0.05s; output of `bash`: `" in text

    def test_a_codex_command_that_outlives_its_call_fails_in_a_later_chunk(self) -> None:
        """Codex's `exec_command` answers "Process running" and a `write_stdin` on that
        session answers the rest: the brief lists the test run as failed, by its command."""
        graph = ContextGraph(counter=WordCounter())
        graph.add_user("Make the tests pass.")
        start = {"id": "a", "name": "exec_command", "arguments": {"cmd": "pytest -x"}}
        graph.add_assistant(tool_calls=[start])
        graph.add_tool_result("a", "Chunk ID: 1\nProcess running with session ID 7\nOutput:\n")
        poll = {"id": "b", "name": "write_stdin", "arguments": {"session_id": 7, "chars": ""}}
        graph.add_assistant(tool_calls=[poll])
        graph.add_tool_result(
            "b", f"Chunk ID: 2\nProcess exited with code 1\nOutput:\n{PYTEST_FAILED}"
        )
        text = ExtractiveSummarizer(counter=WordCounter()).brief(_nodes(graph))
        assert "[open] `pytest -x`: 1 failed, 1 passed in 0.05s" in text


def _nodes(graph: ContextGraph) -> list[Node]:
    return [graph[i] for i in graph.transcript()]


def _trace_uses(relative: str) -> list[ToolUse]:
    uses: list[ToolUse] = []
    for session in load_sessions(TRACES / relative):
        graph = ContextGraph(counter=WordCounter())
        graph.ingest(session.events)
        uses.extend(tool_uses(_nodes(graph)))
    return uses


_MINI = "mini_swe_agent_deepseek/deepseek_chat_test_1-100"
_OPENHANDS = "openhands_claude35_swebench_verified/llm_completions"
_GEMINI = "gemini_cli/google-gemini_gemini-cli/NotFollowingUserIntent.json"
_SPOTTER = "claude_code/marot_spotter/258c7280-ae70-4798-800f-63464d01a85d.jsonl"
_CODEX_EXEC = (
    "codex_cli/codemie-ai_codemie-code/"
    "rollout-2026-05-11T11-26-55-019e1625-789d-76c0-80ab-3724b5ddb799.jsonl"
)

# (trace, what the call's key starts with, the status of each matching use, in order)
REAL = [
    # unittest failed to import its module; `| tail` made the status 0
    (
        f"{_MINI}/django__django-12908/django__django-12908.traj.json",
        "cd tests && python -m unittest queries",
        ["failed"],
    ),
    # a traceback through `2>&1 | tail`, status 0
    (
        f"{_MINI}/django__django-12453/django__django-12453.traj.json",
        "cd /testbed && python -m django test --settings=django.conf.global_settings",
        ["failed"],
    ),
    (
        f"{_MINI}/django__django-12983/django__django-12983.traj.json",
        "cd /testbed && python run_tests.py 2>&1 | tail -200",
        ["failed"],
    ),
    # pip's ERROR: lines through `| tail -5`
    (
        "mini_swe_agent_deepseek/deepseek_reasoner_dev/sqlfluff__sqlfluff-2419/"
        "sqlfluff__sqlfluff-2419.traj.json",
        "cd /testbed && pip install -r requirements_dev",
        ["failed"],
    ),
    (
        "mini_swe_agent_deepseek/deepseek_reasoner_dev/sqlfluff__sqlfluff-2419/"
        "sqlfluff__sqlfluff-2419.traj.json",
        "cd /testbed && python -m pytest test/rules/yaml_test_cases_test.py -x",
        ["ok"],
    ),
    # OpenHands' editor reports its own refusal as text
    (
        f"{_OPENHANDS}/astropy__astropy-14598/litellm_proxy__claude-3-5-sonnet-20241022-1733344123.160672.json",
        "str_replace_editor /workspace/astropy__astropy__5.2/astropy/io/fits/card.py",
        None,
    ),
    # Claude Code: ExUnit summaries, a failed CLI option, a page that mentions exit codes
    (_SPOTTER, "mix test 2>&1 | tail -5", ["ok", "ok", "ok"]),
    (
        "claude_code/moredip_session-share/general-tool-calls.jsonl",
        'claude --plugin-dir ./claude-code-session-share -p "/session-share:publish" --print --yes',
        ["failed", "failed"],
    ),
    (_SPOTTER, "WebFetch", None),
    (
        "claude_code/pypi_fasthooks-0.1.4/sample_main_transcript.jsonl",
        "python /workspace/number_generator.py",
        ["failed"],
    ),
    # gemini-cli's shell tool: `Error: (none)` under every output, the exit code beside
    (_GEMINI, "gh issue view 17029", ["ok"]),
    (_GEMINI, "cat packages/core/src/core/helpers.ts.txt", ["ok"]),
    (_GEMINI, "npm test -w @google/gemini-cli-core -- packages/core", ["failed"]),
    # tau-bench tools answer refusals as text
    ("tau_bench_gpt4o_airline/gpt-4o-airline.sample12.json", "book_reservation", None),
]


def _named(use: ToolUse) -> str:
    """The command as the agent wrote it (the key leaves out `cd` and `| tail`), else the key."""
    command = command_of(use.call) if use.call is not None else None
    return command if command is not None else use.key


@pytest.mark.skipif(not TRACES.is_dir(), reason="shared traces not present")
class TestRealOutputs:
    @pytest.mark.parametrize(("trace", "key", "statuses"), REAL)
    def test_statuses(self, trace: str, key: str, statuses: list[str] | None) -> None:
        """Real tool results from the shared traces get the status their output reports."""
        found = [use.outcome.status for use in _trace_uses(trace) if _named(use).startswith(key)]
        assert found
        if statuses is not None:
            assert found == statuses

    def test_editor_refusals_fail(self) -> None:
        """Each OpenHands editor result that starts with `ERROR:` reads failed."""
        trace = REAL[5][0]
        uses = [u for u in _trace_uses(trace) if u.key.startswith("str_replace_editor")]
        refused = [u for u in uses if u.answer.text.lstrip().startswith("ERROR:")]
        assert refused and all(u.outcome.failed for u in refused)
        assert all(not u.outcome.failed for u in uses if u not in refused)

    def test_codex_exec_command_runs_a_shell_command(self) -> None:
        """Codex CLI's `exec_command` is a shell call: its `cmd` is the command the brief
        lists and keys errors by (before, only names with bash, shell or terminal in them
        were, so a newer Codex session had no commands in its brief)."""
        uses = [u for u in _trace_uses(_CODEX_EXEC) if u.call and u.call.name == "exec_command"]
        assert len(uses) > 20
        for use in uses:
            assert use.call is not None
            assert command_of(use.call) == use.call.parsed_arguments["cmd"]

    @pytest.mark.parametrize(
        ("command", "statuses"),
        [
            # started, polled while running, exit 1; again, exit 0 (the fix worked)
            (
                "npm test",
                ["unknown", "unknown", "failed", "unknown", "ok", "unknown", "unknown", "ok"],
            ),
            ("npm run build", ["unknown"] * 6 + ["ok"]),
        ],
    )
    def test_codex_write_stdin_continues_its_command(
        self, command: str, statuses: list[str]
    ) -> None:
        """Each `write_stdin` chunk of a running Codex command is that command's output:
        its exit status is the command's and an error in it is keyed by the command, so a
        later run that exits 0 resolves it (before, the chunks were uses of `write_stdin`,
        and a failed test run was an error of that tool)."""
        uses = [u for u in _trace_uses(_CODEX_EXEC) if _named(u).startswith(command)]
        assert [u.outcome.status for u in uses] == statuses
        assert {u.answer.name for u in uses} == {"exec_command", "write_stdin"}
        failed = [u for u in uses if u.outcome.failed]
        # The failed run is keyed by its command, as the run after it that exited 0.
        for error in failed:
            after = uses[uses.index(error) + 1 :]
            assert any(u.key == error.key and u.outcome.status == "ok" for u in after)

    def test_fetched_pages_do_not_fail(self) -> None:
        """A fetched page that talks about exit codes is content: its outcome is unknown."""
        pages = [u for u in _trace_uses(_SPOTTER) if u.key == "WebFetch"]
        assert pages and {u.outcome.status for u in pages} == {"unknown"}

    def test_tau_refusals_fail(self) -> None:
        """tau-bench's `Error: ...` answers read failed, its bookings ok or unknown."""
        uses = _trace_uses(REAL[-1][0])
        refusals = [u for u in uses if u.answer.text.startswith("Error:")]
        assert len(refusals) == 10 and all(u.outcome.failed for u in refusals)
        assert not any(u.outcome.failed for u in uses if u not in refusals)


class TestContentCommands:
    @pytest.mark.parametrize(
        ("command", "content"),
        [
            ("cd /testbed && grep -rn 'FAILED' tests", True),
            ("cat build.log | tail -5", True),
            ("git diff HEAD~1 -- src", True),
            ("LC_ALL=C sort out.txt | uniq -c", True),
            ("open src/app.py 120", True),
            ("python -m pytest -x 2>&1 | tail -20", False),
            ("sed -i 's/a/b/' src/app.py", False),
            ("git commit -m 'fix'", False),
            ("cat > t.py << 'EOF'\nprint(1)\nEOF\npython t.py", False),
        ],
    )
    def test_commands_that_print_content(self, command: str, content: bool) -> None:
        """Only a command whose every step prints content has its output read as content."""
        assert _shows_content(command) is content


class TestMetadata:
    def test_an_exit_status_kept_in_meta_counts(self) -> None:
        """An importer's `returncode` in the node's meta is the exit status."""
        node = ToolResultNode(
            id="r", tool_call_id="c", content=(TextPart(text="done"),), meta={"returncode": 3}
        )
        assert outcome_of(node).describe() == "failed (exit 3): done"

    def test_a_read_tool_shows_content(self) -> None:
        """The result of a `view` call is a file's text: a traceback in it is no failure."""
        call = ToolCallNode(
            id="k",
            tool_call_id="c",
            assistant_id="a",
            name="str_replace_editor",
            arguments='{"command": "view", "path": "/r/log.txt"}',
        )
        node = ToolResultNode(id="r", tool_call_id="c", content=(TextPart(text=PYTEST_FAILED),))
        assert outcome_of(node, call).status == "unknown"
        assert outcome_of(node).status == "failed"


class TestRunnerSummaryQuoted:
    """A test run that passed is told by the runner's own summary line, verbatim: the
    brief's command list quotes it (before, only our count `79 passed` was there, and the
    line the agent last saw, `Ran 79 tests in 0.062s`, was in no request once summarized)."""

    def test_a_passing_unittest_run_quotes_its_summary(self) -> None:
        text = "." * 79 + "\n" + "-" * 70 + "\nRan 79 tests in 0.062s\n\nOK\n"
        outcome = read_outcome(text, is_error=False, code=0, content=False)
        assert outcome.status == "ok" and outcome.counts == "79 passed"
        assert outcome.line == "Ran 79 tests in 0.062s"
        assert "`Ran 79 tests in 0.062s`" in outcome.describe(lambda line: f"`{line}`")

    def test_a_failing_run_still_quotes_its_first_failure(self) -> None:
        text = (
            "FAILED tests/test_a.py::test_b - KeyError: 'id'\n"
            "===== 1 failed, 3 passed in 0.20s ====="
        )
        outcome = read_outcome(text, is_error=True, code=1, content=False)
        assert outcome.line == "tests/test_a.py::test_b - KeyError: 'id'"
        # The runner's summary stands for our counts: it says them, as printed.
        assert outcome.counts == "1 failed, 3 passed in 0.20s"

    def test_a_failing_unittest_run_keeps_its_verdict_beside_the_counts(self) -> None:
        text = (
            "ERROR: test_x (app.tests.T)\n" + "-" * 70 + "\nTraceback (most recent call last):\n"
            '  File "app/tests.py", line 3, in test_x\nKeyError: 1\n\n'
            + "-" * 70
            + "\nRan 3 tests in 0.104s\n\nFAILED (errors=1)\n"
        )
        outcome = read_outcome(text, is_error=True, code=1, content=False)
        assert outcome.line == "test_x (app.tests.T) - KeyError: 1"
        assert outcome.counts == "1 error, 2 passed (Ran 3 tests in 0.104s FAILED (errors=1))"
        assert "FAILED (errors=1)" in outcome.describe(lambda line: f"`{line}`")

    def test_openhands_glued_note_still_reads_as_a_failed_run(self) -> None:
        """OpenHands writes `[Python Interpreter: ...]` on the verdict's line: the run is
        still one error (before, the verdict went unread and the run counted 1 passed,
        so the brief told no counts and quoted no summary)."""
        note = "[Python Interpreter: /opt/miniconda3/envs/testbed/bin/python]"
        text = (
            "ERROR: test_x (app.tests.T)\r\n"
            + "-" * 70
            + "\r\nTraceback (most recent call last):\r\n"
            '  File "app/tests.py", line 3, in test_x\r\nKeyError: 1\r\n\r\n'
            + "-"
            * 70
            + f"\r\nRan 1 test in 0.000s\r\n\r\nFAILED (errors=1){note}\n"
            "root@openhands-workspace:/workspace # \n[Command finished with exit code 1]"
        )
        outcome = read_outcome(text, is_error=False, code=None, content=False)
        assert outcome.status == "failed"
        assert outcome.counts == f"1 error (Ran 1 test in 0.000s FAILED (errors=1){note})"


def _cline(*reports: tuple[str, str, bool, str | None]) -> str:
    """Cline 3's tool output: a JSON list of reports, compact as it sends them."""
    listed = []
    for query, result, success, error in reports:
        report: dict[str, Any] = {"query": query, "result": result}
        if error is not None:
            report["error"] = error
        listed.append({**report, "success": success})
    return json.dumps(listed, separators=(",", ":"))


# As the real Cline 3.0.65 answered `run_commands` and `read_files` (tests/.../
# test_cline_real.py runs it): no error flag, the failure in the report.
CLINE_TRACEBACK = _cline(
    (
        "python3 -c \"raise ValueError('bad port 8080')\"",
        "[Command exited with code 1]\n\n[stderr]\nTraceback (most recent call last):\n"
        '  File "<string>", line 1, in <module>\nValueError: bad port 8080\n',
        False,
        "Command exited with code 1",
    )
)
CLINE_LS = _cline(
    (
        "ls /nonexistent_dir",
        "[Command exited with code 2]\n\n[stderr]\n"
        "ls: cannot access '/nonexistent_dir': No such file or directory\n",
        False,
        "Command exited with code 2",
    )
)


class TestToolReports:
    """A tool that reports its calls in JSON (Cline 3) is read by its reports."""

    def test_a_failed_command_is_read_from_what_it_printed(self) -> None:
        traceback = read_outcome(CLINE_TRACEBACK, is_error=False, code=None, content=False)
        assert (traceback.status, traceback.code) == ("failed", 1)
        assert traceback.line == "ValueError: bad port 8080"
        listing = read_outcome(CLINE_LS, is_error=False, code=None, content=False)
        assert (listing.status, listing.code) == ("failed", 2)
        assert listing.line == "ls: cannot access '/nonexistent_dir': No such file or directory"

    def test_the_first_failure_of_several_commands_is_the_outcome(self) -> None:
        text = _cline(
            ("false", "[Command exited with code 1]", False, "Command exited with code 1"),
            ("echo two", "two\n", True, None),
        )
        outcome = read_outcome(text, is_error=False, code=None, content=False)
        assert (outcome.status, outcome.code) == ("failed", 1)

    def test_a_failed_read_is_a_failure_though_a_read_is_content(self) -> None:
        """A read that failed says so in its report; its error is the line."""
        error = "Error reading file: ENOENT: no such file or directory, statx '/n/f.txt'"
        text = _cline(("/n/f.txt", "", False, error))
        outcome = read_outcome(text, is_error=False, code=None, content=True)
        assert (outcome.status, outcome.line) == ("failed", error)

    def test_a_report_of_success_is_ok_unless_its_output_says_otherwise(self) -> None:
        assert _status(_cline(("echo fine", "fine\n", True, None))) == "ok"
        assert _status(_cline(("/p/a.py", "x = 1\n", True, None)), content=True) == "ok"
        piped = read_outcome(
            _cline(("pytest | tail -1", "1 failed, 3 passed in 0.2s\n", True, None)),
            is_error=False,
            code=None,
            content=False,
        )
        assert (piped.status, piped.counts) == ("failed", "1 failed, 3 passed")

    def test_an_exit_status_or_error_flag_recorded_beside_it_still_counts(self) -> None:
        """A harness's exit status or error flag on the output fails a report of success."""
        text = _cline(("make", "built\n", True, None))
        assert read_outcome(text, is_error=False, code=2, content=False).code == 2
        assert read_outcome(text, is_error=False, code=2, content=False).failed
        assert read_outcome(text, is_error=True, code=None, content=False).failed
        assert read_outcome(text, is_error=False, code=0, content=False).code == 0

    @pytest.mark.parametrize(
        "text",
        [
            '{"success": "yes", "result": "error: no"}',  # not a boolean
            '{"data": {"success": false}}',  # deeper than the top: a fetched document
            '[{"success": false}, 3]',  # not every item a report
            "[]",
            '{"success": false',  # not JSON
            "[" * 100_000 + '"success"',  # nested past the parser's depth
        ],
    )
    def test_json_that_is_no_report_is_read_as_any_output(self, text: str) -> None:
        assert read_outcome(text, is_error=False, code=None, content=False) == read_outcome(
            text.replace('"success"', '"outcome"'), is_error=False, code=None, content=False
        )

    @settings(max_examples=200, deadline=None)
    @given(st.lists(st.tuples(_PLAIN, st.booleans()), min_size=1, max_size=5), st.booleans())
    def test_failed_exactly_when_a_report_says_so(
        self, reports: list[tuple[str, bool]], content: bool
    ) -> None:
        """Property: over reports whose texts say nothing, the call failed exactly when one
        of them did not succeed; else the tool's word is an ok."""
        text = _cline(*((f"cmd{i}", said, ok, None) for i, (said, ok) in enumerate(reports)))
        outcome = read_outcome(text, is_error=False, code=None, content=content)
        assert outcome.status == ("ok" if all(ok for _, ok in reports) else "failed")

    def test_the_brief_names_each_command_and_keys_its_error_by_it(self) -> None:
        """Cline's `run_commands` is a shell: the brief lists the command, the error stays
        open after another command succeeds, and the output's identifiers are read off
        its lines (not `nValueError` from the escaped line break)."""
        graph = ContextGraph(counter=WordCounter())
        graph.add_user("Start the server.")
        command = "python3 -c \"raise ValueError('bad port 8080')\""
        for call_id, commands, output in (
            ("a", [command], CLINE_TRACEBACK),
            ("b", ["echo fine"], _cline(("echo fine", "fine\n", True, None))),
        ):
            arguments = {"commands": commands}
            graph.add_assistant(
                tool_calls=[{"id": call_id, "name": "run_commands", "arguments": arguments}]
            )
            graph.add_tool_result(call_id, output)
        text = ExtractiveSummarizer(counter=WordCounter()).brief(_nodes(graph))
        assert f"- ran `{command}`: failed (exit 1)" in text
        assert "- ran `echo fine`: ok" in text
        assert f"- [open] `{command}`: output of `run_commands`: `ValueError: bad port 8080`" in (
            text
        )
        assert "nValueError" not in text and "nTraceback" not in text
