"""The static checks CI runs with the suite: mypy over every package and the benchmarks,
ruff's lint and format check over the checkout.

`python -m mypy context_graph processors orchestrator benchmarks` (strict, as configured
in pyproject.toml), `ruff check .` and `ruff format --check .` are what each change is
checked with before it lands; running them here makes a clean clone's CI catch a change
that skipped them. mypy's cache goes under the checkout (`.mypy_cache`, as
tests/test_typed_keywords.py does), so a second run is quick.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHECKED = ("context_graph", "processors", "orchestrator", "benchmarks")


def test_mypy_finds_nothing() -> None:
    """Every package and the benchmarks type-check clean."""
    command = [sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml")]
    command += ["--cache-dir", str(ROOT / ".mypy_cache"), *CHECKED]
    env = {**os.environ, "MYPYPATH": str(ROOT)}
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, env=env, check=False)
    assert done.returncode == 0, done.stdout + done.stderr


def test_ruff_finds_nothing() -> None:
    """The lint rules and the formatting of pyproject.toml hold everywhere."""
    for check in (["check", "."], ["format", "--check", "."]):
        command = [sys.executable, "-m", "ruff", *check]
        done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)
        assert done.returncode == 0, done.stdout + done.stderr
