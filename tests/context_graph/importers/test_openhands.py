from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from context_graph.errors import IngestError
from context_graph.graph.content import TextPart
from context_graph.graph.context_graph import ContextGraph
from context_graph.graph.events import AssistantTurn, ToolResult, UserTurn
from context_graph.graph.nodes import AssistantNode
from context_graph.importers import (
    RawInput,
    detect_format,
    load_sessions,
    openhands,
    read_raw,
)
from context_graph.testing import graph_snapshot

TRACES = Path(__file__).resolve().parents[3].parent / "shared" / "traces"
FAMILY = TRACES / "openhands_claude35_swebench_verified"
FILES = sorted(FAMILY.glob("llm_completions/*/*.json")) if FAMILY.is_dir() else []


# Where OpenHands keeps a completion log: the instance folder names the session.
LOG_FILE = "llm_completions/demo__demo-1/model-1733345578.5.json"


def _whole_history(log: dict[str, Any]) -> list[dict[str, Any]]:
    return [*log["messages"], log["response"]["choices"][0]["message"]]


def _open_after(messages: list[dict[str, Any]]) -> list[str]:
    open_ids: list[str] = []
    for message in messages:
        open_ids.extend(call["id"] for call in message.get("tool_calls") or [])
        if message["role"] == "tool":
            open_ids.remove(message["tool_call_id"])
    return open_ids


def _text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value, "cache_control": {"type": "ephemeral"}}


def _call(call_id: str, name: str = "execute_bash") -> dict[str, Any]:
    arguments = json.dumps({"command": "ls"})
    return {
        "index": 1,
        "id": call_id,
        "type": "function",
        "function": {"name": name, "arguments": arguments},
    }


def _log(**changes: Any) -> dict[str, Any]:
    log: dict[str, Any] = {
        "messages": [
            {"role": "system", "content": [_text("You are OpenHands agent.")]},
            {"role": "user", "content": [_text("fix the bug")]},
            {
                "role": "assistant",
                "content": [_text("Looking.")],
                "tool_calls": [_call("toolu_01")],
            },
            {
                "role": "tool",
                "tool_call_id": "toolu_01",
                "name": "execute_bash",
                "content": [_text("a.py")],
                "cache_control": {"type": "ephemeral"},
            },
        ],
        "response": {
            "id": "chatcmpl-1",
            "created": 1733345578,
            "model": "claude-3-5-sonnet",
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "tool_calls",
                    "message": {
                        "role": "assistant",
                        "content": "Done.",
                        "tool_calls": [_call("toolu_02", "finish")],
                        "function_call": None,
                    },
                }
            ],
        },
        "args": [],
        "kwargs": {},
        "timestamp": 1733345578.57,
        "cost": 0.1,
    }
    log.update(changes)
    return log


@pytest.mark.slow
class TestOpenHandsTraces:
    @pytest.mark.parametrize("path", FILES, ids=lambda p: p.parent.name)
    def test_every_log_ingests_with_its_calls_and_results(
        self, graph: ContextGraph, path: Path
    ) -> None:
        """Each log ingests, one call node per source call; calls open in the source stay open."""
        log = json.loads(path.read_text(encoding="utf-8"))
        history = _whole_history(log)
        (session,) = load_sessions(path, format="openhands")
        graph.ingest(session.events)
        calls = sum(len(m.get("tool_calls") or []) for m in history)
        assert len(graph.by_kind("tool_call")) == calls
        assert len(graph.by_kind("tool_result")) == sum(m["role"] == "tool" for m in history)
        open_ids = [graph[i].call_id for i in graph.unanswered_calls()]
        assert open_ids == _open_after(history)
        assert len(session.events) == len(history)

    @pytest.mark.parametrize("path", FILES, ids=lambda p: p.parent.name)
    def test_response_is_the_last_assistant_turn(self, path: Path) -> None:
        """The response's message is appended as the last turn, with the response's model and id."""
        log = json.loads(path.read_text(encoding="utf-8"))
        final = log["response"]["choices"][0]["message"]
        (session,) = load_sessions(path, format="openhands")
        last = session.events[-1]
        assert isinstance(last, AssistantTurn)
        assert [c.id for c in last.tool_calls] == [c["id"] for c in final.get("tool_calls") or []]
        assert (last.model, last.message_id) == (log["response"]["model"], log["response"]["id"])
        assert last.source is not None
        assert last.source.path == "response.choices[0].message"
        assert last.source.index == len(log["messages"])

    @pytest.mark.parametrize("path", FILES, ids=lambda p: p.parent.name)
    def test_text_parts_are_kept_without_cache_control(self, path: Path) -> None:
        """Each text part's text is kept exactly; `cache_control` leaves no trace."""
        log = json.loads(path.read_text(encoding="utf-8"))
        (session,) = load_sessions(path, format="openhands")
        for message, event in zip(log["messages"], session.events, strict=False):
            content = message.get("content")
            if isinstance(content, list) and message["role"] != "assistant":
                assert event.content == tuple(TextPart(text=p["text"]) for p in content)
            assert "cache_control" not in json.dumps(event.model_dump(mode="json"))

    @pytest.mark.parametrize("path", FILES, ids=lambda p: p.parent.name)
    def test_session_is_named_after_its_instance_folder(self, path: Path) -> None:
        """A log is named after the instance folder it is in."""
        (session,) = load_sessions(path, format="openhands")
        assert session.name == path.parent.name

    @pytest.mark.parametrize("path", FILES, ids=lambda p: p.parent.name)
    def test_detect_format_picks_openhands(self, path: Path) -> None:
        """Auto-detection picks `openhands` for every shared OpenHands log."""
        assert detect_format(path) == "openhands"

    def test_claims_no_other_trace(self, other_trace: Path) -> None:
        """No other shared trace is taken for an OpenHands log."""
        assert not openhands.sniff(read_raw(other_trace))


class TestOpenHandsImporter:
    def test_hand_made_log(self, graph: ContextGraph) -> None:
        """Messages and the response become one history whose final call is left open."""
        (session,) = load_sessions(RawInput(_log()), format="openhands")
        graph.ingest(session.events)
        assert [n.kind for n in graph] == [
            "system",
            "user",
            "assistant",
            "tool_call",
            "tool_result",
            "assistant",
            "tool_call",
        ]
        (open_call,) = graph.unanswered_calls()
        assert graph[open_call].call_id == "toolu_02"
        last = graph[graph.by_kind("assistant")[-1]]
        assert isinstance(last, AssistantNode)
        assert last.timestamp == "2024-12-04T20:52:58+00:00"
        assert (last.model, last.message_id) == ("claude-3-5-sonnet", "chatcmpl-1")

    def test_the_automatic_reply_is_a_notice(self) -> None:
        """OpenHands' own 'Please continue' turn is a notice; the task stays a request."""
        reply = (
            "Please continue working on the task on whatever approach you think is "
            "suitable.\nIMPORTANT: YOU SHOULD NEVER ASK FOR HUMAN HELP.\n"
        )
        log = _log()
        log["messages"] += [
            {"role": "assistant", "content": [_text("I think it is fixed.")]},
            {"role": "user", "content": [_text(reply)]},
            {"role": "user", "content": [_text("Please continue, but run the tests first")]},
        ]
        (session,) = load_sessions(RawInput(log), format="openhands")
        users = [e for e in session.events if isinstance(e, UserTurn)]
        assert [u.notice for u in users] == [False, True, False]

    @pytest.mark.skipif(not FILES, reason="shared OpenHands traces are absent")
    def test_recorded_automatic_replies_are_notices(self) -> None:
        marked = 0
        for path in FILES:
            (session,) = load_sessions(path)
            for event in session.events:
                if isinstance(event, UserTurn):
                    text = event.content[0].text if event.content else ""
                    assert event.notice is text.startswith("Please continue working"), text
                    marked += event.notice
        assert marked > 0

    def test_tool_result_name_goes_to_meta(self) -> None:
        """A tool message's `name` is kept in meta; the graph takes the tool name from the call."""
        (session,) = load_sessions(RawInput(_log()), format="openhands")
        result = session.events[3]
        assert isinstance(result, ToolResult) and result.meta == {"name": "execute_bash"}

    def test_session_meta(self, write_json: Callable[..., Path]) -> None:
        """Session metadata records the model, the cost and the call's time."""
        path = write_json(_log(), LOG_FILE)
        (session,) = load_sessions(path, format="openhands")
        assert session.name == "demo__demo-1"
        assert session.meta["model"] == "claude-3-5-sonnet"
        assert session.meta["cost"] == 0.1
        assert str(session.meta["timestamp"]).startswith("2024-12-04T20:52:58")

    @pytest.mark.parametrize(
        ("change", "index", "where"),
        [
            ({"response": None}, None, "response"),
            ({"response": {"choices": "x"}}, None, "response.choices"),
            ({"response": {"choices": []}}, 4, "response.choices[0].message"),
            ({"response": {"choices": [3]}}, None, "response.choices[0]"),
            ({"response": {"choices": [{}]}}, 4, "response.choices[0].message"),
            (
                {"response": {"choices": [{"message": {"role": "user", "content": "x"}}]}},
                4,
                "response.choices[0].message.role",
            ),
            (
                {"response": {"choices": [{"message": {"tool_calls": [{"id": 1}]}}]}},
                4,
                "response.choices[0].message.tool_calls[0].id",
            ),
            ({"messages": {"role": "user"}}, None, "messages"),
            (
                {"messages": [{"role": "user", "content": [{"type": "text"}]}]},
                0,
                "messages[0].content[0].text",
            ),
        ],
        ids=[
            "response null",
            "choices not a list",
            "choices empty",
            "choice not an object",
            "choice without message",
            "response from the user",
            "bad call id",
            "messages not a list",
            "text part without text",
        ],
    )
    def test_malformed_logs_name_the_place(
        self, write_json: Callable[..., Path], change: dict[str, Any], index: int | None, where: str
    ) -> None:
        """A malformed log raises `IngestError` naming the file, message index and JSON path."""
        path = write_json(_log(**change), LOG_FILE)
        with pytest.raises(IngestError) as info:
            load_sessions(path, format="openhands")
        location = info.value.location
        assert (location.file, location.index, location.path) == (str(path), index, where)

    def test_orphan_result_fails_at_ingest_and_changes_nothing(
        self, graph: ContextGraph, write_json: Callable[..., Path]
    ) -> None:
        """A result whose call never appeared is refused at ingest, naming its message."""
        log = _log()
        log["messages"][3]["tool_call_id"] = "toolu_ghost"
        path = write_json(log, LOG_FILE)
        (session,) = load_sessions(path, format="openhands")
        graph.ingest(session.events[:2])
        before = graph_snapshot(graph)
        with pytest.raises(IngestError) as info:
            graph.ingest(session.events[2:])
        location = info.value.location
        assert (location.file, location.index, location.path) == (str(path), 3, "messages[3]")
        assert graph_snapshot(graph) == before


class TestOpenHandsSniff:
    def test_claims_call_logs(self) -> None:
        """A log with `messages` and a `response` with `choices` is recognized."""
        assert openhands.sniff(RawInput(_log()))

    @pytest.mark.parametrize(
        "payload",
        [
            {"messages": [{"role": "user", "content": "hi"}]},
            {"messages": [], "response": "text"},
            {"messages": "x", "response": {"choices": []}},
            {"history": [], "response": {"choices": []}},
            [_log()],
            None,
            7,
        ],
        ids=[
            "openai body",
            "response not object",
            "messages not list",
            "no messages",
            "list",
            "null",
            "int",
        ],
    )
    def test_does_not_claim_others(self, payload: Any) -> None:
        """Other payloads and junk are not claimed, and sniffing never raises."""
        assert not openhands.sniff(RawInput(payload))
