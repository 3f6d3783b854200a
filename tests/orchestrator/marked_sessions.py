"""A coding session made call by call, and where its requests carry cache marks."""

from __future__ import annotations

import json
from typing import Any

from orchestrator import ContextManager

__all__ = ["add_step", "marked_messages", "start_task"]


def start_task(manager: ContextManager) -> None:
    """The system prompt and the task every session here opens with."""
    manager.add_system("You are a coding agent.")
    manager.add_user("Fix the failing test in tests/test_parser.py.")


def add_step(manager: ContextManager, n: int) -> None:
    """Step `n`: a call to `bash` and its 40-line output."""
    manager.add_assistant(
        f"step {n}: running the suite again", tool_calls=[{"id": f"c{n}", "name": "bash"}]
    )
    manager.add_tool_result(f"c{n}", f"run {n}: " + "test ok\n" * 40)


def marked_messages(payload: dict[str, Any]) -> list[int]:
    """Indices of the messages of a request body that carry a cache mark."""
    messages = payload["messages"]
    assert isinstance(messages, list)
    return [i for i, m in enumerate(messages) if "cache_control" in json.dumps(m)]
