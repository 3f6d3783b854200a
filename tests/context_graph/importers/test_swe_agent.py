from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from context_graph.errors import IngestError
from context_graph.graph.content import TextPart, ThinkingPart
from context_graph.graph.context_graph import ContextGraph
from context_graph.graph.events import AssistantTurn, ToolResult, UserTurn
from context_graph.importers import (
    RawInput,
    detect_format,
    load_sessions,
    read_raw,
    swe_agent,
)
from context_graph.testing import graph_snapshot

TRACES = Path(__file__).resolve().parents[3].parent / "shared" / "traces"
FAMILY = TRACES / "swe_agent"
FILES = sorted(FAMILY.rglob("*.traj")) if FAMILY.is_dir() else []
TEXT_FILES = [
    p
    for p in FILES
    if not any(m.get("tool_calls") for m in json.loads(p.read_text(encoding="utf-8"))["history"])
]


def _history(path: Path) -> list[dict[str, Any]]:
    history: list[dict[str, Any]] = json.loads(path.read_text(encoding="utf-8"))["history"]
    return history


def _call(call_id: str, name: str = "bash") -> dict[str, Any]:
    arguments = json.dumps({"command": "ls"})
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def _fc_history() -> list[dict[str, Any]]:
    return [
        {"role": "system", "content": "SETTING", "agent": "main", "message_type": "system_prompt"},
        {"role": "user", "content": "issue", "agent": "main", "message_type": "observation"},
        {
            "role": "assistant",
            "content": "look",
            "thought": "look",
            "action": "ls",
            "agent": "main",
            "tool_calls": [_call("call_1")],
            "message_type": "action",
        },
        {
            "role": "tool",
            "content": "a.py",
            "agent": "main",
            "message_type": "observation",
            "tool_call_ids": ["call_1"],
        },
    ]


class TestSweAgentTraces:
    @pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
    def test_every_run_ingests_with_its_calls_and_results(
        self, graph: ContextGraph, path: Path
    ) -> None:
        """Every run ingests with one call node per source call and one result per observation."""
        history = _history(path)
        (session,) = load_sessions(path, format="swe_agent")
        graph.ingest(session.events)
        assert len(session.events) == len(history)
        assert len(graph.by_kind("tool_call")) == sum(
            len(m.get("tool_calls") or []) for m in history
        )
        assert len(graph.by_kind("tool_result")) == sum(m["role"] == "tool" for m in history)
        assert len(graph.by_kind("user")) == sum(m["role"] == "user" for m in history)
        assert len(graph.unanswered_calls()) == 0

    @pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
    def test_observations_answer_their_first_call_id(self, path: Path) -> None:
        """A function-calling observation answers the first id in its `tool_call_ids`."""
        history = _history(path)
        (session,) = load_sessions(path, format="swe_agent")
        expected = [m["tool_call_ids"][0] for m in history if m["role"] == "tool"]
        results = [e for e in session.events if isinstance(e, ToolResult)]
        assert [r.call_id for r in results] == expected

    @pytest.mark.parametrize("path", TEXT_FILES, ids=lambda p: p.name)
    def test_text_runs_stay_plain_turns(self, path: Path) -> None:
        """Runs that write actions in text give plain turns whose text is kept exactly."""
        history = _history(path)
        (session,) = load_sessions(path, format="swe_agent")
        for message, event in zip(history, session.events, strict=True):
            assert event.content == (TextPart(text=message["content"]),)
            assert not isinstance(event, AssistantTurn) or event.tool_calls == ()

    @pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
    def test_meta_keeps_agent_and_demo_flags(self, path: Path) -> None:
        """`agent`, `message_type` and `is_demo` are kept in each event's meta."""
        history = _history(path)
        (session,) = load_sessions(path, format="swe_agent")
        for message, event in zip(history, session.events, strict=True):
            for key in ("agent", "message_type", "is_demo"):
                assert event.meta.get(key) == message.get(key)

    @pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
    def test_the_task_is_the_only_request(self, path: Path) -> None:
        """Demonstrations and observations in the user's role are notices."""
        history = _history(path)
        (session,) = load_sessions(path, format="swe_agent")
        users = [
            (m, e) for m, e in zip(history, session.events, strict=True) if m["role"] == "user"
        ]
        (task,) = [m for m, event in users if not event.notice]
        assert not task.get("is_demo")
        assert task["content"].startswith("We're currently solving the following")
        first = history.index(task)
        assert all(m["role"] != "assistant" for m in history[:first])

    @pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
    def test_detect_format_picks_swe_agent(self, path: Path) -> None:
        """Auto-detection picks `swe_agent` for every shared SWE-agent run."""
        assert detect_format(path) == "swe_agent"

    @pytest.mark.slow
    def test_claims_no_other_trace(self, other_trace: Path) -> None:
        """No other shared trace is taken for a SWE-agent run."""
        assert not swe_agent.sniff(read_raw(other_trace))

    def test_both_kinds_of_run_are_shared(self) -> None:
        """The shared traces hold function-calling runs and text-action runs."""
        if not FILES:
            pytest.skip("shared traces are absent")
        assert 0 < len(TEXT_FILES) < len(FILES)


class TestSweAgentImporter:
    def test_function_calling_run(self, graph: ContextGraph) -> None:
        """A function-calling run pairs its observation with its call."""
        (session,) = load_sessions(RawInput({"history": _fc_history()}), format="swe_agent")
        graph.ingest(session.events)
        (call,) = graph.by_kind("tool_call")
        answer = graph.answer_to(call)
        assert answer is not None and answer.text == "a.py"

    def test_extra_ids_are_kept_in_meta(self) -> None:
        """An observation naming several ids answers the first and keeps the list in meta."""
        history = _fc_history()
        history[2]["tool_calls"] = [_call("call_1"), _call("call_2")]
        history[3]["tool_call_ids"] = ["call_1", "call_2"]
        (session,) = load_sessions(RawInput({"history": history}), format="swe_agent")
        result = session.events[3]
        assert isinstance(result, ToolResult) and result.call_id == "call_1"
        assert result.meta["tool_call_ids"] == ["call_1", "call_2"]

    def test_thinking_blocks_become_thinking_parts(self) -> None:
        """Anthropic `thinking_blocks` become signed thinking parts before the text."""
        history = _fc_history()
        history[2]["thinking_blocks"] = [{"type": "thinking", "thinking": "hmm", "signature": "s1"}]
        (session,) = load_sessions(RawInput({"history": history}), format="swe_agent")
        turn = session.events[2]
        assert isinstance(turn, AssistantTurn)
        assert turn.content == (ThinkingPart(thinking="hmm", signature="s1"), TextPart(text="look"))

    def test_user_messages_after_an_action_are_notices(self) -> None:
        """In a text-action run the observations come as user messages after each action."""
        history = [
            {"role": "system", "content": "You are an agent."},
            {"role": "user", "content": "demo", "is_demo": True},
            {"role": "user", "content": "Fix the bug in a.py"},
            {"role": "assistant", "content": "ls"},
            {"role": "user", "content": "a.py"},
            {"role": "assistant", "content": "submit"},
        ]
        (session,) = load_sessions(RawInput({"history": history}), format="swe_agent")
        users = [e for e in session.events if isinstance(e, UserTurn)]
        assert [u.notice for u in users] == [True, False, True]
        graph = ContextGraph()
        graph.ingest(session.events)
        assert graph.turns == 1

    def test_demonstration_flag_goes_to_meta(self) -> None:
        """A demonstration shown as a user message keeps `is_demo` in meta."""
        history = [{"role": "user", "content": "demo", "agent": "primary", "is_demo": True}]
        (session,) = load_sessions(RawInput({"history": history}), format="swe_agent")
        (event,) = session.events
        assert isinstance(event, UserTurn) and event.meta == {"agent": "primary", "is_demo": True}

    def test_deeply_nested_content_is_refused(self) -> None:
        """Deeply nested junk as an observation's content is refused at its first part."""
        junk: Any = "leaf"
        for _ in range(100_000):
            junk = [junk]
        history = _fc_history()
        history[3]["content"] = junk
        with pytest.raises(IngestError) as info:
            load_sessions(RawInput({"history": history}), format="swe_agent")
        assert (info.value.location.index, info.value.location.path) == (3, "history[3].content[0]")

    def test_session_meta_and_name(self, write_json: Callable[..., Path]) -> None:
        """A run is named after its file and records its exit status."""
        path = write_json(
            {"history": _fc_history(), "info": {"exit_status": "submitted"}}, "demo.traj"
        )
        (session,) = load_sessions(path, format="swe_agent")
        assert session.name == "demo"
        assert session.meta == {"format": "swe_agent", "exit_status": "submitted"}

    @pytest.mark.parametrize(
        ("patch", "index", "where"),
        [
            ({"tool_call_ids": []}, 3, "history[3].tool_call_ids"),
            ({"tool_call_ids": "call_1"}, 3, "history[3].tool_call_ids"),
            ({"tool_call_ids": [5]}, 3, "history[3].tool_call_ids[0]"),
            ({"tool_call_ids": None}, 3, "history[3].tool_call_ids"),
            ({"role": "observer"}, 3, "history[3].role"),
            ({"thinking_blocks": "x"}, 3, "history[3].thinking_blocks"),
            ({"thinking_blocks": [{"type": "thinking"}]}, 3, "history[3].thinking_blocks[0]"),
        ],
        ids=[
            "ids empty",
            "ids a string",
            "id not a string",
            "ids null",
            "unknown role",
            "thinking not a list",
            "thinking without text",
        ],
    )
    def test_malformed_messages_name_the_place(
        self, write_json: Callable[..., Path], patch: dict[str, Any], index: int, where: str
    ) -> None:
        """A malformed message raises `IngestError` naming the file, its index and the field."""
        history = _fc_history()
        history[3].update(patch)
        path = write_json({"history": history}, "demo.traj")
        with pytest.raises(IngestError) as info:
            load_sessions(path, format="swe_agent")
        location = info.value.location
        assert (location.file, location.index, location.path) == (str(path), index, where)

    @pytest.mark.parametrize(
        ("payload", "where"),
        [
            ({"history": "x"}, "history"),
            ({}, "history"),
            ({"history": [3]}, "history[0]"),
            ([], None),
        ],
        ids=["history a string", "history missing", "message not an object", "not an object"],
    )
    def test_malformed_runs_name_the_place(self, payload: Any, where: str | None) -> None:
        """A run without a usable `history` is refused at the right path."""
        with pytest.raises(IngestError) as info:
            load_sessions(RawInput(payload), format="swe_agent")
        assert info.value.location.path == where

    def test_orphan_observation_fails_at_ingest_and_changes_nothing(
        self, graph: ContextGraph, write_json: Callable[..., Path]
    ) -> None:
        """An observation whose call never appeared is refused at ingest, naming its message."""
        history = _fc_history()
        history[3]["tool_call_ids"] = ["call_ghost"]
        path = write_json({"history": history}, "demo.traj")
        (session,) = load_sessions(path, format="swe_agent")
        graph.ingest(session.events[:2])
        before = graph_snapshot(graph)
        with pytest.raises(IngestError) as info:
            graph.ingest(session.events[2:])
        location = info.value.location
        assert (location.file, location.index, location.path) == (str(path), 3, "history[3]")
        assert graph_snapshot(graph) == before


class TestSweAgentSniff:
    def test_claims_trajectories(self) -> None:
        """An object whose `history` holds role-tagged messages is recognized."""
        assert swe_agent.sniff(RawInput({"history": _fc_history(), "info": {}}))

    @pytest.mark.parametrize(
        "payload",
        [
            {"messages": _fc_history()},
            {"history": []},
            {"history": [{"content": "x"}]},
            {"history": "x"},
            _fc_history(),
            None,
        ],
        ids=["messages", "empty", "no role", "history a string", "list", "null"],
    )
    def test_does_not_claim_others(self, payload: Any) -> None:
        """Other payloads and junk are not claimed, and sniffing never raises."""
        assert not swe_agent.sniff(RawInput(payload))
