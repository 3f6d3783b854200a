"""The gateway tests' scripted model and budget (shared by the tests and the fixtures).

`Steps` and `BUDGET` live in `benchmarks.gateway_script` (the proxy benchmark drives the
same script); they are imported from here as before.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from benchmarks.gateway_script import BUDGET, Steps

__all__ = ["AGENTS", "BUDGET", "Steps", "agent_cli"]

ROOT = Path(__file__).resolve().parents[3]
AGENTS = Path(os.environ.get("CONTEXT_GRAPH_AGENTS", ROOT / ".agents" / "node_modules"))
"""The `node_modules` folder the real agent CLIs are installed in (`.ci/run` fills it)."""


def agent_cli(entry: str, name: str) -> Path:
    """The installed agent CLI's script at `AGENTS / entry`, or skip (fail in CI) without it."""
    script = AGENTS / entry
    if script.exists() and shutil.which("node"):
        return script
    if os.environ.get("CONTEXT_GRAPH_REQUIRE_AGENTS") == "1":
        pytest.fail(f"{name} is not installed at {script} (and node on PATH)")
    pytest.skip(f"{name} is not installed at {script}; .ci/run installs it")
