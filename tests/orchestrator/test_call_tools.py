"""One call's tools are part of its request: two renders in flight at once keep their own.

Issue 32: the tool set of a call used to be swapped into the shared renderers for the
length of the call, across awaits, so a second call started meanwhile changed the first
one's tools.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import anyio
import pytest

from context_graph.graph.nodes import Node
from context_graph.testing import WordCounter
from orchestrator import ContextManager, GuardConfig, TriggerConfig
from orchestrator.policy import Policy
from processors import ToolOutputTruncator
from processors.base import ProcessorContext, Proposal

LOG = " ".join(f"word{n}" for n in range(400))


def tool(name: str) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": f"The {name} tool.",
            "parameters": {"type": "object", "properties": {}},
        },
    }


class Slow:
    """A stage that waits (an await the other call runs in), then truncates."""

    name = "slow"

    def __init__(self) -> None:
        self.inner = ToolOutputTruncator(max_tokens=40)

    async def propose(self, targets: Sequence[Node], ctx: ProcessorContext) -> Proposal:
        await anyio.sleep(0.05)
        return await self.inner.propose(targets, ctx)


def manager() -> ContextManager:
    made = ContextManager(
        counter=WordCounter(),
        budget=600,
        policy=Policy(
            pipeline=[Slow()],
            triggers=TriggerConfig(soft_ratio=None, hard_ratio=None),
            guards=GuardConfig(floor_tokens=0),
        ),
    )
    made.add_system("You are careful.")
    made.add_user("Read the logs.")
    made.add_assistant("Reading.", [{"id": "a", "name": "bash"}, {"id": "b", "name": "bash"}])
    made.add_tool_result("a", LOG)
    made.add_tool_result("b", LOG)
    made.add_assistant("Read.")
    made.add_user("Next.")
    return made


def names(payload: dict[str, Any]) -> list[str]:
    return [t["function"]["name"] for t in payload.get("tools", [])]


@pytest.mark.anyio
async def test_two_calls_in_flight_keep_their_own_tools() -> None:
    shared = manager()
    results: dict[str, Any] = {}

    async def call(name: str, delay: float) -> None:
        await anyio.sleep(delay)
        results[name] = await shared.render(tools=[tool(name)])

    async with anyio.create_task_group() as group:
        group.start_soon(call, "first", 0)
        group.start_soon(call, "second", 0.01)  # starts while the first compacts
    assert names(results["first"].payload) == ["first"]
    assert names(results["second"].payload) == ["second"]


def test_a_call_that_raises_leaves_the_next_its_own_tools() -> None:
    shared = manager()
    with pytest.raises(Exception, match="tool"):
        shared.render_sync(tools=[{"type": "function", "function": {"name": ""}}])
    assert names(shared.render_sync(tools=[tool("after")]).payload) == ["after"]
    assert names(shared.render_sync().payload) == []
