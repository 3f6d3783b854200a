"""A withdrawal in the journal: SQLite and PostgreSQL sessions restore it as it was."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from context_graph import Withdrawal
from context_graph.testing import WordCounter
from orchestrator import ContextManager
from orchestrator.persistence.codec import checksum, decode_entry, encode_events
from orchestrator.policy import Policy


def _location(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> str:
    if kind == "sqlite":
        return str(tmp_path / "session.db")
    postgres: Any = request.getfixturevalue("postgres")
    return str(postgres.location("withdraw"))


class TestJournal:
    def test_a_withdrawal_round_trips_through_the_codec(self) -> None:
        """The events entry of a withdrawal decodes to the same event, meta included."""
        event = Withdrawal(node_ids=("a", "b"), meta={"by": "test"})
        body = encode_events([event]).encode()
        decoded = decode_entry("mem", 1, "events", body, checksum(body))
        assert decoded.events == (event,)

    @pytest.mark.parametrize("kind", ["sqlite", "postgres"])
    def test_a_reopened_session_keeps_its_withdrawals(
        self, kind: str, tmp_path: Path, request: pytest.FixtureRequest
    ) -> None:
        """Withdrawn nodes, the reopened call and the request are as they were left."""
        location = _location(kind, tmp_path, request)
        manager = ContextManager.open(
            location, format="responses", counter=WordCounter(), policy=Policy()
        )
        manager.add_user("first-mark")
        gone = manager.add_user("typo-mark")
        _, call = manager.add_assistant("calling", tool_calls=[{"id": "c1", "name": "ls"}])
        result = manager.add_tool_result("c1", "listing-mark")
        manager.withdraw([gone, result])
        before = manager.render_sync().payload
        manager.close()
        reopened = ContextManager.open(
            location, format="responses", counter=WordCounter(), policy=Policy()
        )
        try:
            assert reopened.raw.withdrawn() == (gone, result)
            assert reopened.raw.unanswered_calls() == (call,)
            assert reopened.render_sync().payload == before
            text = json.dumps(before)
            assert "typo-mark" not in text and "listing-mark" not in text
            reopened.add_tool_result("c1", "second-listing")
            answer = reopened.raw.answer_to(call)
            assert answer is not None and answer.content[0].text == "second-listing"  # type: ignore[union-attr]
        finally:
            reopened.close()
