"""The replay report's recorded usage: what the session's provider said its calls used."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from context_graph import AssistantTurn, SystemPrompt, ToolCall, ToolResult, UserTurn
from context_graph.examples import EXAMPLE_SESSION
from context_graph.formats.wires import WIRES
from context_graph.graph.events import AgentEvent
from context_graph.importers import load_sessions
from orchestrator import ContextManager
from orchestrator.policy import Policy
from orchestrator.replay import replay
from orchestrator.report import Recording, ReplayRecorder
from orchestrator.report import usage as usage_module
from orchestrator.report.page import render_html
from orchestrator.report.usage import usage_shape

CLAUDE = {"input_tokens": 4, "cache_read_input_tokens": 900, "cache_creation_input_tokens": 96}
"""An Anthropic usage as Claude Code logs it: 1,000 prompt tokens, 900 of them cached."""


def _events(*usages: dict[str, Any] | None) -> list[AgentEvent]:
    """A tool loop whose assistant turns carry `usages` (None: a turn without one)."""
    events: list[AgentEvent] = [SystemPrompt(content="You fix bugs."), UserTurn(content="Fix it.")]
    for i, usage in enumerate(usages):
        meta = {} if usage is None else {"usage": usage}
        call = ToolCall(id=f"c{i}", name="bash", arguments='{"cmd": "pytest"}')
        events.append(AssistantTurn(content=f"Step {i}.", tool_calls=[call], meta=meta))
        events.append(ToolResult(call_id=f"c{i}", content=f"output {i}"))
    return events


def _record(events: list[AgentEvent], fmt: Any = "anthropic") -> Recording:
    manager = ContextManager(format=fmt, budget=50_000, policy=Policy())
    recorder = ReplayRecorder(manager, fmt)
    replay(events, budget=50_000, manager=manager, on_call=recorder)
    return recorder.recording


class TestRecordedUsage:
    def test_the_sessions_usage_is_summed_with_its_hit_rate(self) -> None:
        """Every assistant turn's Anthropic usage adds up; the hit rate is over the whole."""
        second = {**CLAUDE, "output_tokens": 20, "cache_read_input_tokens": 0}
        recording = _record(_events({**CLAUDE, "output_tokens": 10}, second, None))
        assert recording.to_json()["usage"] == {
            "calls": 2,
            "prompt_tokens": 1_000 + 100,
            "completion_tokens": 30,
            "cached_tokens": 900,
            "cache_creation_tokens": 192,
            "total_tokens": 1_130,
            "cache_hit_rate": pytest.approx(900 / 1_100),
            "unread": 0,
        }
        page = render_html(recording, "t")
        assert "recorded cache hit rate" in page

    def test_a_session_without_usage_shows_none(self) -> None:
        """No usage in the log: the page has nothing recorded to show."""
        assert _record(_events(None, None)).to_json()["usage"] is None

    def test_running_totals_are_left_out_and_a_bad_count_is_counted_unread(self) -> None:
        """Codex's running totals would count calls twice; a negative count is not added."""
        codex = {"input_tokens": 5_000, "cached_input_tokens": 4_000, "output_tokens": 9}
        bad = {**CLAUDE, "cache_read_input_tokens": -1}
        usage = _record(_events(codex, bad, {**CLAUDE, "output_tokens": 1})).to_json()["usage"]
        assert (usage["calls"], usage["prompt_tokens"], usage["unread"]) == (1, 1_000, 1)

    def test_the_bundled_example_reports_its_real_hit_rate(self) -> None:
        """The example Claude Code session logs usage on each of its 50 assistant turns."""
        session = load_sessions(EXAMPLE_SESSION)[0]
        usage = _record(list(session.events)).usage
        assert usage is not None
        assert usage["calls"] == 50
        assert 0.0 < usage["cache_hit_rate"] <= 1.0


class TestUsageShape:
    @pytest.mark.parametrize(
        ("usage", "shape"),
        [
            ({"prompt_tokens": 1}, "openai"),
            ({"input_tokens": 1, "input_tokens_details": {}}, "responses"),
            (CLAUDE, "anthropic"),
            ({"promptTokenCount": 1}, "gemini"),
            ({"input_tokens": 1, "cached_input_tokens": 0}, None),
            ({"input": 1, "cached": 0}, None),
        ],
    )
    def test_the_shape_is_told_by_its_keys(self, usage: dict[str, Any], shape: str | None) -> None:
        """Each provider's usage by the keys only it has; running totals and others: none."""
        assert usage_shape(usage) == shape

    def test_a_new_format_claims_its_usage_with_no_change_here(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A format added to the registry is asked too: its `Wire.owns_usage` decides."""
        ledger = dataclasses.replace(
            WIRES["openai"], name="ledger", owns_usage=lambda usage: "ledger_tokens" in usage
        )
        monkeypatch.setattr(usage_module, "WIRES", {**WIRES, "ledger": ledger})
        assert usage_shape({"ledger_tokens": 3}) == "ledger"
        assert usage_shape({"prompt_tokens": 1}) == "openai"
