"""The `*_sync` twins inside a running event loop: a Jupyter notebook, a sync client in a coroutine.

Each scenario runs under `asyncio.run` and `trio.run` themselves (not pytest's loop), in a
thread of its own joined with a time limit: a call that hangs fails the test instead of
blocking the run.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Coroutine, Iterator, Sequence
from typing import Any

import anyio
import openai
import pytest
import trio

from benchmarks.provider_server import ProviderServer
from context_graph.errors import ConfigurationError
from context_graph.graph.nodes import Node
from context_graph.render import RenderResult
from context_graph.testing import WordCounter
from context_graph.validate.request import validate
from orchestrator import ContextManager, GuardConfig, TriggerConfig
from orchestrator.policy import Policy
from processors.base import ProcessorContext, Proposal, run_processor
from processors.truncate import ToolOutputTruncator

BUDGET = 6_000
LOG = "\n".join(f"row {i}: worker-{i % 7} handled batch {i * 37} status=ok" for i in range(250))
#: A hang guard, never an expectation: every scenario ends in well under a second.
HANG = 60.0
RUNNERS: dict[str, Callable[[Callable[[], Coroutine[Any, Any, Any]]], Any]] = {
    "asyncio": lambda main: asyncio.run(main()),
    "trio": trio.run,
}


def finishes(work: Callable[[], Any]) -> Any:
    """`work()`'s result, run on a thread joined with `HANG`; the test fails if it hangs."""
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["result"] = work()
        except BaseException as exc:
            box["error"] = exc

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(HANG)
    if thread.is_alive():
        pytest.fail(f"hung: still running after {HANG:.0f} s")
    if "error" in box:
        raise box["error"]
    return box["result"]


class Backend:
    """A truncator that records which event loop it ran under, and in which thread."""

    name = "truncate"

    def __init__(self) -> None:
        self.inner = ToolOutputTruncator(max_tokens=40)
        self.seen: list[tuple[str, int]] = []

    async def propose(self, targets: Sequence[Node], ctx: ProcessorContext) -> Proposal:
        library = "trio" if trio.lowlevel.in_trio_run() else "asyncio"
        self.seen.append((library, threading.get_ident()))
        await anyio.sleep(0)
        return await run_processor(self.inner, targets, ctx)


def overflowing(stage: Any = None) -> ContextManager:
    """A session whose request does not fit: the next render must compact."""
    manager = ContextManager(
        counter=WordCounter(),
        budget=260,
        clock=lambda: 0.0,
        policy=Policy(
            pipeline=[stage or ToolOutputTruncator(max_tokens=40)],
            triggers=TriggerConfig(soft_ratio=0.5, hard_ratio=0.95),
            guards=GuardConfig(floor_tokens=0),
        ),
    )
    manager.add_system("You are a careful agent.")
    manager.add_user("Find the bug in app.py and fix it.")
    for index in range(3):
        manager.add_assistant(
            f"Reading part {index}.", [{"id": f"c{index}", "name": "bash", "arguments": {}}]
        )
        manager.add_tool_result(f"c{index}", " ".join(f"l{index}w{n}" for n in range(80)))
    return manager


@pytest.fixture(name="expected")
def expected_fixture() -> RenderResult:
    """What the compacting render gives outside any event loop."""
    return overflowing().render_sync()


@pytest.mark.parametrize("runner", sorted(RUNNERS))
class TestRenderSyncInALoop:
    def test_a_render_that_must_compact(self, runner: str, expected: RenderResult) -> None:
        """`render_sync()` from a coroutine compacts and renders what it renders outside one."""
        stage = Backend()
        manager = overflowing(stage)

        async def main() -> RenderResult:
            return manager.render_sync()

        result = finishes(lambda: RUNNERS[runner](main))
        assert result.payload == expected.payload
        assert result.tokens <= 260
        assert validate(result.payload, "openai") == []
        assert manager.stats().proposals_applied >= 1
        # On a helper thread, in a loop of the caller's own kind.
        assert {library for library, _ in stage.seen} == {runner}

    def test_a_render_with_nothing_to_do(self, runner: str) -> None:
        """A render that compacts nothing gives the same request in a loop as outside."""
        manager = ContextManager(counter=WordCounter(), budget=10_000, policy=Policy())
        manager.add_system("Be brief.")
        manager.add_user("hi")
        outside = manager.render_sync()

        async def main() -> RenderResult:
            return manager.render_sync()

        assert finishes(lambda: RUNNERS[runner](main)).payload == outside.payload

    def test_errors_reach_the_caller(self, runner: str) -> None:
        """An error of the render on the helper thread is raised to the caller, as is."""
        manager = overflowing()

        async def main() -> None:
            manager.render_sync(budget=0)

        refused = r"render(_sync)?: `budget` must be a positive int"
        with pytest.raises(ConfigurationError, match=refused):
            finishes(lambda: RUNNERS[runner](main))

    def test_the_tool_call_twin_compacts(self, runner: str) -> None:
        """`handle_tool_call_sync('context_compact')` from a coroutine runs the compaction."""
        manager = ContextManager(
            counter=WordCounter(),
            agent_tools=("expand", "compact"),
            policy=Policy(pipeline=[ToolOutputTruncator(max_tokens=40)]),
        )
        manager.add_user("Find the bug.")
        manager.add_assistant("Reading.", [{"id": "c0", "name": "bash", "arguments": {}}])
        manager.add_tool_result("c0", " ".join(f"w{n}" for n in range(300)))
        before = manager.working.total_tokens

        async def main() -> str:
            return manager.handle_tool_call_sync("context_compact", "{}")

        answer = finishes(lambda: RUNNERS[runner](main))
        assert answer.startswith("context_compact: 1 edit(s) applied")
        assert manager.working.total_tokens < before


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
class TestInsideAsyncWith:
    def test_a_due_compaction_runs_on_the_helper_thread(self, backend: str) -> None:
        """Inside `async with manager:`, with no run in progress, `render_sync` compacts itself."""
        stage = Backend()
        manager = overflowing(stage)

        async def main() -> RenderResult:
            async with manager:
                return manager.render_sync()

        result = finishes(lambda: anyio.run(main, backend=backend))
        assert result.tokens <= 260
        assert validate(result.payload, "openai") == []
        assert len({thread for _, thread in stage.seen}) == 1
        assert stage.seen[0][1] != threading.get_ident()

    def test_a_run_in_progress_of_the_same_loop_is_refused_at_once(self, backend: str) -> None:
        """While a background run of the caller's own loop holds the manager, it refuses.

        Waiting would block the loop the run needs to finish: a hang, not an answer.
        """
        entered = threading.Event()

        class Slow:
            name = "slow"

            async def propose(self, targets: Sequence[Node], ctx: ProcessorContext) -> Proposal:
                entered.set()
                await anyio.sleep(3_600)
                return Proposal(processor=self.name)

        manager = ContextManager(
            counter=WordCounter(),
            budget=300,
            policy=Policy(
                pipeline=[Slow()],
                triggers=TriggerConfig(soft_ratio=0.5, hard_ratio=0.95),
                guards=GuardConfig(floor_tokens=0),
            ),
        )

        async def main() -> None:
            async with manager:
                manager.add_user("go")
                manager.add_assistant("Reading.", [{"id": "c0", "name": "bash", "arguments": {}}])
                manager.add_tool_result("c0", " ".join(f"w{n}" for n in range(200)))
                while not entered.is_set():
                    await anyio.sleep(0.01)
                with pytest.raises(RuntimeError, match=r"await manager\.render\("):
                    manager.render_sync()

        finishes(lambda: anyio.run(main, backend=backend))


def reads(turns: int) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """A model that calls `read_file` for `turns - 1` turns, then answers."""
    asked = iter(range(1, turns))

    def respond(body: dict[str, Any]) -> dict[str, Any]:
        n = next(asked, None)
        return {"text": "done"} if n is None else {"calls": [["read_file", {"path": f"f{n}"}]]}

    return respond


class TestWrappedSyncClient:
    @pytest.fixture(name="server")
    def server_fixture(self) -> Iterator[ProviderServer]:
        server = ProviderServer("openai", respond=reads(12), limit=BUDGET)
        server.start()
        yield server
        server.stop()

    @pytest.mark.parametrize("runner", sorted(RUNNERS))
    def test_a_sync_openai_loop_inside_a_running_loop(
        self, runner: str, server: ProviderServer
    ) -> None:
        """`manager.wrap(OpenAI())` in a coroutine: every request valid and under the budget."""
        manager = ContextManager(format="openai", budget=BUDGET, policy=Policy())
        client = manager.wrap(
            openai.OpenAI(base_url=f"{server.url}/v1", api_key="test", max_retries=0)
        )
        schema = {"type": "object", "properties": {"path": {"type": "string"}}}
        tools: Any = [{"type": "function", "function": {"name": "read_file", "parameters": schema}}]

        async def main() -> None:
            messages: list[Any] = [{"role": "user", "content": "Read every file."}]
            while True:
                response = client.chat.completions.create(model="m", messages=messages, tools=tools)
                message = response.choices[0].message
                messages.append(message)
                for call in message.tool_calls or ():
                    messages.append({"role": "tool", "tool_call_id": call.id, "content": LOG})
                if not message.tool_calls:
                    return

        finishes(lambda: RUNNERS[runner](main))
        assert (len(server.requests), server.refused) == (12, [])
        assert max(server.prompts) <= BUDGET
        assert manager.stats().proposals_applied >= 1
