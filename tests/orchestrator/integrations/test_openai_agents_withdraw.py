"""`ContextSession.pop_item` and `clear_session`: withdrawals the record keeps, not shown again."""

from __future__ import annotations

import asyncio
import gc
import json
from pathlib import Path
from typing import Any

import pytest
from agents import Agent, Runner, function_tool
from agents.testing import ModelStep, ScriptedModel, assistant_message, function_call
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from openai.types.responses import ResponseReasoningItem
from openai.types.responses.response_reasoning_item import Summary

from benchmarks.sdk_types import sdk_problems
from context_graph.render import MISSING_RESULT_TEXT
from context_graph.testing import WordCounter
from context_graph.validate import validate
from orchestrator import ContextManager
from orchestrator.integrations.openai_agents import WITHDRAWN_BY_KEY, ContextSession
from orchestrator.policy import Policy

LONG = " ".join(f"filler{i}" for i in range(60))


@pytest.fixture(autouse=True)
def no_tracing(monkeypatch: pytest.MonkeyPatch) -> None:
    """The SDK's trace exporter would try to reach OpenAI: off in these tests."""
    monkeypatch.setenv("OPENAI_AGENTS_DISABLE_TRACING", "1")


@function_tool
def read_file(path: str) -> str:
    """Read a text file."""
    return f"contents-of-{path}"


def _reasoning(n: int) -> ResponseReasoningItem:
    return ResponseReasoningItem(
        id=f"rs_{n}",
        type="reasoning",
        summary=[Summary(type="summary_text", text=f"plan-{n}-mark")],
        encrypted_content=f"enc-{n}",
    )


def _model(*answers: str) -> ScriptedModel:
    """A model that reads one file (reasoning first), then answers, once per answer."""
    steps: list[ModelStep] = []
    for n, answer in enumerate(answers):
        call = function_call("read_file", {"path": f"f{n}"}, call_id=f"c{n}")
        steps.append(ModelStep(output=[_reasoning(n), call]))
        steps.append(ModelStep(output=[assistant_message(answer)]))
    return ScriptedModel(steps)


def _agent(model: ScriptedModel) -> Agent[Any]:
    return Agent(name="coder", instructions="Be careful.", tools=[read_file], model=model)


def _sent(model: ScriptedModel) -> str:
    """The model input of the latest call, as JSON text (checked valid first)."""
    call = model.calls[-1]
    body = {"instructions": call.system_instructions, "input": call.input}
    assert validate(json.loads(json.dumps(body)), "responses") == []
    return json.dumps(call.input)


def _user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


class TestPop:
    async def test_pop_returns_the_latest_item_until_none(self) -> None:
        """Items come back newest first, as added; an empty session pops `None`."""
        session = ContextSession(ContextManager(format="responses", policy=Policy()))
        items = [_user("one"), _user("two"), _user("three")]
        await session.add_items(items)
        assert [await session.pop_item() for _ in range(4)] == [*reversed(items), None]
        assert await session.get_items() == []

    async def test_pop_after_a_run_takes_the_answer_out_of_the_next_input(self) -> None:
        """Popped items leave `get_items` and the next model input; the call waits again."""
        model = _model("answer-one-mark", "answer-two-mark")
        manager = ContextManager(format="responses", policy=Policy())
        session = ContextSession(manager)
        config = session.run_config()
        await Runner.run(_agent(model), "first task", session=session, run_config=config)
        items = await session.get_items()
        answer = await session.pop_item()
        output = await session.pop_item()
        assert [answer["type"], output["type"]] == ["message", "function_call_output"]
        assert await session.get_items() == items[:-2]
        await Runner.run(_agent(model), "second task", session=session, run_config=config)
        sent = json.loads(json.dumps(model.calls[-2].input))
        assert "answer-one-mark" not in json.dumps(sent)
        outputs = [i for i in sent if i.get("type") == "function_call_output"]
        assert outputs[0] == {
            "type": "function_call_output",
            "call_id": "c0",
            "output": MISSING_RESULT_TEXT,
        }
        _sent(model)

    async def test_a_popped_output_added_back_answers_its_call(self) -> None:
        """The SDK's rewind puts a popped item back: the call has its answer again."""
        manager = ContextManager(format="responses", policy=Policy())
        session = ContextSession(manager)
        call = {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"}
        output = {"type": "function_call_output", "call_id": "c1", "output": "result-mark"}
        await session.add_items([_user("go"), call, output])
        popped = await session.pop_item()
        assert popped == output
        assert "result-mark" not in json.dumps((await manager.render()).payload)
        await session.add_items([popped])
        assert await session.get_items() == [_user("go"), call, output]
        assert "result-mark" in json.dumps((await manager.render()).payload)

    async def test_pop_of_part_of_an_assistant_turn_keeps_the_rest(self) -> None:
        """The turn's other items are recorded again in the same batch as the withdrawal."""
        manager = ContextManager(format="responses", policy=Policy())
        session = ContextSession(manager)
        message = {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "looking-mark"}],
        }
        call = {
            "type": "function_call",
            "call_id": "c1",
            "name": "f",
            "arguments": '{"x":"arg-mark"}',
        }
        reasoning = _reasoning(1).model_dump(exclude_none=True)
        await session.add_items([_user("go"), reasoning, message, call])
        assert await session.pop_item() == call
        assert await session.get_items() == [_user("go"), reasoning, message]
        sent = (await manager.render()).payload["input"]
        assert [i["type"] for i in sent] == ["message", "reasoning", "message"]
        assert "arg-mark" not in json.dumps(sent) and "looking-mark" in json.dumps(sent)
        assert await session.pop_item() == message
        assert await session.pop_item() == reasoning
        assert [i["type"] for i in (await manager.render()).payload["input"]] == ["message"]

    async def test_pops_through_summarized_history_show_nothing_popped(self) -> None:
        """Summaries that stood for a popped item are undone; what stays is summarized anew.

        The bulk is in the replies: a summary keeps every sentence the user said, and
        thirty long user messages alone would not fit the budget in any summary.
        """
        manager = ContextManager(
            format="responses", budget=900, counter=WordCounter(), policy=Policy()
        )
        session = ContextSession(manager)
        for n in range(30):
            reply = {"role": "assistant", "content": f"reply-{n} {LONG}"}
            await session.add_items([_user(f"ask-{n}-mark"), reply])
            if n % 3 == 0:
                await manager.render()
        for popped in range(29, 0, -1):
            await session.pop_item()
            await session.pop_item()
            result = await manager.render()
            assert validate(result.payload, "responses") == []
            assert result.tokens <= 900
            text = json.dumps(result.payload)
            assert [n for n in range(popped, 30) if f"ask-{n}-mark" in text] == []
        undone = [e for e in manager.working.audit() if e.processor == "withdraw"]
        assert undone and all(e.removed for e in undone)
        first, reply = await session.get_items()
        assert first == _user("ask-0-mark")
        assert f"reply-0 {LONG}" in json.dumps(reply)

    # `Runner.run_sync` keeps its event loop (and the sockets on it) open for the next
    # call; closing them is this test's cleanup, not a failure of the code under test.
    @pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
    def test_pop_and_run_sync(self) -> None:
        """`Runner.run_sync` continues a session a pop shortened."""
        model = _model("answer-one-mark", "answer-two-mark")
        session = ContextSession(ContextManager(format="responses", policy=Policy()))
        config = session.run_config()
        Runner.run_sync(_agent(model), "first task", session=session, run_config=config)
        assert asyncio.run(session.pop_item())["type"] == "message"
        result = Runner.run_sync(_agent(model), "second", session=session, run_config=config)
        _close_sync_runner()
        assert result.final_output == "answer-two-mark"
        assert "answer-one-mark" not in _sent(model)


def _close_sync_runner() -> None:
    """Close the event loop `Runner.run_sync` leaves open for its next call."""
    policy = asyncio.get_event_loop_policy()
    policy.get_event_loop().close()
    policy.set_event_loop(None)
    gc.collect()


class TestClear:
    async def test_clear_then_run_again_starts_afresh(self) -> None:
        """After a clear the next run sends only what it adds; the record keeps the first."""
        model = _model("answer-one-mark", "answer-two-mark")
        manager = ContextManager(format="responses", policy=Policy())
        session = ContextSession(manager)
        config = session.run_config()
        await Runner.run(_agent(model), "first-task-mark", session=session, run_config=config)
        recorded = len(manager.raw)
        await session.clear_session()
        assert await session.get_items() == []
        assert len(manager.raw.withdrawn()) == recorded
        await Runner.run(_agent(model), "second task", session=session, run_config=config)
        sent = _sent(model)
        assert "first-task-mark" not in sent and "answer-one-mark" not in sent
        first = (await session.get_items())[0]
        assert (first.get("role"), first.get("content")) == ("user", "second task")

    async def test_clear_of_an_empty_session_records_nothing(self) -> None:
        """Nothing to withdraw: the record is unchanged."""
        manager = ContextManager(format="responses", policy=Policy())
        await ContextSession(manager).clear_session()
        assert manager.raw.withdrawn() == () and len(manager.raw) == 0


class TestRestart:
    async def test_a_pop_survives_a_restart(self, tmp_path: Path) -> None:
        """A session on the reopened file has the items and the input a pop left."""
        path = tmp_path / "session.db"
        manager = ContextManager.open(path, format="responses", policy=Policy())
        session = ContextSession(manager)
        reasoning = _reasoning(1).model_dump(exclude_none=True)
        call = {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"}
        output = {"type": "function_call_output", "call_id": "c1", "output": "result-mark"}
        await session.add_items([_user("go"), reasoning, call, output])
        await session.pop_item()
        await session.pop_item()
        before = (await manager.render()).payload
        manager.close()
        reopened = ContextManager.open(path, format="responses", policy=Policy())
        try:
            again = ContextSession(reopened)
            assert await again.get_items() == [_user("go"), reasoning]
            assert (await reopened.render()).payload == before
            by = {w: reopened.raw[w].kind for w in reopened.raw.withdrawn()}
            assert sorted(by.values()) == ["assistant", "tool_call", "tool_result"]
            await again.clear_session()
            assert await ContextSession(reopened).get_items() == []
        finally:
            reopened.close()
        assert WITHDRAWN_BY_KEY == "openai_agents_withdrawn_by"


OPS = st.lists(
    st.sampled_from(["user", "reply", "call", "turn", "pop", "pop", "clear", "render", "compact"]),
    max_size=30,
)


class TestProperties:
    @settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(ops=OPS)
    def test_the_session_is_a_list_and_renders_hold_nothing_withdrawn(self, ops: list[str]) -> None:
        """Any adds, pops, clears and renders: `get_items` is what a list would hold, and
        every request is valid, under the budget and free of what was withdrawn."""
        manager = ContextManager(
            format="responses", budget=900, counter=WordCounter(), policy=Policy()
        )
        session = ContextSession(manager)
        model: list[Any] = []
        marks: dict[str, str] = {}  # each item's unique text, by its JSON
        calls = 0

        def item(payload: dict[str, Any], mark: str) -> dict[str, Any]:
            marks[json.dumps(payload, sort_keys=True)] = mark
            return payload

        for n, op in enumerate(ops):
            if op == "user":
                batch = [item(_user(f"ask-{n}-mark {LONG}"), f"ask-{n}-mark")]
            elif op == "reply":
                text = f"reply-{n}-mark {LONG}"
                content = [{"type": "output_text", "text": text}]
                batch = [
                    item(
                        {"type": "message", "role": "assistant", "content": content},
                        f"reply-{n}-mark",
                    )
                ]
            elif op in ("call", "turn"):
                calls += 1
                args = json.dumps({"path": f"call-{n}-mark"})
                call = {
                    "type": "function_call",
                    "call_id": f"c{calls}",
                    "name": "f",
                    "arguments": args,
                }
                output = {
                    "type": "function_call_output",
                    "call_id": f"c{calls}",
                    "output": f"out-{n}-mark {LONG}",
                }
                batch = [item(call, f"call-{n}-mark"), item(output, f"out-{n}-mark")]
                if op == "turn":
                    batch.insert(
                        0, item(_reasoning(n).model_dump(exclude_none=True), f"plan-{n}-mark")
                    )
            else:
                batch = []
            if batch:
                asyncio.run(session.add_items(batch))
                model.extend(batch)
            elif op == "pop":
                assert asyncio.run(session.pop_item()) == (model.pop() if model else None)
            elif op == "clear":
                asyncio.run(session.clear_session())
                model.clear()
            elif op == "compact":
                asyncio.run(manager.compact())
            else:
                _check_render(manager, model, marks)
            assert asyncio.run(session.get_items()) == model
        _check_render(manager, model, marks)


def _check_render(manager: ContextManager, model: list[Any], marks: dict[str, str]) -> None:
    """The request is valid, within the budget, and names no item the session lost."""
    result = manager.render_sync()
    assert validate(result.payload, "responses") == []
    assert sdk_problems(result.payload, "responses") == []
    assert result.tokens <= 900
    text = json.dumps(result.payload)
    kept = {json.dumps(i, sort_keys=True) for i in model}
    lost = [mark for key, mark in marks.items() if key not in kept and mark in text]
    assert lost == []
