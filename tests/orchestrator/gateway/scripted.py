"""The gateway tests' scripted model and budget (shared by the tests and the fixtures)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest

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


BUDGET = 6_000
"""Small, so that a dozen turns of tool output are far past it."""


class Steps:
    """A scripted model: asks for `tool` `turns` times, then answers; counts per session."""

    def __init__(self, turns: int, tool: str = "run") -> None:
        self.turns = turns
        self.tool = tool
        self.asked: dict[str, int] = {}

    def __call__(self, body: dict[str, Any]) -> dict[str, Any]:
        # The model's turn count lives here, not in the request: the gateway compacts it.
        key = str(body.get("metadata", {}).get("user_id", ""))
        done = self.asked.get(key, 0)
        if done >= self.turns:
            return {"text": "All done."}
        self.asked[key] = done + 1
        return {"text": f"Step {done}.", "calls": [[self.tool, {"step": done}]]}
