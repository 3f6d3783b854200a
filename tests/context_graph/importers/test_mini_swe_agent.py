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
    mini_swe_agent,
    read_raw,
)
from context_graph.testing import graph_snapshot

TRACES = Path(__file__).resolve().parents[3].parent / "shared" / "traces"
FAMILY = TRACES / "mini_swe_agent_deepseek"
FILES = sorted(FAMILY.rglob("*.traj.json")) if FAMILY.is_dir() else []


def _messages(path: Path) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = json.loads(path.read_text(encoding="utf-8"))["messages"]
    return messages


def _open_after(messages: list[dict[str, Any]]) -> list[str]:
    open_ids: list[str] = []
    for message in messages:
        open_ids.extend(call["id"] for call in message.get("tool_calls") or [])
        if message["role"] == "tool":
            open_ids.remove(message["tool_call_id"])
    return open_ids


def _code_in(text: str) -> int:
    return int(text.split("<returncode>", 1)[1].split("</returncode>", 1)[0])


def _call(call_id: str, command: str) -> dict[str, Any]:
    arguments = json.dumps({"command": command})
    return {
        "index": 0,
        "id": call_id,
        "type": "function",
        "function": {"name": "bash", "arguments": arguments},
    }


def _traj(*, exit_early: bool = False, **changes: Any) -> dict[str, Any]:
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a helpful assistant."},
        {"role": "user", "content": "<pr_description>fix it</pr_description>"},
        {
            "role": "assistant",
            "content": "",
            "reasoning_content": "look first",
            "tool_calls": [_call("call_00_a", "ls")],
            "function_call": None,
            "extra": {
                "response": {"id": "r-1", "model": "deepseek-reasoner", "choices": []},
                "timestamp": 1776073878.5,
                "cost": 0.1,
            },
        },
        {
            "role": "tool",
            "tool_call_id": "call_00_a",
            "content": "<returncode>2</returncode>\n<output>\nls: no such file\n</output>",
            "extra": {"raw_output": "BULKY RAW OUTPUT", "returncode": 2, "timestamp": 1776073879.0},
        },
        {"role": "assistant", "content": "submit", "tool_calls": [_call("call_00_b", "echo done")]},
    ]
    if not exit_early:
        messages.append(
            {
                "role": "tool",
                "tool_call_id": "call_00_b",
                "content": "<returncode>0</returncode>\n<output>\ndone\n</output>",
            }
        )
    messages.append({"role": "exit", "content": "patch", "extra": {"exit_status": "Submitted"}})
    traj = {
        "info": {"exit_status": "Submitted", "config": {"model": {"model_name": "deepseek/x"}}},
        "messages": messages,
        "trajectory_format": "mini-swe-agent-1.1",
        "instance_id": "demo__demo-1",
    }
    traj.update(changes)
    return traj


@pytest.mark.slow
class TestMiniSweAgentTraces:
    @pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
    def test_every_run_ingests_with_its_calls_and_results(
        self, graph: ContextGraph, path: Path
    ) -> None:
        """Each run ingests, one call node per source call; calls open in the source stay open."""
        messages = _messages(path)
        (session,) = load_sessions(path, format="mini_swe_agent")
        graph.ingest(session.events)
        assert len(graph.by_kind("tool_call")) == sum(
            len(m.get("tool_calls") or []) for m in messages
        )
        assert len(graph.by_kind("tool_result")) == sum(m["role"] == "tool" for m in messages)
        open_ids = [graph[i].call_id for i in graph.unanswered_calls()]
        assert open_ids == _open_after(messages)

    @pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
    def test_exit_message_is_not_a_turn(self, graph: ContextGraph, path: Path) -> None:
        """The closing `exit` message makes no event, so a run ending on a call leaves it open."""
        messages = _messages(path)
        (session,) = load_sessions(path, format="mini_swe_agent")
        assert messages[-1]["role"] == "exit"
        assert len(session.events) == sum(m["role"] != "exit" for m in messages)
        graph.ingest(session.events)
        last_turn = messages[-2]
        if last_turn["role"] == "assistant" and last_turn.get("tool_calls"):
            last_calls = graph.by_kind("tool_call")[-len(last_turn["tool_calls"]) :]
            assert graph.unanswered_calls() == last_calls

    @pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
    def test_results_keep_text_and_return_code(self, path: Path) -> None:
        """A result keeps its text exactly, with the return code as its exit code."""
        messages = _messages(path)
        (session,) = load_sessions(path, format="mini_swe_agent")
        tool_messages = [m for m in messages if m["role"] == "tool"]
        results = [e for e in session.events if isinstance(e, ToolResult)]
        assert len(results) == len(tool_messages)
        for message, result in zip(tool_messages, results, strict=True):
            assert result.content == (TextPart(text=message["content"]),)
            code = _code_in(message["content"])
            assert (result.exit_code, result.meta) == (code, {})
            assert result.is_error is (code != 0)

    @pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
    def test_reasoning_content_is_kept_as_thinking(self, path: Path) -> None:
        """Every non-empty `reasoning_content` becomes the turn's first part, a thinking part."""
        messages = _messages(path)
        (session,) = load_sessions(path, format="mini_swe_agent")
        turns = [e for e in session.events if isinstance(e, AssistantTurn)]
        sources = [m for m in messages if m["role"] == "assistant"]
        for message, turn in zip(sources, turns, strict=True):
            reasoning = message.get("reasoning_content")
            if reasoning:
                assert turn.content[0] == ThinkingPart(thinking=reasoning, signature=None)
            else:
                assert not any(isinstance(p, ThinkingPart) for p in turn.content)

    @pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
    def test_extra_is_not_content(self, path: Path) -> None:
        """Nothing of the bulky `extra` field reaches a node's content."""
        messages = _messages(path)
        (session,) = load_sessions(path, format="mini_swe_agent")
        kept = [m for m in messages if m["role"] != "exit"]
        for message, event in zip(kept, session.events, strict=True):
            text = "".join(p.text for p in event.content if isinstance(p, TextPart))
            assert text == (message.get("content") or "")

    @pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
    def test_detect_format_picks_mini_swe_agent(self, path: Path) -> None:
        """Auto-detection picks `mini_swe_agent` for every shared mini-swe-agent run."""
        assert detect_format(path) == "mini_swe_agent"

    def test_claims_no_other_trace(self, other_trace: Path) -> None:
        """No other shared trace is taken for a mini-swe-agent run."""
        assert not mini_swe_agent.sniff(read_raw(other_trace))


class TestMiniSweAgentImporter:
    def test_hand_made_run(self, graph: ContextGraph) -> None:
        """A complete run ingests with every call answered and the exit skipped."""
        (session,) = load_sessions(RawInput(_traj()), format="mini_swe_agent")
        graph.ingest(session.events)
        assert graph.unanswered_calls() == ()
        assert session.name == "demo__demo-1"
        assert session.meta["exit_status"] == "Submitted"
        assert session.meta["model"] == "deepseek/x"

    def test_run_that_ends_on_a_call_leaves_it_open(self, graph: ContextGraph) -> None:
        """When the exit follows a call directly, that last call stays unanswered."""
        (session,) = load_sessions(RawInput(_traj(exit_early=True)), format="mini_swe_agent")
        graph.ingest(session.events)
        (open_call,) = graph.unanswered_calls()
        assert graph[open_call].call_id == "call_00_b"

    def test_nonzero_return_code_is_an_error(self) -> None:
        """A non-zero `<returncode>` sets `is_error` and `exit_code`; the text stays whole."""
        (session,) = load_sessions(RawInput(_traj()), format="mini_swe_agent")
        failed = session.events[3]
        assert isinstance(failed, ToolResult)
        assert failed.is_error and failed.exit_code == 2 and failed.meta == {}
        assert failed.content[0].text.startswith("<returncode>2</returncode>")
        ok = session.events[5]
        assert isinstance(ok, ToolResult) and not ok.is_error

    def test_exception_output_has_its_return_code(self) -> None:
        """An `<exception>` before the return code does not hide the code."""
        traj = _traj()
        traj["messages"][3]["content"] = (
            "<exception>timed out</exception>\n<returncode>-1</returncode>\n<output>\n</output>"
        )
        (session,) = load_sessions(RawInput(traj), format="mini_swe_agent")
        result = session.events[3]
        assert isinstance(result, ToolResult) and result.exit_code == -1 and result.is_error

    def test_extra_gives_time_model_and_id_only(self) -> None:
        """`extra` supplies timestamps, the model and the response id, never content."""
        (session,) = load_sessions(RawInput(_traj()), format="mini_swe_agent")
        turn, result = session.events[2], session.events[3]
        assert isinstance(turn, AssistantTurn)
        assert (turn.model, turn.message_id) == ("deepseek-reasoner", "r-1")
        assert turn.timestamp is not None and turn.timestamp.startswith("2026-04-13T09:51:18")
        assert result.timestamp is not None and result.timestamp.startswith("2026-04-13T09:51:19")
        assert "BULKY" not in json.dumps(result.model_dump(mode="json"))

    def test_junk_extra_is_ignored(self) -> None:
        """An `extra` that is not an object, or holds junk, is ignored."""
        traj = _traj()
        traj["messages"][2]["extra"] = "not an object"
        traj["messages"][3]["extra"] = {"timestamp": "yesterday", "response": 5}
        (session,) = load_sessions(RawInput(traj), format="mini_swe_agent")
        assert session.events[2].timestamp is None and session.events[3].timestamp is None

    def test_deeply_nested_extra_is_not_walked(self) -> None:
        """A deeply nested `extra` is skipped without recursing into it."""
        junk: Any = {}
        for _ in range(100_000):
            junk = {"response": junk}
        traj = _traj()
        traj["messages"][2]["extra"] = junk
        (session,) = load_sessions(RawInput(traj), format="mini_swe_agent")
        turn = session.events[2]
        assert isinstance(turn, AssistantTurn) and turn.model is None

    def test_huge_output_is_kept_whole(self) -> None:
        """A multi-megabyte command output is kept whole and still yields its return code."""
        output = "y" * 3_000_000
        traj = _traj()
        traj["messages"][3]["content"] = (
            f"<returncode>0</returncode>\n<output>\n{output}\n</output>"
        )
        (session,) = load_sessions(RawInput(traj), format="mini_swe_agent")
        result = session.events[3]
        assert isinstance(result, ToolResult) and output in result.content[0].text
        assert result.exit_code == 0 and not result.is_error

    @pytest.mark.parametrize("code", ["99999999999", "4294967296", "-2147483649"])
    def test_a_return_code_that_is_no_status_is_left_unread(self, code: str) -> None:
        """A `<returncode>` out of an exit status's range stays text, not a refused event."""
        traj = _traj()
        traj["messages"][3]["content"] = f"<returncode>{code}</returncode>\n<output>\n</output>"
        (session,) = load_sessions(RawInput(traj), format="mini_swe_agent")
        result = session.events[3]
        assert isinstance(result, ToolResult) and result.exit_code is None
        assert result.content == (TextPart(text=traj["messages"][3]["content"]),)

    def test_text_action_runs_are_plain_turns(self) -> None:
        """Observations sent as user messages stay user turns, with the return code in meta."""
        messages = [
            {"role": "system", "content": "s"},
            {"role": "user", "content": "task"},
            {"role": "assistant", "content": "```bash\nls\n```"},
            {"role": "user", "content": "<returncode>1</returncode>\n<output>\n</output>"},
            {"role": "exit", "content": ""},
        ]
        (session,) = load_sessions(RawInput({"messages": messages}), format="mini_swe_agent")
        observation = session.events[-1]
        assert isinstance(observation, UserTurn) and observation.meta == {"returncode": 1}

    @pytest.mark.parametrize(
        ("change", "index", "where"),
        [
            ({"messages": None}, None, "messages"),
            ({"messages": [1]}, 0, "messages[0]"),
            ({"messages": [{"role": "robot", "content": "x"}]}, 0, "messages[0].role"),
            ({"messages": [{"role": "tool", "content": "x"}]}, 0, "messages[0].tool_call_id"),
            (
                {"messages": [{"role": "assistant", "tool_calls": [{"id": "c", "function": 3}]}]},
                0,
                "messages[0].tool_calls[0].function",
            ),
        ],
        ids=[
            "messages missing",
            "message not object",
            "unknown role",
            "result without id",
            "bad call",
        ],
    )
    def test_malformed_runs_name_the_place(
        self, write_json: Callable[..., Path], change: dict[str, Any], index: int | None, where: str
    ) -> None:
        """A malformed run raises `IngestError` naming the file, message index and JSON path."""
        path = write_json(_traj(**change), "demo.traj.json")
        with pytest.raises(IngestError) as info:
            load_sessions(path, format="mini_swe_agent")
        location = info.value.location
        assert (location.file, location.index, location.path) == (str(path), index, where)

    def test_orphan_result_fails_at_ingest_and_changes_nothing(
        self, graph: ContextGraph, write_json: Callable[..., Path]
    ) -> None:
        """A result whose call never appeared is refused at ingest, naming its message."""
        traj = _traj()
        traj["messages"][3]["tool_call_id"] = "call_ghost"
        path = write_json(traj, "demo.traj.json")
        (session,) = load_sessions(path, format="mini_swe_agent")
        graph.ingest(session.events[:2])
        before = graph_snapshot(graph)
        with pytest.raises(IngestError) as info:
            graph.ingest(session.events[2:])
        location = info.value.location
        assert (location.file, location.index, location.path) == (str(path), 3, "messages[3]")
        assert graph_snapshot(graph) == before


class TestMiniSweAgentSniff:
    @pytest.mark.parametrize(
        "payload",
        [
            _traj(),
            {"messages": [{"role": "user", "content": "x"}, {"role": "exit", "content": ""}]},
        ],
        ids=["format tag", "exit message"],
    )
    def test_claims_runs(self, payload: Any) -> None:
        """A run is recognized by its format tag, or by its closing `exit` message."""
        assert mini_swe_agent.sniff(RawInput(payload))

    @pytest.mark.parametrize(
        "payload",
        [
            {"messages": [{"role": "user", "content": "x"}]},
            {"messages": [], "trajectory_format": "swe-agent"},
            {"messages": []},
            {"history": [{"role": "user", "content": "x"}]},
            [{"role": "exit"}],
            None,
        ],
        ids=["openai body", "other tag", "empty", "swe-agent", "list", "null"],
    )
    def test_does_not_claim_others(self, payload: Any) -> None:
        """Other payloads and junk are not claimed, and sniffing never raises."""
        assert not mini_swe_agent.sniff(RawInput(payload))


def _response(number: int, text: str, *commands: str) -> dict[str, Any]:
    """One model turn as mini-swe-agent 2's `litellm_response` model records it: the whole
    Responses API response object, with mini-swe-agent's `extra` beside it."""
    output: list[dict[str, Any]] = [
        {"type": "reasoning", "id": f"rs_{number}", "summary": []},
        {
            "type": "message",
            "id": f"msg_{number}",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": text, "annotations": []}],
        },
    ]
    output += [
        {
            "type": "function_call",
            "id": f"fc_{number}_{k}",
            "call_id": f"call_{number}_{k}",
            "name": "bash",
            "arguments": json.dumps({"command": command}),
            "status": "completed",
        }
        for k, command in enumerate(commands)
    ]
    return {
        "id": f"resp_{number}",
        "object": "response",
        "created_at": 1_750_000_000 + number,
        "model": "gpt-5-mini",
        "status": "completed",
        "output": output,
        "usage": {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15},
        "extra": {"actions": [], "cost": 0.0, "timestamp": 1_750_000_000.0 + number},
    }


def _output(call_id: str, code: int, text: str) -> dict[str, Any]:
    return {
        "type": "function_call_output",
        "call_id": call_id,
        "output": f"<returncode>{code}</returncode>\n<output>\n{text}\n</output>",
        "extra": {"raw_output": text, "returncode": code, "timestamp": 1_750_000_001.5},
    }


def _responses_traj() -> dict[str, Any]:
    return {
        "info": {
            "mini_version": "2.4.6",
            "exit_status": "Submitted",
            "config": {"model": {"model_name": "openai/gpt-5-mini"}},
        },
        "messages": [
            {"role": "system", "content": "You are a helpful assistant.", "extra": {}},
            {"role": "user", "content": "Please solve this issue: the parser drops tabs."},
            _response(1, "Two checks.", "ls src", "grep -n tab src/parse.py"),
            _output("call_1_0", 0, "parse.py"),
            _output("call_1_1", 1, ""),
            {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": "No tool call found. Call bash."}],
                "extra": {"interrupt_type": "FormatError"},
            },
            _response(2, "Submitting.", "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"),
            {"role": "exit", "content": "", "extra": {"exit_status": "Submitted"}},
        ],
        "trajectory_format": "mini-swe-agent-1.1",
        "instance_id": "demo__responses-1",
    }


class TestResponsesShapedRuns:
    def test_a_responses_run_reads_as_the_model_was_sent_it(self, graph: ContextGraph) -> None:
        """mini-swe-agent 2 with a Responses API model records each turn as the response
        object and each output as a `function_call_output` item: one assistant turn per
        response with its calls, each output its call's result with the return code."""
        (session,) = load_sessions(RawInput(_responses_traj()))
        assert [e.type for e in session.events] == [
            "system",
            "user",
            "assistant",
            "tool_result",
            "tool_result",
            "user",
            "assistant",
        ]
        turn = session.events[2]
        assert isinstance(turn, AssistantTurn)
        assert [c.id for c in turn.tool_calls] == ["call_1_0", "call_1_1"]
        assert turn.model == "gpt-5-mini"
        assert TextPart(text="Two checks.") in turn.content
        results = [e for e in session.events if isinstance(e, ToolResult)]
        assert [(r.exit_code, r.is_error) for r in results] == [(0, False), (1, True)]
        assert results[0].content[0].text.startswith("<returncode>0</returncode>")
        assert session.name == "demo__responses-1"
        assert session.meta["exit_status"] == "Submitted"
        assert "extra" not in json.dumps([e.model_dump(mode="json") for e in session.events])
        graph.ingest(session.events)
        # The run ends right after its last call: that call stays open, as in chat runs.
        (open_call,) = graph.unanswered_calls()
        assert graph[open_call].call_id == "call_2_0"

    def test_a_malformed_response_names_its_place(self) -> None:
        traj = _responses_traj()
        traj["messages"][2]["output"][2]["call_id"] = 7
        with pytest.raises(IngestError) as info:
            load_sessions(RawInput(traj))
        location = info.value.location
        assert (location.index, location.path) == (2, "messages[2].output[2].call_id")
