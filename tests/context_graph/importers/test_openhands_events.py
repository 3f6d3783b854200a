"""OpenHands event streams (`_openhands_events`): trajectory downloads and evaluation rows.

The events are shaped as OpenHands records them (its `tests/runtime/trajs/` replays and
its UI's trajectory download: actions with `tool_call_metadata` holding the model's
response, observations answering by call id); the texts in them are ours.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from context_graph.errors import IngestError
from context_graph.graph.content import TextPart
from context_graph.graph.context_graph import ContextGraph
from context_graph.graph.events import AssistantTurn, SystemPrompt, ToolResult, UserTurn
from context_graph.importers import detect_format, load_sessions, read_raw
from context_graph.testing import WordCounter

Event = dict[str, Any]
MODEL = "claude-sonnet-test"


def _response(response_id: str, text: str, *calls: tuple[str, str, dict[str, Any]]) -> Event:
    """A chat completion as OpenHands keeps it in `tool_call_metadata.model_response`."""
    tool_calls = [
        {
            "index": number,
            "id": call_id,
            "type": "function",
            "function": {"name": name, "arguments": json.dumps(arguments)},
        }
        for number, (call_id, name, arguments) in enumerate(calls)
    ]
    message = {"content": text, "role": "assistant", "tool_calls": tool_calls or None}
    return {
        "id": response_id,
        "created": 1738046713,
        "model": MODEL,
        "object": "chat.completion",
        "choices": [{"finish_reason": "tool_calls", "index": 0, "message": message}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }


def _user(number: int, text: str) -> Event:
    return {
        "id": number,
        "timestamp": "2025-01-27T22:44:56.900854",
        "source": "user",
        "message": text,
        "action": "message",
        "args": {"content": text, "image_urls": None, "wait_for_response": False},
    }


def _act(number: int, action: str, call_id: str, name: str, response: Event | None) -> Event:
    metadata: Event = {"function_name": name, "tool_call_id": call_id, "total_calls_in_response": 1}
    if response is not None:
        metadata["model_response"] = response
    return {
        "id": number,
        "source": "agent",
        "message": "",
        "action": action,
        "args": {"command": "pytest -q", "thought": "Run the tests."},
        "tool_call_metadata": metadata,
    }


def _observe(number: int, kind: str, call_id: str, content: str, exit_code: int = 0) -> Event:
    return {
        "id": number,
        "source": "agent",
        "message": f"Command finished with exit code {exit_code}",
        "cause": number - 1,
        "observation": kind,
        "content": content,
        "extras": {"command": "pytest -q", "metadata": {"exit_code": exit_code}},
        "tool_call_metadata": {"function_name": "execute_bash", "tool_call_id": call_id},
    }


def _environment(number: int) -> Event:
    return {
        "id": number,
        "source": "environment",
        "message": "",
        "observation": "agent_state_changed",
        "content": "",
        "extras": {"agent_state": "running"},
    }


def _run() -> list[Event]:
    tests = _response("r1", "I will run the tests.", ("t1", "execute_bash", {"command": "pytest"}))
    done = _response("r2", "All pass.", ("t2", "finish", {"message": "Fixed."}))
    return [
        _environment(0),
        _user(1, "Fix the failing test in tests/test_io.py."),
        _act(2, "run", "t1", "execute_bash", tests),
        _environment(3),
        _observe(4, "run", "t1", "1 failed, 3 passed in 0.20s", exit_code=1),
        {"id": 5, "source": "agent", "action": "message", "args": {"content": "Now I see it."}},
        _act(6, "finish", "t2", "finish", done),
    ]


def _write(folder: Path, value: Any, name: str = "trajectory.json") -> Path:
    path = folder / name
    path.write_text(json.dumps(value))
    return path


class TestEventStream:
    def test_a_run_reads_as_the_model_was_sent_it(self, tmp_path: Path) -> None:
        """The user's message, each model response as one assistant turn with its calls,
        each observation as its call's result with the exit code; the run's last call
        (`finish`) has no result, as in OpenHands."""
        path = _write(tmp_path, _run())
        assert detect_format(read_raw(path)) == "openhands"
        (session,) = load_sessions(path)
        assert session.name == "trajectory"
        assert [e.type for e in session.events] == [
            "user",
            "assistant",
            "tool_result",
            "assistant",
            "assistant",
        ]
        user, call, result, message, finish = session.events
        assert isinstance(user, UserTurn) and not user.notice
        assert isinstance(call, AssistantTurn)
        assert call.content == (TextPart(text="I will run the tests."),)
        assert [(c.id, c.name, json.loads(c.arguments)) for c in call.tool_calls] == [
            ("t1", "execute_bash", {"command": "pytest"})
        ]
        assert isinstance(result, ToolResult)
        assert (result.call_id, result.exit_code) == ("t1", 1)
        assert result.content == (TextPart(text="1 failed, 3 passed in 0.20s"),)
        assert isinstance(message, AssistantTurn) and message.tool_calls == ()
        assert isinstance(finish, AssistantTurn) and finish.tool_calls[0].name == "finish"
        assert session.meta["model"] == MODEL
        assert session.meta["skipped_events"] == {"observation:agent_state_changed": 2}
        ContextGraph(counter=WordCounter()).ingest(session.events)

    def test_parallel_calls_are_one_turn(self, tmp_path: Path) -> None:
        """Two actions of one model response are one assistant turn with both calls,
        answered by their observations in turn."""
        both = _response(
            "r1",
            "Two reads.",
            ("a", "str_replace_editor", {"command": "view", "path": "/a.py"}),
            ("b", "str_replace_editor", {"command": "view", "path": "/b.py"}),
        )
        events = [
            _user(1, "Compare a.py and b.py."),
            _act(2, "read", "a", "str_replace_editor", both),
            _act(3, "read", "b", "str_replace_editor", both),
            _observe(4, "read", "a", "x = 1"),
            _observe(5, "read", "b", "x = 2"),
        ]
        (session,) = load_sessions(_write(tmp_path, events))
        types = [e.type for e in session.events]
        assert types == ["user", "assistant", "tool_result", "tool_result"]
        turn = session.events[1]
        assert isinstance(turn, AssistantTurn)
        assert [c.id for c in turn.tool_calls] == ["a", "b"]
        assert [e.call_id for e in session.events[2:] if isinstance(e, ToolResult)] == ["a", "b"]

    def test_the_harness_speaking_is_a_notice(self, tmp_path: Path) -> None:
        """OpenHands' automatic "Please continue" reply and an action that failed before it
        ran are the harness's words: notices. A failed call's observation is an error."""
        call = _response("r1", "Run it.", ("t1", "execute_bash", {"command": "make"}))
        events = [
            _user(1, "Build the project."),
            {"id": 2, "source": "agent", "action": "message", "args": {"content": "Done?"}},
            _user(
                3,
                "Please continue working on the task on whatever approach you think "
                "is suitable. If you think you have solved the task, finish.",
            ),
            _act(4, "run", "t1", "execute_bash", call),
            _observe(5, "error", "t1", "make: command not found", exit_code=127),
            {
                "id": 6,
                "source": "agent",
                "observation": "error",
                "content": "The action could not be parsed.",
                "extras": {"error_id": ""},
            },
        ]
        (session,) = load_sessions(_write(tmp_path, events))
        notices = [e.notice for e in session.events if isinstance(e, UserTurn)]
        assert notices == [False, True, True]
        (result,) = [e for e in session.events if isinstance(e, ToolResult)]
        assert result.is_error and result.exit_code == 127

    def test_a_system_action_is_the_system_prompt(self, tmp_path: Path) -> None:
        system = {
            "id": 0,
            "source": "agent",
            "action": "system",
            "args": {"content": "You are OpenHands agent.", "tools": []},
        }
        (session,) = load_sessions(_write(tmp_path, [system, _user(1, "Hi.")]))
        first = session.events[0]
        assert isinstance(first, SystemPrompt)
        assert first.content == (TextPart(text="You are OpenHands agent."),)

    def test_a_call_without_its_response_is_read_from_the_action(self, tmp_path: Path) -> None:
        """An action whose metadata keeps no model response is the call it names, with the
        arguments it ran with; its thought is the turn's text."""
        events = [
            _user(1, "Test it."),
            _act(2, "run", "t1", "execute_bash", None),
            _observe(3, "run", "t1", "ok"),
        ]
        (session,) = load_sessions(_write(tmp_path, events))
        turn = session.events[1]
        assert isinstance(turn, AssistantTurn)
        assert turn.content == (TextPart(text="Run the tests."),)
        (call,) = turn.tool_calls
        assert (call.id, call.name, json.loads(call.arguments)) == (
            "t1",
            "execute_bash",
            {"command": "pytest -q"},
        )

    def test_evaluation_rows_are_one_session_each(self, tmp_path: Path) -> None:
        """An evaluation's `output.jsonl`: each row's `history` is a session named after
        its instance; a single row saved as JSON too."""
        rows = [
            {"instance_id": "demo__demo-1", "history": _run(), "test_result": {}},
            {"instance_id": "demo__demo-2", "history": _run()[:5]},
        ]
        path = tmp_path / "output.jsonl"
        path.write_text("\n".join(json.dumps(row) for row in rows) + "\n")
        sessions = load_sessions(path)
        assert [s.name for s in sessions] == ["demo__demo-1", "demo__demo-2"]
        assert [len(s.events) for s in sessions] == [5, 3]
        (single,) = load_sessions(_write(tmp_path, rows[0], "row.json"))
        assert single.name == "demo__demo-1" and len(single.events) == 5

    @pytest.mark.parametrize(
        ("events", "where"),
        [
            ([_user(1, "go"), "not an event"], (None, 1, None)),
            ([_user(1, "go"), {"id": 2, "source": "agent", "action": "run", "x": 1}], None),
            ([_user(1, "go"), {"id": 2, "source": "agent"}], (None, 1, None)),
            (
                [
                    _user(1, "go"),
                    _act(2, "run", "t1", "execute_bash", None),
                    {**_observe(3, "run", "t1", "ok"), "content": ["not", "text"]},
                ],
                (None, 2, "content"),
            ),
            (
                [_user(1, "go"), _act(2, "run", "t1", "x", {**_response("r", ""), "choices": []})],
                (None, 1, "tool_call_metadata.model_response"),
            ),
            (
                [
                    _user(1, "go"),
                    {
                        **_act(2, "run", "t1", "x", None),
                        "tool_call_metadata": {"tool_call_id": "t1"},
                    },
                ],
                (None, 1, "tool_call_metadata"),
            ),
            (
                [{**_user(1, "go"), "args": {"content": 5}}],
                (None, 0, "args.content"),
            ),
        ],
        ids=[
            "event not an object",
            "action skipped",
            "neither action nor observation",
            "output not text",
            "response without a choice",
            "call without a name",
            "message not text",
        ],
    )
    def test_a_malformed_event_names_its_place(
        self, tmp_path: Path, events: list[Any], where: tuple[int | None, int, str | None] | None
    ) -> None:
        """A malformed event is refused naming the event and the field; an action of a
        kind not read (here one with no call metadata) is counted, not refused."""
        path = _write(tmp_path, events)
        if where is None:
            (session,) = load_sessions(path)
            assert session.meta["skipped_events"] == {"action:run": 1}
            return
        with pytest.raises(IngestError) as info:
            load_sessions(path)
        location = info.value.location
        assert (location.line, location.index, location.path) == where


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(min_value=1, max_value=3), st.integers(min_value=0, max_value=2)),
        min_size=1,
        max_size=6,
    ),
    st.booleans(),
)
def test_any_run_imports_valid(turns: list[tuple[int, int]], finish: bool) -> None:
    """Turns of one to three parallel calls, each action and observation separated by
    environment events, optionally ending on `finish`: every result follows the turn
    that called it, and the session is a valid conversation."""
    events: list[Event] = [_user(0, "Do the task.")]
    number = 1
    for turn, (calls, noise) in enumerate(turns):
        ids = [f"c{turn}-{k}" for k in range(calls)]
        response = _response(
            f"r{turn}", f"Turn {turn}.", *[(i, "execute_bash", {"command": i}) for i in ids]
        )
        for call_id in ids:
            events.append(_act(number, "run", call_id, "execute_bash", response))
            number += 1
            events.extend(_environment(number + k) for k in range(noise))
            number += noise
        for call_id in ids:
            events.append(_observe(number, "run", call_id, f"out {call_id}"))
            number += 1
    if finish:
        events.append(
            _act(number, "finish", "end", "finish", _response("end", "", ("end", "finish", {})))
        )
    with tempfile.TemporaryDirectory() as folder:
        (session,) = load_sessions(_write(Path(folder), events))
    types = [e.type for e in session.events]
    assert types.count("assistant") == len(turns) + finish
    at = 1
    for calls, _ in turns:
        assert types[at : at + 1 + calls] == ["assistant"] + ["tool_result"] * calls
        at += 1 + calls
    ContextGraph(counter=WordCounter()).ingest(session.events)


def test_a_recall_gives_the_repositorys_rules_and_the_triggered_knowledge(
    tmp_path: Path,
) -> None:
    """A workspace recall's instructions are a pinned note, a knowledge recall's
    microagents a notice; a recall with nothing the model was given is counted."""
    workspace = {
        "id": 2,
        "source": "environment",
        "observation": "recall",
        "content": "Added workspace context",
        "extras": {
            "recall_type": "workspace_context",
            "repo_name": "acme/app",
            "repo_instructions": "Run make lint before committing.",
            "conversation_instructions": "",
            "microagent_knowledge": [],
        },
    }
    knowledge = {
        "id": 3,
        "source": "environment",
        "observation": "recall",
        "content": "Added microagent knowledge",
        "extras": {
            "recall_type": "knowledge",
            "microagent_knowledge": [
                {"name": "git", "trigger": "git", "content": "Never force-push to main."}
            ],
        },
    }
    empty = {**knowledge, "id": 4, "extras": {"recall_type": "knowledge"}}
    events = [_user(1, "Fix the lint errors, then git commit."), workspace, knowledge, empty]
    (session,) = load_sessions(_write(tmp_path, events))
    assert [e.type for e in session.events] == ["user", "note", "user"]
    note, told = session.events[1], session.events[2]
    assert note.content == (TextPart(text="Run make lint before committing."),)
    assert isinstance(told, UserTurn) and told.notice
    assert "git:\nNever force-push to main." in told.content[0].text
    assert session.meta["skipped_events"] == {"observation:recall": 1}
