"""`compaction_timeout`: a render does not wait on a hung summarizer.

Compaction a render (or `compact()`) runs in the foreground is cancelled after
`compaction_timeout` seconds, like a background run after `background_timeout`: the stage
in progress applies nothing, the request is rendered from what fits (or the render
raises `BudgetExceededError` when even the floor does not fit), and the timeout is
reported on the bus (`compaction_timed_out`, `compaction_done(timed_out=True)`), on the
run (`PipelineRun.timed_out`) and in `stats().last_render_timed_out`.

The summarizer here blocks for ever, so a render that returns at all shows the limit
worked; no test measures time. Its stage's own call limit (`HistorySummarizer(timeout=30)`)
only keeps a regression from hanging the suite: it would then fall back to the extractive
brief, which the assertions refuse. Every async scenario runs under asyncio and trio.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import anyio
import pytest

from context_graph.errors import ConfigurationError
from context_graph.graph.nodes import Node
from context_graph.testing import WordCounter
from context_graph.validate.request import validate
from orchestrator import ContextManager, GuardConfig, Recorder
from orchestrator.bus import SIGNALS
from orchestrator.policy import Policy
from processors.base import ProcessorContext, Proposal
from processors.summarize import HistorySummarizer
from processors.truncate import ToolOutputTruncator
from tests.orchestrator.policy_keywords import make_manager

BACKENDS = ["asyncio", "trio"]
LIMIT = 0.2


def run(backend: str, main: Callable[[], Awaitable[None]]) -> None:
    anyio.run(main, backend=backend)


class HungSummarizer:
    """A model summarizer that never answers while `hung` (it records each call)."""

    def __init__(self) -> None:
        self.hung = True
        self.calls = 0

    async def summarize(
        self, nodes: Sequence[Node], *, previous: str | None, instructions: str | None
    ) -> str:
        self.calls += 1
        if self.hung:
            await anyio.sleep_forever()
        return "The agent read the sources of app.py and ran the tests."


def _manager(summarizer: HungSummarizer, **options: Any) -> ContextManager:
    options.setdefault("budget", 400)
    options.setdefault("compaction_timeout", LIMIT)
    options.setdefault("pipeline", [HistorySummarizer(timeout=30)])
    return make_manager(
        counter=WordCounter(),
        **options,
        policy=Policy(summarizer=summarizer, guards=GuardConfig(floor_tokens=0)),
    )


def _session(manager: ContextManager, *, latest: str = "Now fix io.py as well.") -> None:
    """Old steps worth summarizing, then a new request with two short steps."""
    manager.add_system("You are a careful agent.")
    manager.add_user("Fix the bug in app.py.")
    for index in range(4):
        call = f"a{index}"
        manager.add_assistant(f"Step {call}.", [{"id": call, "name": "bash", "arguments": {}}])
        manager.add_tool_result(call, " ".join(f"{call}w{n}" for n in range(80)))
    manager.add_user(latest)
    for index in range(2):
        call = f"b{index}"
        manager.add_assistant(f"Step {call}.", [{"id": call, "name": "bash", "arguments": {}}])
        manager.add_tool_result(call, "ok")


def _timeouts(recorder: Recorder) -> list[tuple[bool, bool, float | None]]:
    return [
        (e["background"], e["floor"], e["timeout"]) for e in recorder.of("compaction_timed_out")
    ]


def _by(manager: ContextManager, processor: str) -> list[str]:
    return [entry.processor for entry in manager.working.audit() if entry.processor == processor]


@pytest.mark.parametrize("backend", BACKENDS)
class TestRenderGoesOn:
    def test_a_request_that_does_not_fit_is_rendered_without_the_summary(
        self, backend: str
    ) -> None:
        """The hung summary is cancelled; the request drops old units to fit instead."""
        summarizer = HungSummarizer()
        manager = _manager(summarizer)
        recorder = Recorder(manager.bus).__enter__()
        _session(manager)
        before = manager.working.view.transcript()
        rendered: list[Any] = []

        async def main() -> None:
            rendered.append(await manager.render())

        run(backend, main)
        (result,) = rendered
        assert summarizer.calls == 1
        assert result.tokens <= 400 and result.dropped
        assert validate(result.payload, "openai") == []
        assert _timeouts(recorder) == [(False, False, LIMIT)]
        (done,) = recorder.of("compaction_done")
        assert (done["background"], done["timed_out"], done["cancelled"]) == (False, True, False)
        assert done["run"].timed_out and done["run"].applied == 0
        assert manager.working.audit() == ()  # the summarizer's run applied nothing
        assert manager.working.view.transcript() == before
        assert manager.stats().last_render_timed_out is True
        assert recorder.names()[-1] == "render_done"

    def test_a_due_compaction_that_hangs_leaves_the_request_as_it_was(self, backend: str) -> None:
        """A trigger's run in the foreground is cut; the request renders unchanged."""
        summarizer = HungSummarizer()
        manager = _manager(summarizer, budget=100_000)
        recorder = Recorder(manager.bus).__enter__()
        _session(manager)
        manager.mark_boundary("io.py fixed")  # due, though the request fits
        expected = manager.working.view.transcript()
        rendered: list[Any] = []

        async def main() -> None:
            rendered.append(await manager.render())

        run(backend, main)
        assert [p["firing"].name for p in recorder.of("trigger_fired")] == ["boundary"]
        assert summarizer.calls == 1
        assert _timeouts(recorder) == [(False, False, LIMIT)]
        assert manager.working.audit() == ()
        assert manager.working.view.transcript() == expected
        assert rendered[0].dropped == ()
        assert manager.stats().last_render_timed_out is True

    def test_finished_stages_stay_applied_and_counted(self, backend: str) -> None:
        """A stage done before the limit struck stays, and the figures count it."""
        summarizer = HungSummarizer()
        manager = _manager(
            summarizer,
            pipeline=[ToolOutputTruncator(max_tokens=40), HistorySummarizer(timeout=30)],
        )
        recorder = Recorder(manager.bus).__enter__()
        _session(manager)

        async def main() -> None:
            await manager.render()

        run(backend, main)
        (done,) = recorder.of("compaction_done")
        audit = manager.working.audit()
        assert audit and {entry.processor for entry in audit} == {"truncate"}
        assert done["timed_out"] and done["run"].applied == len(audit)
        assert done["run"].stages[-1] == "summarize"  # the stage that was cut
        assert manager.stats().proposals_applied == len(audit)

    def test_the_floor_that_still_does_not_fit_is_sent_degraded(self, backend: str) -> None:
        """Past the timeout, a latest turn larger than the budget is cut in the request."""
        summarizer = HungSummarizer()
        manager = _manager(summarizer)
        recorder = Recorder(manager.bus).__enter__()
        _session(manager, latest=" ".join(f"u{n}" for n in range(500)))

        async def main() -> None:
            result = await manager.render()
            assert result.tokens <= 400

        run(backend, main)
        assert _timeouts(recorder) == [(False, False, LIMIT)]
        assert _by(manager, "summarize") == []
        assert len(recorder.of("overflow_fallback")) == len(recorder.of("render_done")) == 1

    def test_a_hung_floor_truncation_is_cut_too(
        self, backend: str, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """The floor's truncation runs under the same limit, and is reported as the floor."""

        async def hang(self: object, targets: Sequence[Node], ctx: ProcessorContext) -> Proposal:
            await anyio.sleep_forever()
            raise AssertionError("unreachable")

        monkeypatch.setattr(ToolOutputTruncator, "propose", hang)
        summarizer = HungSummarizer()
        manager = _manager(summarizer)
        recorder = Recorder(manager.bus).__enter__()
        _session(manager)
        for index in range(2):  # outputs in the floor: only truncating them would fit
            call = f"c{index}"
            manager.add_assistant("More.", [{"id": call, "name": "bash", "arguments": {}}])
            manager.add_tool_result(call, " ".join(f"{call}w{n}" for n in range(400)))

        async def main() -> None:
            # Nothing was truncated in time: the request goes degraded (the outputs
            # cut in the request alone, the turn's earlier step left out), not refused.
            result = await manager.render()
            assert result.tokens <= 400

        run(backend, main)
        assert _timeouts(recorder) == [(False, False, LIMIT), (False, True, LIMIT)]
        assert manager.working.audit() == ()
        assert len(recorder.of("overflow_fallback")) == 1

    def test_manual_compact_is_cut_and_says_so(self, backend: str) -> None:
        summarizer = HungSummarizer()
        manager = _manager(summarizer, budget=None)
        recorder = Recorder(manager.bus).__enter__()
        _session(manager)
        runs: list[Any] = []

        async def main() -> None:
            runs.append(await manager.compact())

        run(backend, main)
        assert runs[0].timed_out and runs[0].applied == 0
        assert _timeouts(recorder) == [(False, False, LIMIT)]
        assert manager.working.audit() == ()

    def test_a_background_run_reports_its_own_limit(self, backend: str) -> None:
        """`compaction_timed_out` covers the background limit too, with its value."""
        summarizer = HungSummarizer()
        manager = _manager(
            summarizer, budget=100_000, background_timeout=0.05, compaction_timeout=None
        )
        recorder = Recorder(manager.bus).__enter__()

        async def main() -> None:
            async with manager:
                _session(manager)
                manager.mark_boundary("io.py fixed")  # runs in the background
                with anyio.fail_after(30):
                    while not recorder.of("compaction_done"):
                        await anyio.sleep(0.01)

        run(backend, main)
        assert _timeouts(recorder) == [(True, False, 0.05)]
        assert manager.working.audit() == ()


class TestBlockingRender:
    def test_render_sync_returns_past_a_hung_summarizer(self) -> None:
        """The blocking twin is bounded the same way."""
        summarizer = HungSummarizer()
        manager = _manager(summarizer)
        recorder = Recorder(manager.bus).__enter__()
        _session(manager)
        result = manager.render_sync()
        assert summarizer.calls == 1
        assert result.tokens <= 400 and result.dropped
        assert _timeouts(recorder) == [(False, False, LIMIT)]
        assert manager.working.audit() == ()
        assert manager.stats().last_render_timed_out is True

    def test_the_next_render_compacts_once_the_summarizer_answers(self) -> None:
        """The flag is per render: a later render that completes its compaction clears it."""
        summarizer = HungSummarizer()
        manager = _manager(summarizer)
        _session(manager)
        manager.render_sync()
        summarizer.hung = False
        result = manager.render_sync()
        assert _by(manager, "summarize") == ["summarize"]
        assert result.tokens <= 400
        assert manager.stats().last_render_timed_out is False


class TestOptions:
    @pytest.mark.parametrize("value", [0, -1, "soon", True, float("nan")])
    def test_bad_compaction_timeout_is_refused(self, value: object) -> None:
        with pytest.raises(ConfigurationError, match="compaction_timeout"):
            ContextManager(policy=Policy(compaction_timeout=value))  # type: ignore[arg-type]

    @pytest.mark.parametrize("value", [None, 1, 0.5])
    def test_good_values_are_taken(self, value: float | None) -> None:
        ContextManager(policy=Policy(compaction_timeout=value))

    def test_the_signal_is_on_the_bus(self) -> None:
        assert "compaction_timed_out" in SIGNALS
        assert ContextManager(policy=Policy()).stats().last_render_timed_out is False
