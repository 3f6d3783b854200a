"""Metadata the session file could not read back is refused at ingest, with its path.

Before, a `meta` value nested 200 levels or an integer of 4,300 digits ingested and
journaled, and the session file then no longer opened.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from context_graph import ContextGraph, IngestError
from context_graph.importers import load_sessions
from context_graph.testing import graph_snapshot


def _nested(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {}
    for _ in range(depth):
        value = {"a": value}
    return value


def _nested_list(depth: int) -> list[Any]:
    value: list[Any] = []
    for _ in range(depth):
        value = [value]
    return value


class TestMetaLimits:
    @pytest.mark.parametrize(
        ("meta", "where"),
        [
            (_nested(200), "meta.a.a.a"),
            ({"usage": {"n": 10**4_100}}, "meta.usage.n"),
            ({"deep": _nested_list(80)}, "meta.deep.0.0"),
        ],
    )
    def test_unreadable_meta_is_refused_with_its_path(
        self, meta: dict[str, Any], where: str
    ) -> None:
        """Too deep or too long: an IngestError naming the path, and nothing added."""
        graph = ContextGraph()
        graph.add_user("First.")
        before = graph_snapshot(graph)
        with pytest.raises(IngestError, match=r"message 0 meta\.") as caught:
            graph.add_user("Second.", meta=meta)
        assert where in str(caught.value)
        assert graph_snapshot(graph) == before

    def test_meta_within_the_bounds_is_kept(self) -> None:
        """Nesting and numbers well inside the bounds go in unchanged."""
        graph = ContextGraph()
        meta = {"usage": {"input_tokens": 10**30, "nested": _nested(20)}}
        node_id = graph.add_user("Hi.", meta=meta)
        assert graph[node_id].meta["usage"] == meta["usage"]

    def test_a_claude_code_log_with_deep_usage_is_refused_by_line(self, tmp_path: Path) -> None:
        """The Claude Code importer copies `usage` into meta: the file's line is named."""
        record = {
            "type": "assistant",
            "uuid": "a1",
            "sessionId": "s",
            "message": {
                "id": "msg_1",
                "role": "assistant",
                "content": [{"type": "text", "text": "Done."}],
                "usage": _nested(150),
            },
        }
        user = {"type": "user", "uuid": "u1", "sessionId": "s"}
        user["message"] = {"role": "user", "content": "Go."}
        path = tmp_path / "session.jsonl"
        path.write_text(json.dumps(user) + "\n" + json.dumps(record) + "\n", encoding="utf-8")
        graph = ContextGraph()
        with pytest.raises(IngestError, match="nested more than 64 levels") as caught:
            for session in load_sessions(path):
                graph.ingest(session.events)
        assert caught.value.location is not None and caught.value.location.file == str(path)
