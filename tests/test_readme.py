"""The README opens with the two commands CI runs (its code runs in test_docs_blocks.py)."""

from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_opens_with_the_two_commands() -> None:
    """The first block is exactly the two commands: run the CLI, run the tests."""
    first = re.search(r"```bash\n(.*?)```", README.read_text(encoding="utf-8"), re.S)
    assert first is not None
    lines = first.group(1).strip().splitlines()
    assert len(lines) == 2
    assert lines[0].endswith("context-graph inspect")
    assert lines[1].endswith("python -m pytest")
    ci = (README.parent / ".ci" / "run").read_text(encoding="utf-8")
    assert lines[1] in ci


def test_ci_runs_the_main_job_on_a_bare_install_first() -> None:
    """.ci/run runs the README's first command in a fresh venv before the test extras go in."""
    first = re.search(r"```bash\n(.*?)```", README.read_text(encoding="utf-8"), re.S)
    assert first is not None
    main_job, tests = first.group(1).strip().splitlines()
    ci = (README.parent / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert main_job in ci and tests in ci
    assert "rm -rf .venv" in ci[: ci.index(main_job)]
    assert ci.index(main_job) < ci.index(tests)
