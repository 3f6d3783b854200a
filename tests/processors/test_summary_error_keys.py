"""An error is resolved by the same run, however the agent framed the command.

Agents pipe a test run through `tail` and `cd` into the checkout first, and change both
between tries: `python tests/runtests.py app 2>&1 | tail -100` failed, then `cd /repo &&
python tests/runtests.py app | tail -30` passed. Keyed by the whole string, the first
stayed `[open]` after the tests passed (django-15814's brief listed eight open errors
after its tests passed). The key (`facts.command_key`) is the run: without a leading
`cd` and without a trailing stderr redirection or a pipe that only shortens the output.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from context_graph import ContextGraph
from context_graph.testing import WordCounter
from processors.summarize.brief import parse
from processors.summarize.extractive import ExtractiveSummarizer
from processors.summarize.facts import command_key
from tests.processors.brief_sessions import add_bash, transcript

FAILED = (
    "FAILED tests/test_app.py::test_x - KeyError: 'id'\n===== 1 failed, 3 passed in 0.20s ====="
)
PASSED = "===== 4 passed in 0.18s ====="


def _graph(*runs: tuple[str, str, bool]) -> ContextGraph:
    graph = ContextGraph(counter=WordCounter())
    graph.add_user("Fix test_x in tests/test_app.py.")
    for index, (command, output, error) in enumerate(runs):
        add_bash(graph, f"c{index}", command, output, is_error=error)
    return graph


class TestCommandKey:
    @pytest.mark.parametrize(
        ("command", "key"),
        [
            ("python tests/runtests.py app 2>&1 | tail -100", "python tests/runtests.py app"),
            (
                "cd /repo && python tests/runtests.py app | tail -n 30",
                "python tests/runtests.py app",
            ),
            ("cd /testbed; pytest -x tests/a.py | head -50", "pytest -x tests/a.py"),
            ('cd "/my dir" && make test 2>&1', "make test"),
            ("cd /a && cd b && go test ./...", "go test ./..."),
            # A filter that changes what the run reports is part of it; so is a bare `cd`.
            ("pytest | grep FAIL", "pytest | grep FAIL"),
            ("cd /tmp", "cd /tmp"),
            ("tail -5 log.txt", "tail -5 log.txt"),
            ("python  -m   pytest", "python -m pytest"),
        ],
    )
    def test_the_run_without_its_framing(self, command: str, key: str) -> None:
        assert command_key(command) == key

    @settings(max_examples=200, deadline=None)
    @given(
        cd=st.sampled_from(["", "cd /repo && ", "cd x; ", "cd /a && cd /b && "]),
        run=st.text(st.sampled_from("abc -./=|&;'\"\t"), min_size=1, max_size=30),
        view=st.sampled_from(["", " 2>&1", " | tail -30", " 2>&1 | head -n 5", " | cat"]),
    )
    def test_the_key_is_stable_and_never_empty(self, cd: str, run: str, view: str) -> None:
        """A key keys itself; it is never empty for a command with words."""
        command = cd + run + view
        key = command_key(command)
        assert command_key(key) == key
        assert key.strip() or not command.strip()


class TestResolution:
    def test_a_reframed_run_that_passed_resolves_the_error(self) -> None:
        graph = _graph(
            ("python -m pytest tests/test_app.py 2>&1 | tail -100", FAILED, True),
            ("cd /repo && python -m pytest tests/test_app.py | tail -30", PASSED, False),
        )
        brief = parse(ExtractiveSummarizer().brief(transcript(graph)))
        assert brief is not None
        (error,) = brief.errors
        assert error.resolved and error.key == "python -m pytest tests/test_app.py"
        assert "4 passed in 0.18s" in error.fixed

    def test_another_target_does_not_resolve_it(self) -> None:
        graph = _graph(
            ("python -m pytest tests/test_app.py | tail -5", FAILED, True),
            ("python -m pytest tests/test_other.py | tail -5", PASSED, False),
        )
        brief = parse(ExtractiveSummarizer().brief(transcript(graph)))
        assert brief is not None
        assert [e.resolved for e in brief.errors] == [False]

    def test_a_brief_written_with_whole_commands_is_resolved_by_the_run(self) -> None:
        """A rolling update of a brief whose key is the whole command (as written before)."""
        previous = (
            "# Summary of the earlier conversation\n\n"
            "## Errors\n"
            "- [open] `cd /repo && python -m pytest tests/test_app.py 2>&1 | tail -5`: 1 failed"
        )
        graph = _graph(("python -m pytest tests/test_app.py", PASSED, False))
        brief = parse(ExtractiveSummarizer().brief(transcript(graph), previous=previous))
        assert brief is not None
        (error,) = brief.errors
        assert error.resolved
