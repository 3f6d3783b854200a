"""Background compaction: triggers evaluated on ingest, slow pipelines that run while the
agent goes on ingesting and rendering, stale results, time limits and a clean close.

Every scenario runs under asyncio and under trio through `anyio.run`, so both backends
execute the same code (pytest-asyncio's auto mode would claim `async def` tests for
asyncio only).
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import anyio
import pytest

from context_graph.errors import ConfigurationError
from context_graph.graph.nodes import Node
from context_graph.testing import WordCounter
from context_graph.validate.request import validate
from orchestrator import ContextManager, GuardConfig, Recorder, TriggerConfig
from orchestrator.policy import Policy, get_policy
from orchestrator.policy.resolved import resolve_options
from processors.base import ProcessorContext, Proposal, run_processor
from processors.truncate import ToolOutputTruncator
from tests.orchestrator.policy_keywords import make_manager

BACKENDS = ["asyncio", "trio"]


def run(backend: str, main: Callable[[], Awaitable[None]]) -> None:
    anyio.run(main, backend=backend)


class Gated:
    """A truncator that waits at a gate before proposing: a slow, model-like stage."""

    name = "gated_truncate"

    def __init__(self, *, forever: bool = False) -> None:
        self.inner = ToolOutputTruncator(max_tokens=40)
        self.forever = forever
        self.started = 0
        self.gate: anyio.Event | None = None
        self.entered: anyio.Event | None = None

    async def propose(self, targets: Sequence[Node], ctx: ProcessorContext) -> Proposal:
        self.started += 1
        if self.entered is not None:
            self.entered.set()
        if self.forever:
            await anyio.sleep(math.inf)
        if self.gate is not None:
            await self.gate.wait()
        return await run_processor(self.inner, targets, ctx)


def _manager(stage: Any, **options: Any) -> ContextManager:
    options.setdefault("budget", 300)
    options.setdefault("triggers", TriggerConfig(soft_ratio=0.5, hard_ratio=0.95))
    # These sessions are tiny; the floor that spares the prompt cache would hold them.
    options.setdefault("guards", GuardConfig(floor_tokens=0))
    return make_manager(counter=WordCounter(), **options, policy=Policy(pipeline=[stage]))


def _session(manager: ContextManager, results: int = 3, words: int = 60) -> None:
    """A coding session whose tool outputs push the view over the soft ratio.

    With the defaults the view holds 208 words and renders to 271 tokens: over half of
    the default budget of 300 (the soft ratio of `_manager`), yet the request fits.
    """
    manager.add_system("You are a careful agent.")
    manager.add_user("Find the bug in app.py and fix it.")
    for index in range(results):
        manager.add_assistant(
            f"Reading part {index}.", [{"id": f"c{index}", "name": "bash", "arguments": {}}]
        )
        manager.add_tool_result(f"c{index}", " ".join(f"line{index}w{n}" for n in range(words)))


def _recording(manager: ContextManager) -> Recorder:
    return Recorder(manager.bus).__enter__()


class TestTriggersOnIngest:
    def test_ingest_fires_the_trigger_before_any_render(self) -> None:
        """Crossing the soft ratio is reported while ingesting, not at the next render."""
        manager = _manager(ToolOutputTruncator(max_tokens=40))
        recorder = _recording(manager)
        _session(manager)
        fired = [payload["firing"].name for payload in recorder.of("trigger_fired")]
        assert fired == ["budget_soft"]
        assert recorder.of("render_done") == []

    def test_ingest_below_the_thresholds_fires_nothing(self) -> None:
        manager = _manager(ToolOutputTruncator(max_tokens=40), budget=100_000)
        recorder = _recording(manager)
        _session(manager)
        assert recorder.of("trigger_fired") == []

    def test_without_background_the_next_render_runs_the_pending_compaction(self) -> None:
        """Firings seen on ingest are not lost: the next render compacts in the foreground."""
        manager = _manager(ToolOutputTruncator(max_tokens=40))
        recorder = _recording(manager)
        _session(manager)
        before = manager.working.total_tokens
        result = manager.render_sync()
        done = recorder.of("compaction_done")
        assert [(d["background"], d["timed_out"]) for d in done] == [(False, False)]
        assert done[0]["run"].applied >= 1
        assert manager.working.total_tokens < before
        assert validate(result.payload, "openai") == []

    def test_mark_boundary_fires_at_once(self) -> None:
        manager = _manager(ToolOutputTruncator(max_tokens=40), budget=100_000)
        recorder = _recording(manager)
        _session(manager, results=1)
        manager.mark_boundary("bug fixed")
        assert [p["firing"].name for p in recorder.of("trigger_fired")] == ["boundary"]


@pytest.mark.parametrize("backend", BACKENDS)
class TestBackgroundCompaction:
    def test_agent_keeps_working_while_a_slow_stage_runs(self, backend: str) -> None:
        """Ingest and render go on during a slow background run; its result then lands."""
        stage = Gated()
        manager = _manager(stage)
        recorder = _recording(manager)

        async def main() -> None:
            stage.gate, stage.entered = anyio.Event(), anyio.Event()
            async with manager:
                _session(manager)
                await stage.entered.wait()  # the background run is inside the slow stage
                manager.add_assistant("Now the fix.", [{"id": "late", "name": "bash"}])
                manager.add_tool_result("late", "ok")
                during = await manager.render()  # fits: no waiting for the slow stage
                assert recorder.of("proposal_applied") == []
                assert "late" in str(during.payload)
                stage.gate.set()
                with anyio.fail_after(5):
                    while not recorder.of("compaction_done"):
                        await anyio.sleep(0.01)
                after = await manager.render()
                assert after.tokens < during.tokens
                assert "late" in str(after.payload)  # the newer nodes survived the apply
                assert validate(after.payload, "openai") == []

        run(backend, main)
        done = recorder.of("compaction_done")
        assert [(d["background"], d["timed_out"]) for d in done] == [(True, False)]
        assert done[0]["run"].applied == 1

    def test_stale_result_is_rejected_not_applied_over_newer_state(self, backend: str) -> None:
        """A target edited while the background run worked makes its proposal stale."""
        stage = Gated()
        manager = _manager(stage)
        recorder = _recording(manager)

        async def main() -> None:
            stage.gate, stage.entered = anyio.Event(), anyio.Event()
            async with manager:
                _session(manager)
                await stage.entered.wait()
                # Someone edits the same outputs first (here: directly on the working graph).
                snapshot = manager.working.snapshot()
                targets = [
                    n
                    for n in (snapshot[i] for i in snapshot.current_ids())
                    if n.kind == "tool_result"
                ]
                ctx = ProcessorContext(graph=snapshot, tokens=manager.working.token_cache)
                first = await run_processor(ToolOutputTruncator(max_tokens=32), targets, ctx)
                manager.working.apply(first)
                edited = manager.working.view.transcript()
                stage.gate.set()
                with anyio.fail_after(5):
                    while not recorder.of("compaction_done"):
                        await anyio.sleep(0.01)
                assert manager.working.view.transcript() == edited

        run(backend, main)
        rejected = recorder.of("proposal_rejected")
        assert len(rejected) == 1
        assert "stale" in rejected[0]["reason"]
        assert len(manager.working.audit()) == 1  # only the direct edit

    def test_time_limit_cancels_the_run_and_applies_nothing(self, backend: str) -> None:
        stage = Gated(forever=True)
        manager = _manager(stage, background_timeout=0.05)
        recorder = _recording(manager)

        async def main() -> None:
            async with manager:
                _session(manager)
                with anyio.fail_after(5):
                    while not recorder.of("compaction_done"):
                        await anyio.sleep(0.01)
                result = await manager.render()
                assert validate(result.payload, "openai") == []

        run(backend, main)
        done = recorder.of("compaction_done")
        assert done[0]["background"] is True
        assert done[0]["timed_out"] is True
        assert manager.working.audit() == ()

    def test_close_cancels_a_run_in_progress(self, backend: str) -> None:
        stage = Gated(forever=True)
        manager = _manager(stage, background_timeout=None)
        recorder = _recording(manager)

        async def main() -> None:
            stage.entered = anyio.Event()
            with anyio.fail_after(5):
                async with manager:
                    _session(manager)
                    await stage.entered.wait()
            # Closed: no task is left, and the manager still renders in the foreground.
            stage.forever = False
            result = await manager.render()
            assert validate(result.payload, "openai") == []

        run(backend, main)
        assert stage.started >= 2  # once in the background (cancelled), once in the render
        cancelled = recorder.of("compaction_done")[0]
        assert (cancelled["background"], cancelled["cancelled"]) == (True, True)
        assert cancelled["run"].applied == 0

    def test_a_request_that_does_not_fit_waits_for_the_run_in_progress(self, backend: str) -> None:
        """Overflow cannot be sent as is: render waits, and the result fits."""
        stage = Gated()
        manager = _manager(
            stage, budget=150, triggers=TriggerConfig(soft_ratio=0.3, hard_ratio=0.95)
        )
        order: list[str] = []

        async def release() -> None:
            assert stage.entered is not None and stage.gate is not None
            await stage.entered.wait()
            order.append("released")
            stage.gate.set()

        async def main() -> None:
            stage.gate, stage.entered = anyio.Event(), anyio.Event()
            async with manager, anyio.create_task_group() as group:
                group.start_soon(release)
                _session(manager, results=2, words=50)
                result = await manager.render()
                order.append("rendered")
                assert result.tokens <= 150
                assert validate(result.payload, "openai") == []

        run(backend, main)
        assert order == ["released", "rendered"]

    def test_a_failure_in_the_background_is_raised_by_the_next_render(
        self, backend: str, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        manager = _manager(ToolOutputTruncator(max_tokens=40))

        def broken(*args: object, **kwargs: object) -> None:
            raise RuntimeError("disk on fire")

        monkeypatch.setattr(manager.working, "apply", broken)

        async def main() -> None:
            async with manager:
                _session(manager)
                await anyio.sleep(0.05)
                with pytest.raises(RuntimeError, match="disk on fire"):
                    await manager.render()

        run(backend, main)

    def test_entering_twice_is_refused(self, backend: str) -> None:
        manager = _manager(ToolOutputTruncator(max_tokens=40))

        async def main() -> None:
            async with manager:
                with pytest.raises(RuntimeError, match="already entered"):
                    await manager.__aenter__()

        run(backend, main)


class TestOptions:
    @pytest.mark.parametrize("value", [0, -1, "soon", True])
    def test_bad_background_timeout_is_refused(self, value: object) -> None:
        with pytest.raises(ConfigurationError, match="background_timeout"):
            ContextManager(policy=Policy(background_timeout=value))  # type: ignore[arg-type]

    def test_profile_by_name_sets_pipeline_and_triggers(self) -> None:

        profile = get_policy("chat")
        options = ContextManager(policy="chat")._options
        built, _ = profile.build_pipelines()
        assert built is not None
        assert [type(p) for p in options.default_stages] == [type(p) for p in built]
        assert options.triggers == profile.triggers
        assert options.compact_to == profile.compact_to

    def test_explicit_options_override_the_profile(self) -> None:
        stage = ToolOutputTruncator(max_tokens=40)
        options = resolve_options(get_policy("coding").replace(pipeline=[stage], compact_to=0.5))
        assert options.default_stages == (stage,)
        assert options.compact_to == 0.5

    def test_profile_from_a_toml_file(self, tmp_path: Any) -> None:
        path = tmp_path / "mine.toml"
        path.write_text(
            'name = "mine"\ncompact_to = 0.6\n[[stages]]\nprocessor = "truncate"\n',
            encoding="utf-8",
        )
        options = ContextManager(policy=str(path))._options
        assert options.compact_to == 0.6
        assert [type(p) for p in options.default_stages] == [ToolOutputTruncator]

    @pytest.mark.parametrize("profile", ["nonesuch", 42, ["coding"]])
    def test_bad_profile_is_refused(self, profile: object) -> None:
        with pytest.raises(ConfigurationError, match="policy"):
            ContextManager(policy=profile)  # type: ignore[arg-type]


class TestRedactSecrets:
    KEY = "AKIA" + "Q3EGRKZ7VN5XWJ2P"  # shaped like an AWS access key id, made up
    TOKEN = "ghp_" + "x7Kq2LmN9pR4sT6vW8yZ1aB3cD5eF7gH9iJ0"  # shaped like a GitHub token

    def _feed(self, manager: ContextManager) -> None:
        manager.add_system("You are a careful agent.")
        manager.add_user(f"Deploy with key {self.KEY}.")
        manager.add_assistant("Reading the env.", [{"id": "c1", "name": "bash"}])
        manager.add_tool_result("c1", f"GITHUB_TOKEN={self.TOKEN}\nDEBUG=1")

    def test_secrets_never_reach_the_request_and_the_record_keeps_them(self) -> None:
        manager = ContextManager(policy=Policy(redact_secrets=True))
        self._feed(manager)
        text = str(manager.render_sync().payload)
        assert self.KEY not in text and self.TOKEN not in text
        assert "DEBUG=1" in text
        raw = " ".join(node.text for node in manager.raw)
        assert self.KEY in raw and self.TOKEN in raw
        redacted = [e for e in manager.working.audit() if e.processor == "redact"]
        assert redacted
        originals = manager.expand(redacted[0].added[0])
        assert any(self.KEY in n.text or self.TOKEN in n.text for n in originals)

    def test_the_summarizer_never_sees_a_secret(self) -> None:
        from context_graph.testing import ScriptedSummarizer
        from processors import HistorySummarizer

        summarizer = ScriptedSummarizer(["The agent read the env."] * 4)
        manager = ContextManager(
            policy=Policy(
                redact_secrets=True, summarizer=summarizer, pipeline=[HistorySummarizer()]
            )
        )
        self._feed(manager)
        for step in range(3):
            manager.add_assistant(f"Step {step}.", [{"id": f"s{step}", "name": "bash"}])
            manager.add_tool_result(f"s{step}", "ok " * 50)
        anyio.run(manager.compact)
        given = " ".join(node.text for nodes, _, _ in summarizer.calls for node in nodes)
        assert summarizer.calls and "GITHUB_TOKEN" in given
        assert self.TOKEN not in given

    def test_off_by_default(self) -> None:
        manager = ContextManager(policy=Policy())
        self._feed(manager)
        assert self.KEY in str(manager.render_sync().payload)

    @pytest.mark.parametrize("value", ["yes", 1, None])
    def test_bad_value_is_refused(self, value: object) -> None:
        with pytest.raises(ConfigurationError, match="redact_secrets"):
            ContextManager(policy=Policy(redact_secrets=value))  # type: ignore[arg-type]


class TestBlockingRender:
    def test_nothing_due_renders_without_an_event_loop(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """The common call (nothing to compact) skips starting an event loop."""
        manager = _manager(ToolOutputTruncator(max_tokens=40), budget=100_000)
        _session(manager, results=1)
        expected = manager.render_sync().payload

        def no_loop(*args: object, **kwargs: object) -> None:
            raise AssertionError("an event loop was started")

        monkeypatch.setattr(anyio, "run", no_loop)
        assert manager.render_sync().payload == expected

    def test_due_compaction_still_runs(self) -> None:
        """With a trigger pending, the blocking render compacts as the async one does."""
        manager = _manager(ToolOutputTruncator(max_tokens=40))
        _session(manager)
        before = manager.working.total_tokens
        result = manager.render_sync()
        assert manager.working.total_tokens < before
        assert validate(result.payload, "openai") == []
