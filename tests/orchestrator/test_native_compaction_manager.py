"""Native compactions through the `ContextManager`: ingest, render, compaction, replay, store.

A provider's own compaction is an unpinned summary: the manager sends it back verbatim to
its provider; for another format it renders the pristine record and its own compaction
fits it under the budget.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from anthropic.types.beta import BetaMessage

from benchmarks.sdk_types import sdk_problems
from context_graph.graph.events import AgentEvent
from context_graph.graph.nodes import SummaryNode
from context_graph.graph.sdk_replies import read_response
from context_graph.importers import load_events
from context_graph.testing import WordCounter
from context_graph.validate import validate
from orchestrator.manager import ContextManager
from orchestrator.policy import Policy
from orchestrator.replay import replay

SUMMARY = "The user asked to fix a.py; line 3 had an off-by-one; the fix is in."
BLOCK: dict[str, Any] = {"type": "compaction", "content": SUMMARY}
ENCRYPTED = "gAAAAABpG5SB-opaque-" + "Zm9v" * 30
ITEM: dict[str, Any] = {"type": "compaction", "id": "cmp_1", "encrypted_content": ENCRYPTED}
LONG = " ".join(f"line{k}" for k in range(300))


def _responses_session() -> list[AgentEvent]:
    """A Responses history: three tool rounds, a compaction item, then two more rounds."""
    items: list[dict[str, Any]] = [{"role": "user", "content": "fix a.py"}]
    for k in range(5):
        if k == 3:
            items.append(ITEM)
        items += [
            {"type": "function_call", "call_id": f"c{k}", "name": "run", "arguments": "{}"},
            {"type": "function_call_output", "call_id": f"c{k}", "output": f"{k} {LONG}"},
            {"role": "assistant", "content": f"step {k} done"},
        ]
    items.append({"role": "user", "content": "and now?"})
    return load_events({"instructions": "You are a coding agent.", "input": items})


def _compacted_reply() -> BetaMessage:
    """The SDK's reply to a request whose compaction edit fired."""
    return BetaMessage.model_validate(
        {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "claude-opus-4-6",
            "content": [BLOCK, {"type": "text", "text": "Done."}],
            "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": {"input_tokens": 10, "output_tokens": 5},
        }
    )


def _valid(payload: Any, fmt: str) -> None:
    assert validate(payload, fmt) == []
    assert sdk_problems(payload, fmt) == []


class TestRender:
    def test_the_own_provider_gets_the_item_back(self) -> None:
        """A Responses manager sends the user's messages, the item, and what follows it."""
        manager = ContextManager(format="responses", counter=WordCounter(), policy=Policy())
        manager.ingest(_responses_session())
        result = manager.render_sync()
        _valid(result.payload, "responses")
        first = {
            "type": "message",
            "role": "user",
            "content": [{"type": "input_text", "text": "fix a.py"}],
        }
        assert result.payload["input"][:2] == [first, ITEM]
        sent = json.dumps(result.payload)
        assert all(f"{k} line0" not in sent for k in range(3))  # what the item stands for
        assert result.foreign_compactions == ()

    def test_another_provider_is_fitted_by_the_managers_compaction(self) -> None:
        """Under a tight budget the pristine record is compacted to fit; nothing native goes."""
        events = _responses_session()
        whole = ContextManager(format="anthropic", counter=WordCounter(), policy=Policy())
        whole.ingest(events)
        size = whole.render_sync().tokens
        manager = ContextManager(
            format="anthropic", counter=WordCounter(), budget=size // 3, policy=Policy()
        )
        manager.ingest(events)
        result = manager.render_sync()
        _valid(result.payload, "anthropic")
        assert result.tokens <= size // 3
        assert ENCRYPTED not in json.dumps(result.payload)
        assert [f.reason for f in result.foreign_compactions] == ["pristine_record"]
        assert manager.stats().proposals_applied > 0 or result.dropped

    def test_the_summary_node_is_not_pinned(self) -> None:
        """The manager's compaction may act on it like any summary: it is not protected."""
        manager = ContextManager(format="responses", counter=WordCounter(), policy=Policy())
        manager.ingest(_responses_session())
        (node_id,) = manager.raw.by_kind("summary")
        node = manager.raw[node_id]
        assert isinstance(node, SummaryNode) and not node.pinned and node.native is not None

    def test_an_sdk_reply_with_a_compaction_block_goes_in_whole(self) -> None:
        """`read_response(...).events` ingests the compaction and the turn; Anthropic gets both."""
        manager = ContextManager(format="anthropic", counter=WordCounter(), policy=Policy())
        manager.ingest(load_events([{"role": "user", "content": "fix a.py"}], format="anthropic"))
        manager.ingest(read_response(_compacted_reply()).events)
        result = manager.render_sync()
        _valid(result.payload, "anthropic")
        assert result.payload["messages"][-1] == {
            "role": "assistant",
            "content": [BLOCK, {"type": "text", "text": "Done."}],
        }

    def test_add_response_keeps_the_compaction(self) -> None:
        """`add_response` of a reply that compacted ingests its compaction too."""
        manager = ContextManager(format="anthropic", counter=WordCounter(), policy=Policy())
        manager.ingest(load_events([{"role": "user", "content": "fix a.py"}], format="anthropic"))
        manager.add_response(_compacted_reply())
        assert manager.raw.by_kind("summary")


class TestReplayAndStore:
    def test_replay_stays_valid_in_every_format(self) -> None:
        """Every request of a replay, own format or not, is valid and under budget."""
        events = _responses_session()
        for fmt in ("responses", "anthropic", "openai", "gemini"):
            report = replay(events, budget=900, format=fmt)
            assert report.invalid_calls == 0, fmt
            assert report.over_budget_calls == 0, fmt

    def test_a_reopened_session_renders_the_same(self, tmp_path: Path) -> None:
        """The artifact survives the session file: a resumed manager sends the same body."""
        path = tmp_path / "session.db"
        first = ContextManager.open(path, format="responses", policy=Policy())
        first.ingest(_responses_session())
        before = first.render_sync().payload
        first.close()
        again = ContextManager.open(path, format="responses", policy=Policy())
        try:
            assert again.render_sync().payload == before
        finally:
            again.close()
