"""mypy catches a misspelled keyword of the public `**fields` signatures (issue 32).

The shorthands and configs take `**fields: Unpack[SomeFields]`; this runs mypy, with the
project's config, on a snippet that misspells one keyword of each and checks that each
line is reported, and that the same calls spelled right pass.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

HEADER = """\
from context_graph import ContextGraph
from orchestrator.compaction.guards import GuardConfig
from orchestrator.compaction.trigger_config import TriggerConfig
from orchestrator.manager import ContextManager
from processors.base import ProcessorContext


def calls(graph: ContextGraph, manager: ContextManager, reply: object) -> None:
"""

#: Each call misspelled (a keyword its signature does not take), and spelled right.
CALLS = [
    ('graph.add_user("hi", timestap="2026")', 'graph.add_user("hi", timestamp="2026")'),
    ('graph.add_tool_result("c1", "out", metta={})', 'graph.add_tool_result("c1", "out", meta={})'),
    ('graph.withdraw(["n1"], priority=2)', 'graph.withdraw(["n1"], meta={})'),
    ("manager.add_response(reply, modle='m')", "manager.add_response(reply, model='m')"),
    ("GuardConfig(floor_token=0)", "GuardConfig(floor_tokens=0)"),
    ("TriggerConfig(hard_ration=0.9)", "TriggerConfig(hard_ratio=0.9)"),
    ("ProcessorContext.for_graph(graph, budjet=1)", "ProcessorContext.for_graph(graph, budget=1)"),
]


def _mypy(tmp_path: Path, lines: list[str]) -> list[str]:
    """mypy's error lines for `HEADER` followed by `lines` as the function's body."""
    snippet = tmp_path / "snippet.py"
    body = "".join(f"    {line}\n" for line in lines)
    snippet.write_text(HEADER + body, encoding="utf-8")
    command = [sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml")]
    command += ["--cache-dir", str(ROOT / ".mypy_cache"), "--no-error-summary", str(snippet)]
    # A process of its own (mypy retunes the interpreter it runs in); MYPYPATH: this checkout.
    env = {**os.environ, "MYPYPATH": str(ROOT)}
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    assert done.returncode in (0, 1), done.stderr
    return [line for line in done.stdout.splitlines() if ": error:" in line]


class TestMypyCatchesMisspelledKeywords:
    def test_each_misspelling_is_an_error_on_its_line(self, tmp_path: Path) -> None:
        """Every misspelled keyword is reported by mypy, on the line that passes it."""
        errors = _mypy(tmp_path, [wrong for wrong, _ in CALLS])
        first = HEADER.count("\n") + 1
        reported = {int(line.split(":")[1]) for line in errors}
        assert reported == set(range(first, first + len(CALLS))), "\n".join(errors)

    def test_the_right_spellings_pass(self, tmp_path: Path) -> None:
        """The same calls with the keywords spelled right type-check."""
        assert _mypy(tmp_path, [right for _, right in CALLS]) == []
