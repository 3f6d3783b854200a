"""Secrets that arrive while a compaction run is in flight never reach a processor.

With `redact_secrets=True` every view a processor is handed is redacted first
(`StageSettings.snapshot`), not only the view at a render's start: a summarizer held open
by a gate while the agent ingests credentials, the repeat pass of the summarize stage, a
render that waits for a busy run and then compacts itself, and every later stage of a
pipeline all see placeholders. Every scenario runs under asyncio and under trio through
`anyio.run`.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Sequence

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from context_graph.graph.nodes import Node
from context_graph.testing import WordCounter
from orchestrator import ContextManager, GuardConfig, Recorder, TriggerConfig
from orchestrator.policy import Policy
from orchestrator.working import WorkingView
from processors.base import ProcessorContext, Proposal, run_processor
from processors.summarize import HistorySummarizer
from processors.truncate import ToolOutputTruncator

BACKENDS = ["asyncio", "trio"]

# Shaped like an OpenAI project key and an AWS access key id; both made up.
OPENAI_KEY = "sk-proj-" + "Qx7Lm2Np9Rt4Sv6Wy8Za1Bc3De5Fg7Hi9Jk0Lm2Np4Qr6St8Uv0Wx2Yz4Ab6Cd8Ef0Gh"
AWS_KEY = "AKIA" + "Q3EGRKZ7VN5XWJ2P"
SECRETS = (OPENAI_KEY, AWS_KEY)


def run(backend: str, main: Callable[[], Awaitable[None]]) -> None:
    anyio.run(main, backend=backend)


def _dump(nodes: Sequence[Node]) -> str:
    """Every field of `nodes` as JSON: text, arguments, meta, all that a model could read."""
    return json.dumps([node.model_dump(mode="json") for node in nodes])


def _view_nodes(view: WorkingView) -> list[Node]:
    return [view[node_id] for node_id in view.current_ids()]


def _leaks(text: str) -> list[str]:
    return [secret for secret in SECRETS if secret in text]


class GateSummarizer:
    """A model summarizer whose first call waits at a gate; it records what it was given."""

    def __init__(self, *, hold: bool = True) -> None:
        self.hold = hold
        self.gate: anyio.Event | None = None
        self.entered: anyio.Event | None = None
        self.given: list[str] = []

    async def summarize(
        self, nodes: Sequence[Node], *, previous: str | None, instructions: str | None
    ) -> str:
        self.given.append(_dump(nodes) + f"\n{previous}\n{instructions}")
        if self.hold and len(self.given) == 1:
            assert self.gate is not None and self.entered is not None
            self.entered.set()
            await self.gate.wait()
        return "The agent read the sources and ran the tests."


class GatedTruncator:
    """A truncator that waits at a gate before proposing: a slow, model-like stage."""

    name = "gated_truncate"

    def __init__(self) -> None:
        self.gate: anyio.Event | None = None
        self.entered: anyio.Event | None = None

    async def propose(self, targets: Sequence[Node], ctx: ProcessorContext) -> Proposal:
        assert self.gate is not None and self.entered is not None
        self.entered.set()
        await self.gate.wait()
        return await run_processor(ToolOutputTruncator(max_tokens=40), targets, ctx)


class Probe:
    """A stage that records everything it can read (targets and the whole view)."""

    name = "probe"

    def __init__(self, before: Callable[[], None] | None = None) -> None:
        self.before = before
        self.seen: list[str] = []

    async def propose(self, targets: Sequence[Node], ctx: ProcessorContext) -> Proposal:
        assert isinstance(ctx.graph, WorkingView)
        self.seen.append(_dump(targets) + _dump(_view_nodes(ctx.graph)))
        if self.before is not None:
            self.before()  # what arrives while this stage awaits its model
        await anyio.sleep(0)
        return Proposal(processor=self.name, edits=(), base_version=ctx.graph.version)


def _steps(manager: ContextManager, prefix: str, count: int = 4, words: int = 80) -> None:
    for index in range(count):
        call = f"{prefix}{index}"
        manager.add_assistant(f"Step {call}.", [{"id": call, "name": "bash", "arguments": {}}])
        manager.add_tool_result(call, " ".join(f"{call}w{n}" for n in range(words)))


def _session(manager: ContextManager) -> None:
    """Two requests, each with a few steps: a span to summarize, then the tool loop's."""
    manager.add_system("You are a careful agent.")
    manager.add_user("Fix the bug in app.py.")
    _steps(manager, "a")
    manager.add_user("Now fix io.py as well.")
    _steps(manager, "b")


def _secrets(manager: ContextManager, count: int = 4) -> None:
    """Steps whose outputs and arguments carry credentials, then two plain steps after."""
    for index in range(count):
        call = f"env{index}"
        manager.add_assistant(
            f"Reading the env ({index}).",
            [{"id": call, "name": "bash", "arguments": {"cmd": f"export KEY={OPENAI_KEY}"}}],
        )
        manager.add_tool_result(
            call, f"OPENAI_API_KEY={OPENAI_KEY}\nAWS_ACCESS_KEY_ID={AWS_KEY}\n" + "pad " * 80
        )
    _steps(manager, "z", count=2, words=2)


@pytest.mark.parametrize("backend", BACKENDS)
class TestSummarizerHeldOpen:
    def test_the_repeat_pass_never_sees_secrets_that_arrived_during_the_first(
        self, backend: str
    ) -> None:
        """Secrets ingested while the first summary is awaited reach the second redacted."""
        summarizer = GateSummarizer()
        manager = ContextManager(
            counter=WordCounter(),
            budget=600,
            policy=Policy(
                redact_secrets=True,
                summarizer=summarizer,
                pipeline=[HistorySummarizer()],
                guards=GuardConfig(floor_tokens=0),
            ),
        )
        _session(manager)

        async def arrive() -> None:
            assert summarizer.entered is not None and summarizer.gate is not None
            await summarizer.entered.wait()
            _secrets(manager)
            summarizer.gate.set()

        async def main() -> None:
            summarizer.gate, summarizer.entered = anyio.Event(), anyio.Event()
            async with anyio.create_task_group() as group:
                group.start_soon(arrive)
                result = await manager.render()
            assert _leaks(json.dumps(result.payload)) == []

        run(backend, main)
        assert len(summarizer.given) >= 2  # the repeat pass ran
        later = "".join(summarizer.given[1:])
        assert "OPENAI_API_KEY=" in later  # it was given the new outputs...
        assert _leaks(later) == []  # ...with placeholders in place of the secrets
        assert _leaks("".join(summarizer.given)) == []

    def test_a_render_waiting_for_a_busy_run_compacts_a_redacted_view(self, backend: str) -> None:
        """Secrets that arrive while a render waits for the run slot never reach its run."""
        summarizer = GateSummarizer(hold=False)
        slow = GatedTruncator()
        manager = ContextManager(
            counter=WordCounter(),
            budget=2_000,
            policy=Policy(
                redact_secrets=True,
                summarizer=summarizer,
                pipeline=[HistorySummarizer()],
                pipelines={"slow": [slow]},
                # The soft level runs only the slow stage, in the background; the render
                # that does not fit runs the default pipeline (the summary) itself. No hard
                # level: nothing else fires, so no second background run races the render.
                triggers=TriggerConfig(
                    soft_ratio=0.3, hard_ratio=None, pipelines={"budget_soft": "slow"}
                ),
                guards=GuardConfig(floor_tokens=0),
            ),
        )
        order: list[str] = []

        async def arrive() -> None:
            assert slow.gate is not None
            await anyio.wait_all_tasks_blocked()  # the render waits for the run slot
            _secrets(manager)
            order.append("secrets")
            slow.gate.set()

        async def main() -> None:
            slow.gate, slow.entered = anyio.Event(), anyio.Event()
            async with manager:
                _session(manager)
                await slow.entered.wait()  # the background run holds the slot
                async with anyio.create_task_group() as group:
                    group.start_soon(arrive)
                    result = await manager.render(budget=500)
                    order.append("rendered")
                assert result.tokens <= 500
                assert _leaks(json.dumps(result.payload)) == []

        run(backend, main)
        assert order == ["secrets", "rendered"]
        given = "".join(summarizer.given)
        assert "OPENAI_API_KEY=" in given
        assert _leaks(given) == []

    def test_a_later_stage_of_the_same_run_sees_no_secret(self, backend: str) -> None:
        """Secrets ingested while a background stage is held are redacted for the next."""
        slow = GatedTruncator()
        probe = Probe()
        manager = ContextManager(
            counter=WordCounter(),
            budget=2_000,
            policy=Policy(
                redact_secrets=True,
                pipeline=[slow, probe],
                triggers=TriggerConfig(soft_ratio=0.3, hard_ratio=0.95),
                compact_to=0.1,  # the run goes on to the probe after the slow stage
                guards=GuardConfig(floor_tokens=0),
            ),
        )
        recorder = Recorder(manager.bus).__enter__()

        async def main() -> None:
            slow.gate, slow.entered = anyio.Event(), anyio.Event()
            async with manager:
                _session(manager)
                await slow.entered.wait()
                _secrets(manager)
                slow.gate.set()
                with anyio.fail_after(5):
                    while not recorder.of("compaction_done"):
                        await anyio.sleep(0.01)

        run(backend, main)
        assert [d["background"] for d in recorder.of("compaction_done")] == [True]
        assert probe.seen
        assert "OPENAI_API_KEY=" in probe.seen[0]
        assert _leaks("".join(probe.seen)) == []


@pytest.mark.parametrize("backend", BACKENDS)
@settings(max_examples=20)
@given(plan=st.lists(st.booleans(), min_size=1, max_size=4))
def test_no_stage_of_a_compaction_ever_reads_a_secret(backend: str, plan: list[bool]) -> None:
    """Whichever stages secrets arrive during, every later stage reads only placeholders."""

    def arrival(secret: bool, index: int) -> Callable[[], None]:
        def arrive() -> None:
            if secret:
                _secrets(manager, count=1)
            else:
                _steps(manager, f"p{index}_", count=1, words=3)

        return arrive

    probes = [Probe(arrival(secret, index)) for index, secret in enumerate(plan)]
    probes.append(Probe())  # the stage after the last arrival
    manager = ContextManager(
        counter=WordCounter(), policy=Policy(redact_secrets=True, pipeline=probes)
    )
    _session(manager)

    async def main() -> None:
        await manager.compact()
        result = await manager.render()
        assert _leaks(json.dumps(result.payload)) == []

    run(backend, main)
    seen = [text for probe in probes for text in probe.seen]
    assert len(seen) == len(probes)
    assert _leaks("".join(seen)) == []
    assert any(secret in node.text for node in manager.raw for secret in SECRETS) == any(plan)
