"""The scripted agent the gateway's tests and `benchmarks.proxy` drive.

A scripted model (`Steps`) asks for one `run` tool call per turn; the agent loop
(`agent`) answers each call with a tool output of about 1,200 tokens, different at
every step, so a few dozen turns grow the history far past a small budget (`BUDGET`).
"""

from __future__ import annotations

import json
from typing import Any

import anthropic

__all__ = ["BUDGET", "MODEL", "SYSTEM", "TOOLS", "Steps", "agent", "client", "output"]

BUDGET = 6_000
"""Small, so that a dozen turns of tool output are far past it."""

SYSTEM = "You are a coding agent. Run the steps the user asks for, one tool call at a time."
TOOLS = [
    {
        "name": "run",
        "description": "Run one step and return its output.",
        "input_schema": {"type": "object", "properties": {"step": {"type": "integer"}}},
    }
]
MODEL = "claude-sonnet-4-5"


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


def output(step: int) -> str:
    """A tool output of about 1,200 tokens, different at every step."""
    return "\n".join(f"step {step} line {n}: value {step * 1000 + n}" for n in range(100))


def client(url: str) -> anthropic.Anthropic:
    """The Anthropic SDK's client at `url`, without retries (a refusal must show)."""
    return anthropic.Anthropic(base_url=url, api_key="test-key", max_retries=0)


def agent(
    url: str,
    session: str,
    *,
    stream: bool = False,
    messages: list[dict[str, Any]] | None = None,
    turns: int | None = None,
) -> list[dict[str, Any]]:
    """Run the agent loop until the model answers without a call (or for `turns` calls).

    Returns the whole history the agent holds, the model's last answer included.
    """
    messages = messages if messages is not None else [{"role": "user", "content": "Run the steps."}]
    with client(url) as sdk:  # closed: a socket left to the collector warns
        made = 0
        while turns is None or made < turns:
            reply = _call(sdk, session, stream, messages)
            made += 1
            messages.append(
                {
                    "role": "assistant",
                    "content": [b.model_dump(exclude_none=True) for b in reply.content],
                }
            )
            calls = [b for b in reply.content if b.type == "tool_use"]
            if not calls:
                break
            results = [
                {"type": "tool_result", "tool_use_id": c.id, "content": output(c.input["step"])}
                for c in calls
            ]
            messages.append({"role": "user", "content": results})
    return messages


def _call(
    sdk: anthropic.Anthropic, session: str, stream: bool, messages: list[dict[str, Any]]
) -> Any:
    """One model call of the loop, as Claude Code makes it (its session in `metadata`)."""
    kwargs: dict[str, Any] = {
        "model": MODEL,
        "max_tokens": 1024,
        "system": SYSTEM,
        "tools": TOOLS,
        "messages": messages,
        "metadata": {"user_id": json.dumps({"session_id": session})},
    }
    if stream:
        with sdk.messages.stream(**kwargs) as streamed:
            return streamed.get_final_message()
    return sdk.messages.create(**kwargs)
