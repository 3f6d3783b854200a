"""The gateway tests' scripted model and budget (shared by the tests and the fixtures)."""

from __future__ import annotations

from typing import Any

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
