"""One manager used from several threads at once: serialized, never hung, never torn.

Every thread is joined with a time limit (`HANG`, a guard, never an expectation): a call
that hangs fails the test instead of blocking the run.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from context_graph.graph.events import AgentEvent, AssistantTurn, ToolCall, ToolResult, UserTurn
from context_graph.graph.nodes import Node
from context_graph.render import RenderResult
from context_graph.testing import WordCounter
from context_graph.validate.request import validate
from orchestrator import ContextManager, GuardConfig, TriggerConfig
from orchestrator.policy import Policy
from processors.base import ProcessorContext, Proposal, run_processor
from processors.truncate import ToolOutputTruncator
from tests.orchestrator.policy_keywords import make_manager

HANG = 60.0
BUDGET = 260


def run_threads(*targets: Callable[[], Any]) -> list[Any]:
    """Run each target on its own thread at once; their results, or the first error."""
    results: list[Any] = [None] * len(targets)
    errors: list[BaseException] = []
    start = threading.Barrier(len(targets))

    def runner(index: int, target: Callable[[], Any]) -> None:
        try:
            start.wait()
            results[index] = target()
        except BaseException as exc:
            errors.append(exc)

    threads = [
        threading.Thread(target=runner, args=(i, t), daemon=True) for i, t in enumerate(targets)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(HANG)
    if any(thread.is_alive() for thread in threads):
        pytest.fail(f"hung: {sum(t.is_alive() for t in threads)} thread(s) still running")
    if errors:
        raise errors[0]
    return results


class Slow:
    """A truncator that yields to its loop a few times first: a run others can overlap."""

    name = "slow_truncate"

    def __init__(self) -> None:
        self.inner = ToolOutputTruncator(max_tokens=40)

    async def propose(self, targets: Sequence[Node], ctx: ProcessorContext) -> Proposal:
        for _ in range(5):
            await anyio.sleep(0.01)
        return await run_processor(self.inner, targets, ctx)


def make(stage: Any = None, **options: Any) -> ContextManager:
    options.setdefault("budget", BUDGET)
    return make_manager(
        counter=WordCounter(),
        clock=lambda: 0.0,
        **options,
        policy=Policy(
            pipeline=[stage or Slow()],
            triggers=TriggerConfig(soft_ratio=0.5, hard_ratio=0.95),
            guards=GuardConfig(floor_tokens=0),
        ),
    )


def turn(tag: str, words: int, *, ask: bool = False) -> list[AgentEvent]:
    """One interaction unit (a call and its output of `words` words), asked for if `ask`."""
    asked: list[AgentEvent] = [UserTurn(content=f"Now look at {tag}.")] if ask else []
    return [
        *asked,
        AssistantTurn(content=f"Reading {tag}.", tool_calls=(ToolCall(id=tag, name="bash"),)),
        ToolResult(call_id=tag, content=" ".join(f"{tag}w{n}" for n in range(words))),
    ]


def overflowing(stage: Any = None) -> ContextManager:
    """A session whose request does not fit: the next render must compact."""
    manager = make(stage)
    manager.add_system("You are a careful agent.")
    manager.add_user("Find the bug in app.py and fix it.")
    for index in range(3):
        manager.ingest(turn(f"c{index}", 80))
    return manager


def assert_valid(result: RenderResult) -> None:
    assert result.tokens <= BUDGET
    assert validate(result.payload, "openai") == []


class TestBlockingCallsFromThreads:
    def test_renders_that_must_compact(self) -> None:
        """Four threads render at once: one compacts, the others wait and render the same."""
        manager = overflowing()
        results = run_threads(*[manager.render_sync] * 4)
        for result in results:
            assert_valid(result)
        assert {str(r.payload) for r in results} == {str(results[0].payload)}
        assert manager.stats().proposals_applied >= 1

    def test_ingest_and_render_at_once(self) -> None:
        """Threads that ingest and render in turn leave every unit once, each render valid."""
        manager = overflowing()

        def agent(name: str) -> list[RenderResult]:
            renders = []
            for index in range(3):
                manager.ingest(turn(f"{name}{index}", 60, ask=True))
                renders.append(manager.render_sync())
            return renders

        runs = run_threads(*(lambda n=n: agent(n) for n in "abc"))
        for result in (r for run in runs for r in run):
            assert_valid(result)
        calls = [str(n.call_id) for n in manager.raw if n.kind == "tool_result"]
        assert sorted(calls) == sorted(
            ["c0", "c1", "c2", *(f"{n}{i}" for n in "abc" for i in range(3))]
        )

    def test_a_thread_waits_for_a_background_run_of_another_loop(self) -> None:
        """While a loop's background run works, another thread's render waits for it."""
        entered, waiting = threading.Event(), threading.Event()

        class Gated(Slow):
            async def propose(self, targets: Sequence[Node], ctx: ProcessorContext) -> Proposal:
                entered.set()
                await anyio.to_thread.run_sync(waiting.wait)
                await anyio.sleep(0.05)  # let the other thread reach the manager
                return await super().propose(targets, ctx)

        manager = make(Gated(), budget=400)
        manager.add_user("Find the bug.")
        order: list[str] = []
        manager.bus.connect("compaction_done", lambda sender, **kw: order.append("compacted"))
        manager.bus.connect("render_done", lambda sender, **kw: order.append("rendered"))

        async def loop() -> None:
            async with manager:
                for index in range(3):  # crosses the soft ratio: a background run starts
                    manager.ingest(turn(f"c{index}", 80))
                while manager.stats().proposals_applied == 0:
                    await anyio.sleep(0.01)

        def other() -> RenderResult:
            entered.wait()
            waiting.set()
            return manager.render_sync()

        _, result = run_threads(lambda: anyio.run(loop), other)
        assert result.tokens <= 400
        assert order[:2] == ["compacted", "rendered"]


class TestEventLoopsInThreads:
    def test_renders_in_two_loops_of_two_threads(self) -> None:
        """`await render()` in an asyncio loop and a trio loop at once: serialized, both valid."""
        manager = overflowing()

        def agent(name: str, backend: str) -> list[RenderResult]:
            async def main() -> list[RenderResult]:
                renders = [await manager.render()]
                for index in range(3):
                    manager.ingest(turn(f"{name}{index}", 60, ask=True))
                    renders.append(await manager.render())
                return renders

            return anyio.run(main, backend=backend)

        runs = run_threads(lambda: agent("a", "asyncio"), lambda: agent("t", "trio"))
        for result in (r for run in runs for r in run):
            assert_valid(result)
        assert manager.stats().proposals_applied >= 2

    def test_a_loop_waits_without_blocking_its_other_tasks(self) -> None:
        """A task waiting for another thread's render lets the other tasks of its loop run.

        The other thread's compaction finishes only once a task of the waiting loop has
        run: a wait that blocked the loop would hang here.
        """
        entered, ticked = threading.Event(), threading.Event()

        class Held(Slow):
            async def propose(self, targets: Sequence[Node], ctx: ProcessorContext) -> Proposal:
                entered.set()
                await anyio.to_thread.run_sync(ticked.wait)
                return await super().propose(targets, ctx)

        manager = overflowing(Held())

        async def main() -> RenderResult:
            await anyio.to_thread.run_sync(entered.wait)

            async def tick() -> None:
                await anyio.sleep(0)
                ticked.set()

            async with anyio.create_task_group() as group:
                group.start_soon(tick)
                result = await manager.render()
            return result

        first, second = run_threads(manager.render_sync, lambda: anyio.run(main))
        assert first.payload == second.payload


#: A thread's plan: a turn of that many words (ingested whole), or `None` for a render.
PLANS = st.lists(st.one_of(st.integers(10, 90), st.none()), min_size=1, max_size=4)


class TestSerialEquivalence:
    @settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(plans=st.lists(PLANS, min_size=2, max_size=3))
    def test_any_interleaving_is_a_serial_run(self, plans: list[list[int | None]]) -> None:
        """Whatever the interleaving of k threads, every render is valid and the record,
        each render's size and the final request equal those of one thread doing the
        same calls in the order the bus saw them."""

        def session() -> ContextManager:
            manager = make(ToolOutputTruncator(max_tokens=40))
            manager.add_system("You are a careful agent.")
            manager.add_user("Find the bug in app.py and fix it.")
            manager.ingest(turn("c0", 90))
            return manager

        manager = session()
        log: list[tuple[str, Any]] = []  # the bus speaks under the lock: the serial order
        manager.bus.connect("node_added", lambda sender, node_id, **_: log.append(("n", node_id)))
        manager.bus.connect("render_done", lambda sender, tokens, **_: log.append(("r", tokens)))
        batches: dict[str, list[AgentEvent]] = {}

        def agent(thread: int, plan: list[int | None]) -> list[RenderResult]:
            renders = []
            for step, words in enumerate(plan):
                if words is None:
                    renders.append(manager.render_sync())
                else:
                    events = turn(f"t{thread}s{step}", words, ask=True)
                    batches[manager.ingest(events)[0]] = events
            return renders

        runs = run_threads(*(lambda t=t, p=p: agent(t, p) for t, p in enumerate(plans)))
        for result in (r for run in runs for r in run):
            assert_valid(result)
        serial = session()
        for kind, value in log:
            if kind == "n" and value in batches:
                serial.ingest(batches[value])
            elif kind == "r":
                assert serial.render_sync().tokens == value
        assert [node.id for node in serial.raw] == [node.id for node in manager.raw]
        assert serial.render_sync().payload == manager.render_sync().payload


class TestWaitingAndLeaving:
    def test_a_task_cancelled_while_it_waits_holds_nothing(self) -> None:
        """A render cancelled while it waits for another thread leaves the manager free."""
        entered, release = threading.Event(), threading.Event()

        class Held(Slow):
            async def propose(self, targets: Sequence[Node], ctx: ProcessorContext) -> Proposal:
                entered.set()
                await anyio.to_thread.run_sync(release.wait)
                return await super().propose(targets, ctx)

        manager = overflowing(Held())

        async def main() -> RenderResult:
            await anyio.to_thread.run_sync(entered.wait)
            with anyio.CancelScope() as scope:
                async with anyio.create_task_group() as group:
                    group.start_soon(manager.render)
                    await anyio.sleep(0.05)  # the render is waiting for the other thread
                    scope.cancel()
            release.set()
            return await manager.render()

        first, second = run_threads(manager.render_sync, lambda: anyio.run(main))
        assert first.payload == second.payload
        assert_valid(run_threads(manager.render_sync)[0])

    def test_leaving_async_with_from_another_thread_is_refused(self) -> None:
        """`aclose()` in another thread than the loop that entered is refused; nothing changes."""
        entered, left = threading.Event(), threading.Event()
        manager = overflowing()

        async def holder() -> None:
            async with manager:
                entered.set()
                await anyio.to_thread.run_sync(left.wait)

        async def other() -> None:
            await anyio.to_thread.run_sync(entered.wait)
            try:
                with pytest.raises(RuntimeError, match="event loop that entered it"):
                    await manager.aclose()
            finally:
                left.set()

        run_threads(lambda: anyio.run(holder), lambda: anyio.run(other))
        assert_valid(manager.render_sync())
