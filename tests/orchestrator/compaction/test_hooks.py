"""Compaction hooks (a memory flush, instructions, deferral), auto-continue and replay."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from context_graph.errors import ConfigurationError, HookError
from context_graph.testing import ScriptedSummarizer, WordCounter
from context_graph.validate.request import validate
from orchestrator.bus import Recorder
from orchestrator.compaction.continuation import AUTO_CONTINUE_TEXT
from orchestrator.compaction.hooks import PostCompaction, PreCompaction
from orchestrator.compaction.triggers import TriggerConfig
from orchestrator.manager import ContextManager
from processors import HistorySummarizer, ObservationMasker
from tests.orchestrator.policy_keywords import make_manager
from tests.orchestrator.summaries import apply_summary

FORMATS = ("openai", "anthropic", "gemini", "responses")
BUDGET = 2_000
NOTE = "The customer id is C-2291; never change it."


def _log(step: int) -> str:
    return "\n".join(f"line {j} of run {step}: value={j * step} status=ok" for j in range(120))


def fill(manager: ContextManager, steps: int = 4) -> None:
    """A coding session whose tool outputs outgrow `BUDGET`."""
    manager.add_system("You are a careful coding agent.")
    manager.add_user("Fix the failing test in tests/test_io.py without touching the API.")
    for step in range(steps):
        manager.add_assistant(
            f"Running the tests, step {step}.",
            tool_calls=[{"id": f"call_{step}", "name": "bash", "arguments": {"cmd": "pytest"}}],
        )
        manager.add_tool_result(f"call_{step}", _log(step))
        manager.add_user(f"Go on with step {step + 1}.")


def make(**options: Any) -> ContextManager:
    options.setdefault("counter", WordCounter())
    options.setdefault("budget", BUDGET)
    return make_manager(**options)


def _view(manager: ContextManager) -> tuple[tuple[str, ...], int, int]:
    """What the model is shown, and the record's length."""
    working = manager.working
    return working.current_ids(), working.total_tokens, len(manager.raw.transcript())


def _texts(payload: dict[str, Any]) -> str:
    return repr(payload)


def _items(payload: dict[str, Any], fmt: str) -> list[Any]:
    """The request's turns, in whichever field the format keeps them."""
    key = {"gemini": "contents", "responses": "input"}.get(fmt, "messages")
    return list(payload[key])


def _last_message_text(payload: dict[str, Any], fmt: str) -> str:
    return repr(_items(payload, fmt)[-1])


class TestBeforeCompaction:
    def test_the_hook_sees_the_run_and_pins_a_note_that_the_request_carries(self) -> None:
        manager = make()
        seen: list[PreCompaction] = []

        @manager.hooks.before_compaction
        def flush(plan: PreCompaction) -> None:
            seen.append(plan)
            plan.pin_note(NOTE)

        fill(manager)
        with Recorder(manager.bus) as recorder:
            result = manager.render_sync()
        assert len(seen) == 1
        plan = seen[0]
        assert plan.trigger == "overflow"
        assert plan.automatic and not plan.deferrable
        assert plan.budget == BUDGET
        assert plan.tokens > BUDGET
        assert plan.node_ids and all(not manager.working[i].pinned for i in plan.node_ids)
        notes = [n for n in manager.raw.transcript() if manager.raw[n].kind == "note"]
        assert len(notes) == 1 and manager.raw[notes[0]].pinned
        assert manager.working.is_current(notes[0])
        assert NOTE in _texts(result.payload)
        assert result.tokens <= BUDGET
        names = recorder.names()
        assert names.index("memory_flushed") < names.index("compaction_done")
        assert "compaction_hook_ran" in names

    def test_instructions_reach_the_summarizer_with_the_callers(self) -> None:
        summarizer = ScriptedSummarizer(["Ran the tests four times; all lines were ok."] * 4)
        manager = make(summarizer=summarizer, pipeline=[HistorySummarizer()])
        manager.hooks.before_compaction(lambda plan: plan.add_instructions("keep the ids"))
        fill(manager)
        anyio.run(manager.compact, "keep the test names")
        assert summarizer.calls
        told = [told for _, _, told in summarizer.calls]
        # The summarizer is also asked to quote the user's words (a line after these).
        assert all(t.startswith("keep the test names\n\nkeep the ids") for t in told)

    def test_an_async_hook_is_awaited(self) -> None:
        manager = make()
        ran: list[str] = []

        async def flush(plan: PreCompaction) -> None:
            await anyio.lowlevel.checkpoint()
            ran.append(plan.trigger)
            plan.pin_note(NOTE)

        manager.hooks.before_compaction(flush)
        fill(manager)
        result = anyio.run(manager.render)
        assert ran == ["overflow"]
        assert NOTE in _texts(result.payload)

    def test_a_soft_run_is_deferred_and_asked_again(self) -> None:
        triggers = TriggerConfig(soft_ratio=0.3, hard_ratio=0.95)
        manager = make(budget=6_000, triggers=triggers, pipeline=[ObservationMasker()])
        asked: list[str] = []

        def wait(plan: PreCompaction) -> None:
            asked.append(plan.trigger)
            plan.pin_note("must not be kept: the run was deferred")
            plan.defer("the task is not over yet")

        manager.hooks.before_compaction(wait)
        fill(manager, steps=3)
        before = _view(manager)
        with Recorder(manager.bus) as recorder:
            manager.render_sync()
        assert asked == ["soft"]
        assert _view(manager) == before
        assert not any(manager.raw[n].kind == "note" for n in manager.raw.transcript())
        event = recorder.of("compaction_hook_deferred")[0]
        assert event["honoured"] is True
        assert "compaction_done" not in recorder.names()
        manager.render_sync()
        assert asked == ["soft", "soft"]  # still due: asked again
        manager.hooks.remove(wait)
        manager.render_sync()
        assert _view(manager) != before

    def test_an_overflow_run_is_not_deferred_and_the_bus_says_so(self) -> None:
        manager = make()
        manager.hooks.before_compaction(lambda plan: plan.defer("later, please"))
        fill(manager)
        with Recorder(manager.bus) as recorder:
            result = manager.render_sync()
        event = recorder.of("compaction_hook_deferred")[0]
        assert event["honoured"] is False
        assert "budget" in event["reason"]
        assert "compaction_done" in recorder.names()
        assert result.tokens <= BUDGET

    def test_a_hook_that_raises_applies_nothing_of_any_hook(self) -> None:
        manager = make()
        manager.hooks.before_compaction(lambda plan: plan.pin_note(NOTE))

        def broken(plan: PreCompaction) -> None:
            raise RuntimeError("disk full")

        manager.hooks.before_compaction(broken)
        fill(manager)
        working, raw = _view(manager), len(manager.raw.transcript())
        with pytest.raises(HookError, match=r"before_compaction hook .*broken.*disk full") as info:
            manager.render_sync()
        assert info.value.stage == "before_compaction"
        assert _view(manager) == working
        assert len(manager.raw.transcript()) == raw
        manager.hooks.remove(broken)
        result = manager.render_sync()  # what fired is still due, and runs now
        assert result.tokens <= BUDGET
        assert NOTE in _texts(result.payload)

    @pytest.mark.parametrize("bad", ["", "   ", None, 3])
    def test_a_bad_note_is_a_typed_error(self, bad: object) -> None:
        manager = make()
        manager.hooks.before_compaction(lambda plan: plan.pin_note(bad))  # type: ignore[arg-type]
        fill(manager)
        with pytest.raises(HookError, match="pin_note: expected a non-empty string"):
            manager.render_sync()

    def test_a_hook_must_be_callable(self) -> None:
        with pytest.raises(ConfigurationError, match="before_compaction: expected a function"):
            make().hooks.before_compaction("flush")  # type: ignore[arg-type]


class TestAfterCompaction:
    def test_the_hook_sees_what_changed(self) -> None:
        summarizer = ScriptedSummarizer(["Ran the tests four times; all lines were ok."] * 4)
        manager = make(summarizer=summarizer, pipeline=[HistorySummarizer()])
        seen: list[PostCompaction] = []
        manager.hooks.after_compaction(seen.append)
        fill(manager)
        anyio.run(manager.compact)
        done = seen[0]
        assert done.trigger == "manual"
        assert done.tokens_after < done.tokens_before
        assert done.compacted and all(not manager.working.is_current(i) for i in done.compacted)
        assert done.summaries and set(done.summaries) <= set(done.added)
        assert all(manager.working[i].kind == "summary" for i in done.summaries)
        assert done.run.applied >= 1

    def test_a_hook_that_raises_leaves_the_run_applied(self) -> None:
        manager = make()

        def broken(done: PostCompaction) -> None:
            raise ValueError("no")

        manager.hooks.after_compaction(broken)
        fill(manager)
        before = manager.working.total_tokens
        with pytest.raises(HookError, match="after_compaction"):
            manager.render_sync()
        assert manager.working.total_tokens < before


class TestAutoContinue:
    @pytest.mark.parametrize("fmt", FORMATS)
    def test_the_request_after_an_automatic_summary_carries_it_once(self, fmt: str) -> None:
        summarizer = ScriptedSummarizer(["Ran the tests four times; all lines were ok."] * 4)
        manager = make(
            format=fmt, summarizer=summarizer, pipeline=[HistorySummarizer()], auto_continue=True
        )
        fill(manager)
        with Recorder(manager.bus) as recorder:
            first = manager.render_sync()
            assert validate(first.payload, fmt) == []
            assert first.tokens <= BUDGET
            assert AUTO_CONTINUE_TEXT in _last_message_text(first.payload, fmt)
            assert recorder.of("auto_continued")[0]["format"] == fmt
            assert not any(
                AUTO_CONTINUE_TEXT in manager.raw[n].text for n in manager.raw.transcript()
            )
            # Said once; then it stays where it was, so the next requests extend this one.
            assert manager.render_sync().payload == first.payload
            manager.add_assistant(
                "Reading the failing test.",
                tool_calls=[{"id": "read_1", "name": "read", "arguments": {"path": "t.py"}}],
            )
            manager.add_tool_result("read_1", "def test_io(): assert read() == 3")
            later = manager.render_sync()
        assert len(recorder.of("auto_continued")) == 1
        assert validate(later.payload, fmt) == []
        before, after = _items(first.payload, fmt), _items(later.payload, fmt)
        assert after[: len(before)] == before
        assert _texts(later.payload).count(AUTO_CONTINUE_TEXT) == 1
        assert AUTO_CONTINUE_TEXT not in _last_message_text(later.payload, fmt)

    def test_the_next_summary_moves_it_to_the_end(self) -> None:
        summarizer = ScriptedSummarizer(["Ran the tests; all lines were ok."] * 8)
        manager = make(
            format="anthropic",
            summarizer=summarizer,
            pipeline=[HistorySummarizer()],
            auto_continue=True,
        )
        fill(manager)
        manager.render_sync()
        for step in range(4, 8):
            manager.add_assistant(
                f"Running the tests, step {step}.",
                tool_calls=[{"id": f"call_{step}", "name": "bash", "arguments": {"cmd": "pytest"}}],
            )
            manager.add_tool_result(f"call_{step}", _log(step))
        with Recorder(manager.bus) as recorder:
            result = manager.render_sync()
        assert recorder.of("auto_continued")  # a second summary announced itself again
        assert _texts(result.payload).count(AUTO_CONTINUE_TEXT) == 1
        assert AUTO_CONTINUE_TEXT in _last_message_text(result.payload, "anthropic")

    def test_it_is_off_by_default(self) -> None:
        manager = make(pipeline=[HistorySummarizer()])
        fill(manager)
        with Recorder(manager.bus) as recorder:
            result = manager.render_sync()
        assert "auto_continued" not in recorder.names()
        assert AUTO_CONTINUE_TEXT not in _texts(result.payload)
        assert any(manager.working[i].kind == "summary" for i in manager.working.current_ids())

    @pytest.mark.parametrize("value", [1, "yes", None])
    def test_the_option_is_a_bool(self, value: object) -> None:
        with pytest.raises(ConfigurationError, match="auto_continue must be True or False"):
            make(auto_continue=value)

    def test_the_gateway_turns_it_on(self) -> None:
        from orchestrator.gateway.serve import _factory
        from orchestrator.policy import get_policy

        manager = _factory("anthropic", BUDGET, get_policy("coding"))(None)
        assert manager._options.auto_continue

    def test_a_run_that_only_masks_outputs_says_nothing(self) -> None:
        manager = make(pipeline=[ObservationMasker()], auto_continue=True)
        fill(manager)
        with Recorder(manager.bus) as recorder:
            result = manager.render_sync()
        assert "compaction_done" in recorder.names()
        assert "auto_continued" not in recorder.names()
        assert AUTO_CONTINUE_TEXT not in _texts(result.payload)

    def test_a_manual_compaction_waits_for_the_user(self) -> None:
        manager = make(pipeline=[HistorySummarizer()], auto_continue=True)
        fill(manager, steps=2)
        anyio.run(manager.compact)
        assert any(manager.working[i].kind == "summary" for i in manager.working.current_ids())
        assert AUTO_CONTINUE_TEXT not in _texts(manager.render_sync().payload)


def _compacted_reply(*, final: bool = False) -> dict[str, Any]:
    """Anthropic's reply whose compaction took in the request; a tool call unless `final`."""
    call = {"type": "tool_use", "id": "toolu_1", "name": "bash", "input": {"cmd": "pytest"}}
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-opus-4-6",
        "content": [
            {"type": "compaction", "content": "The user asked to fix a.py; the fix is half done."},
            {"type": "text", "text": "Done." if final else "Running the tests."},
            *(() if final else (call,)),
        ],
        "stop_reason": "end_turn" if final else "tool_use",
        "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 5},
    }


class TestReplay:
    def test_a_latest_user_turn_compacted_away_is_sent_again_at_the_end(self) -> None:
        """Anthropic drops what its own compaction stands for: the request ends with the turn."""
        manager = make(format="anthropic", budget=None)
        manager.add_system("You are a coding agent.")
        manager.add_user("Fix a.py, then run the tests; do not touch b.py.")
        manager.add_response(_compacted_reply())
        manager.add_tool_result("toolu_1", "3 passed")
        with Recorder(manager.bus) as recorder:
            result = manager.render_sync()
        assert validate(result.payload, "anthropic") == []
        last = result.payload["messages"][-1]
        assert last["role"] == "user"
        assert last["content"][-1]["text"] == "Fix a.py, then run the tests; do not touch b.py."
        [event] = recorder.of("user_turn_replayed")
        assert manager.raw[event["node_id"]].kind == "user"
        assert last["content"][0]["type"] == "tool_result"  # one user message, merged
        assert len(manager.raw.transcript()) == 6  # nothing recorded
        manager.add_user("Thanks. Now b.py too.")
        with Recorder(manager.bus) as recorder:
            manager.render_sync()
        assert recorder.of("user_turn_replayed") == []

    @pytest.mark.parametrize("fmt", ["openai", "gemini", "responses"])
    def test_another_format_renders_the_record_and_replays_nothing(self, fmt: str) -> None:
        manager = make(format=fmt, budget=None)
        manager.add_user("Fix a.py, then run the tests; do not touch b.py.")
        manager.add_response(_compacted_reply())
        manager.add_tool_result("toolu_1", "3 passed")
        with Recorder(manager.bus) as recorder:
            result = manager.render_sync()
        assert validate(result.payload, fmt) == []
        assert _texts(result.payload).count("do not touch b.py") == 1
        assert recorder.of("user_turn_replayed") == []

    def test_a_summary_of_the_latest_turn_replays_it_in_every_format(self) -> None:
        """A summary made by a processor (the floor keeps the latest turn; a custom one may not)."""
        for fmt in FORMATS:
            manager = make(format=fmt, budget=None)
            manager.add_user("first request")
            latest = manager.add_user("Fix a.py, then run the tests; do not touch b.py.")
            manager.add_assistant(
                "On it.", tool_calls=[{"id": "c1", "name": "bash", "arguments": {"cmd": "ls"}}]
            )
            manager.add_tool_result("c1", "a.py b.py")
            _summarize_everything(manager)
            assert not manager.working.is_current(latest)
            result = manager.render_sync()
            assert validate(result.payload, fmt) == []
            assert "do not touch b.py" in _last_message_text(result.payload, fmt)

    def test_a_turn_the_model_answered_is_not_replayed(self) -> None:
        manager = make(format="anthropic", budget=None)
        manager.add_user("Fix a.py.")
        manager.add_response(_compacted_reply(final=True))
        with Recorder(manager.bus) as recorder:
            result = manager.render_sync()
        assert result.payload["messages"][-1]["role"] == "assistant"
        assert recorder.of("user_turn_replayed") == []

    def test_a_visible_latest_user_turn_is_not_replayed(self) -> None:
        manager = make()
        fill(manager)
        with Recorder(manager.bus) as recorder:
            manager.render_sync()
        assert recorder.of("user_turn_replayed") == []


@st.composite
def _hook_plans(draw: st.DrawFn) -> dict[str, Any]:
    return {
        "notes": draw(st.lists(st.text(min_size=1, max_size=60).filter(str.strip), max_size=3)),
        "instructions": draw(st.lists(st.sampled_from(["keep ids", "keep paths"]), max_size=2)),
        "defer": draw(st.booleans()),
        "steps": draw(st.integers(min_value=1, max_value=6)),
        "budget": draw(st.integers(min_value=1_500, max_value=8_000)),
        "fmt": draw(st.sampled_from(FORMATS)),
        "summarize": draw(st.booleans()),
        "raises": draw(st.booleans()),
    }


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(plan=_hook_plans())
def test_whatever_hooks_do_every_request_is_valid_and_fits(plan: dict[str, Any]) -> None:
    """Notes, instructions and deferrals never make a request invalid or over budget."""
    pipeline = [HistorySummarizer()] if plan["summarize"] else None
    manager = make(format=plan["fmt"], budget=plan["budget"], pipeline=pipeline, auto_continue=True)

    def hook(pre: PreCompaction) -> None:
        for note in plan["notes"]:
            pre.pin_note(note)
        for told in plan["instructions"]:
            pre.add_instructions(told)
        if plan["defer"]:
            pre.defer("property test")
        if plan["raises"] and pre.trigger == "overflow":
            raise RuntimeError("the hook failed")

    manager.hooks.before_compaction(hook)
    manager.add_system("You are a careful coding agent.")
    manager.add_user("Fix the failing test.")
    for step in range(plan["steps"]):
        manager.add_assistant(
            f"step {step}", tool_calls=[{"id": f"c{step}", "name": "bash", "arguments": {}}]
        )
        manager.add_tool_result(f"c{step}", _log(step))
        try:
            result = manager.render_sync()
        except HookError:
            assert plan["raises"]
            manager.hooks.remove(hook)
            result = manager.render_sync()
        assert validate(result.payload, plan["fmt"]) == []
        assert result.tokens <= plan["budget"]
        assert _texts(result.payload).count(AUTO_CONTINUE_TEXT) <= 1
        if AUTO_CONTINUE_TEXT in _texts(result.payload):
            # It stays where it was: the next request is this one again.
            assert manager.render_sync().payload == result.payload


def _summarize_everything(manager: ContextManager) -> None:
    """Abstract every unit of the view into one summary, through the invariant checker."""
    ids = manager.working.snapshot().current_ids()
    text = "The user asked twice; the assistant started."
    apply_summary(manager, ids, text, summary_id="summary-all", processor="summarize")
