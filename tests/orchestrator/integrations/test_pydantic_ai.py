"""The pydantic-ai history processor, against real agents with `FunctionModel` and `TestModel`.

The function model records every request it gets and answers from a script (one tool
call per turn, then a final answer); its usage says the request's size, instructions and
tool definitions included, by the count the budget uses.
"""

from __future__ import annotations

import asyncio
import importlib.util
import inspect
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai import Agent, PydanticAIDeprecationWarning
from pydantic_ai.messages import (
    ImageUrl,
    ModelMessage,
    ModelRequest,
    ModelResponse,
    RetryPromptPart,
    SystemPromptPart,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
    VideoUrl,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.test import TestModel
from pydantic_ai.usage import RequestUsage

from context_graph import ContextGraph
from context_graph.errors import ConfigurationError, IngestError
from context_graph.render import Renderer
from context_graph.validate import validate
from orchestrator import ContextManager, Recorder
from orchestrator.integrations import pydantic_ai as integration
from orchestrator.integrations.pydantic_ai import ContextHistory
from orchestrator.integrations.pydantic_ai_messages import MARK, from_payload, to_events
from orchestrator.policy import Policy

BUDGET = 16_000
TURNS = 30


@pytest.fixture(autouse=True)
def _run_sync_loop(request: pytest.FixtureRequest) -> Iterator[None]:
    """Give `run_sync` an event loop that is closed afterwards.

    pydantic-ai's `run_sync` runs on the thread's current loop, creating one it never
    closes; left to the garbage collector, that loop warns in a later test.
    """
    if inspect.iscoroutinefunction(request.function):
        yield
        return
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    yield
    asyncio.set_event_loop(None)
    loop.close()


def _log(n: int) -> str:
    """A tool output of about 5,000 tokens, every line distinct."""
    return "\n".join(f"[{n}:{i:04d}] cc -c src/module_{i}.c -o build/m{i}.o ok" for i in range(300))


def _wire(messages: list[ModelMessage], info: AgentInfo) -> tuple[dict[str, Any], int]:
    """The OpenAI chat request of what the model got, and its size."""
    graph = ContextGraph()
    if info.instructions:
        graph.add_system(info.instructions)
    graph.ingest(to_events(list(enumerate(messages))))
    tools = [
        {
            "type": "function",
            "function": {
                "name": t.name,
                "description": t.description or "",
                "parameters": t.parameters_json_schema,
            },
        }
        for t in info.function_tools
    ]
    result = Renderer(format="openai", tools=tools).render(graph)
    return result.payload, result.tokens


class Script:
    """A `FunctionModel` function: reads `turns` logs, then answers; records each request."""

    def __init__(self, turns: int = TURNS, factor: float = 1.0) -> None:
        self.turns, self.factor = turns, factor
        self.requests: list[tuple[dict[str, Any], int]] = []
        self.received: list[list[ModelMessage]] = []

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self.received.append(list(messages))
        payload, tokens = _wire(messages, info)
        self.requests.append((payload, tokens))
        usage = RequestUsage(input_tokens=int(self.factor * tokens), output_tokens=8)
        n = len(self.requests)
        if n > self.turns:
            return ModelResponse(parts=[TextPart("The build fails in module 7.")], usage=usage)
        call = ToolCallPart("read_log", {"n": n}, tool_call_id=f"call_{n}")
        return ModelResponse(parts=[TextPart(f"Reading log {n}."), call], usage=usage)


def _agent(script: Script, history: ContextHistory | None) -> Agent[None, str]:
    capabilities = [] if history is None else [history.capability()]
    agent = Agent(
        FunctionModel(script),
        system_prompt="You are a build doctor.",
        instructions="Be brief.",
        capabilities=capabilities,
    )

    @agent.tool_plain
    def read_log(n: int) -> str:
        """Read build log number n."""
        return _log(n)

    return agent


def _pairs_hold(messages: list[ModelMessage]) -> bool:
    """Every tool call is answered once, in the next request; no answer without its call."""
    open_calls: set[str] = set()
    for message in messages:
        if isinstance(message, ModelResponse):
            if open_calls:
                return False
            open_calls = {p.tool_call_id for p in message.parts if isinstance(p, ToolCallPart)}
            continue
        answers = [p.tool_call_id for p in message.parts if isinstance(p, ToolReturnPart)]
        if sorted(answers) != sorted(open_calls):
            return False
        open_calls = set()
    return True


def _assert_requests_fit(script: Script, count: int) -> None:
    assert len(script.requests) == count
    for payload, tokens in script.requests:
        assert validate(payload, "openai") == []
        assert int(script.factor * tokens) <= BUDGET  # by the count the model reported
    assert all(_pairs_hold(received) for received in script.received)


class TestThirtyTurnLoop:
    """A 30-turn tool loop of ~5,000-token outputs under a 16,000-token budget."""

    def test_without_the_processor_requests_outgrow_the_budget(self) -> None:
        """The baseline: the agent alone sends requests far over the budget."""
        script = Script()
        _agent(script, None).run_sync("Why does the build fail?")
        assert max(tokens for _, tokens in script.requests) > 5 * BUDGET

    @pytest.mark.parametrize("factor", [1.0, 1.3])
    def test_every_request_is_valid_and_under_the_budget(self, factor: float) -> None:
        """Sync (`run_sync`): every request valid, calls paired, within the provider's count."""
        script = Script(factor=factor)
        _agent(script, ContextHistory(budget=BUDGET)).run_sync("Why does the build fail?")
        _assert_requests_fit(script, TURNS + 1)

    async def test_async_loop_is_valid_and_under_the_budget(self) -> None:
        """Async (`await agent.run`): the same loop."""
        script = Script()
        await _agent(script, ContextHistory(budget=BUDGET)).run("Why does the build fail?")
        _assert_requests_fit(script, TURNS + 1)

    def test_usage_is_reported_for_calibration(self) -> None:
        """Each response's `usage.input_tokens` reaches the manager's calibrator."""
        script = Script(turns=3, factor=1.25)
        history = ContextHistory(budget=BUDGET)
        agent = _agent(script, history)
        first = agent.run_sync("Why does the build fail?")
        manager = history.manager(first.all_messages()[0].conversation_id or "")
        with Recorder(manager.bus) as recorder:
            agent.run_sync("And now?", message_history=first.all_messages())
        factors = [e.payload["factor"] for e in recorder.events if e.name == "usage_reported"]
        assert factors and all(1.0 < f <= 1.25 for f in factors)


class TestThinking:
    """A model's thinking survives the processor."""

    def test_a_signed_thinking_part_is_sent_back_as_it_was(self) -> None:
        """The `ThinkingPart` of an earlier response reaches the next request, signature kept."""
        seen: list[list[ModelMessage]] = []

        def answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
            seen.append(list(messages))
            if len(seen) == 1:
                thinking = ThinkingPart("Read it.", signature="sig-9", provider_name="anthropic")
                call = ToolCallPart("read_log", {"n": 1}, tool_call_id="c1")
                return ModelResponse(parts=[thinking, call])
            return ModelResponse(parts=[TextPart("done")])

        agent = Agent(
            FunctionModel(answer), capabilities=[ContextHistory(budget=BUDGET).capability()]
        )

        @agent.tool_plain
        def read_log(n: int) -> str:
            """Read build log number n."""
            return "ok"

        agent.run_sync("Why?")
        (response,) = [m for m in seen[1] if isinstance(m, ModelResponse)]
        (thinking,) = [p for p in response.parts if isinstance(p, ThinkingPart)]
        assert (thinking.content, thinking.signature) == ("Read it.", "sig-9")


class TestWriteBack:
    """pydantic-ai keeps the processed history; nothing is compacted twice or lost."""

    def test_three_runs_ingest_every_message_once(self) -> None:
        """After three runs on the returned history, the record holds each original once."""
        script = Script(turns=TURNS)
        history = ContextHistory(budget=BUDGET)
        agent = _agent(script, history)
        messages: list[ModelMessage] = []
        for prompt in ("Why does the build fail?", "And the tests?", "Summarize."):
            script.requests.clear()
            script.turns = 10
            messages = agent.run_sync(prompt, message_history=messages).all_messages()
        manager = history.manager(messages[0].conversation_id or "")
        raw = manager.raw
        assert [raw[i].text for i in raw.by_kind("user")] == [
            "Why does the build fail?",
            "And the tests?",
            "Summarize.",
        ]
        outputs = sorted(raw[i].text for i in raw.by_kind("tool_result"))
        assert outputs == sorted(_log(n) for n in range(1, 11) for _ in range(3))
        assert len(raw.by_kind("assistant")) == 3 * 10 + 2  # the last answer is never sent
        assert _pairs_hold(messages)

    def test_returned_messages_are_marked_and_compacted(self) -> None:
        """The history pydantic-ai keeps is the rendered one, every message of it marked."""
        script = Script(turns=TURNS)
        result = _agent(script, ContextHistory(budget=BUDGET)).run_sync("Why?")
        kept = result.all_messages()
        assert sum(1 for m in kept if (m.metadata or {}).get(MARK)) >= len(kept) - 2
        assert len(kept) < 2 * TURNS

    def test_a_history_from_another_record_is_refused(self) -> None:
        """Messages rendered by another processor are not silently dropped."""
        first = _agent(Script(turns=1), ContextHistory(budget=BUDGET)).run_sync("Why?")
        other = _agent(Script(turns=1), ContextHistory(budget=BUDGET))
        with pytest.raises(ConfigurationError, match="rendered from another record"):
            other.run_sync("Again?", message_history=first.all_messages())

    def test_a_stored_conversation_continues_in_a_new_processor(self, tmp_path: Path) -> None:
        """With `directory=`, a new processor given the kept history continues the record."""
        history = ContextHistory(budget=BUDGET, directory=tmp_path)
        first = _agent(Script(turns=3), history).run_sync("Why?")
        history.close()
        again = ContextHistory(budget=BUDGET, directory=tmp_path)
        script = Script(turns=3)
        result = _agent(script, again).run_sync("Again?", message_history=first.all_messages())
        raw = again.manager(result.all_messages()[0].conversation_id or "").raw
        assert [raw[i].text for i in raw.by_kind("user")] == ["Why?", "Again?"]
        assert len(raw.by_kind("tool_result")) == 6
        _assert_requests_fit(script, 4)
        again.close()

    def test_test_model_calls_its_tools_through_the_processor(self) -> None:
        """pydantic-ai's `TestModel` (every tool once, then an answer) runs unchanged."""
        agent = Agent(TestModel(), capabilities=[ContextHistory(budget=BUDGET).capability()])

        @agent.tool_plain
        def read_log(n: int) -> str:
            """Read build log number n."""
            return _log(n)

        result = agent.run_sync("Why?")
        assert _pairs_hold(result.all_messages())
        assert "read_log" in result.output


class TestConversion:
    """`ModelMessage` parts to events and back."""

    def test_thinking_keeps_its_signature(self) -> None:
        """A `ThinkingPart` is a thinking part with its signature and provider."""
        response = ModelResponse(
            parts=[
                ThinkingPart("Check the log.", signature="sig-1", provider_name="anthropic"),
                TextPart("Reading."),
                ToolCallPart("read_log", {"n": 1}, tool_call_id="c1"),
            ]
        )
        (event,) = to_events([(0, response)])
        assert event["content"][0] == {
            "type": "thinking",
            "thinking": "Check the log.",
            "signature": "sig-1",
            "provider": "anthropic",
        }
        assert event["tool_calls"] == [{"id": "c1", "name": "read_log", "arguments": '{"n":1}'}]

    def test_request_parts_become_their_events(self) -> None:
        """System, user (text and image) and tool return parts, in order; a retry is an error."""
        request = ModelRequest(
            parts=[
                SystemPromptPart("rules"),
                UserPromptPart(["look", ImageUrl(url="https://example.com/a.png")]),
                ToolReturnPart("read_log", "out", tool_call_id="c1"),
                ToolReturnPart("read_log", "bad args", tool_call_id="c2", outcome="retried"),
            ]
        )
        events = to_events([(0, request)])
        assert [e["type"] for e in events] == ["system", "user", "tool_result", "tool_result"]
        assert events[1]["content"][1] == {"type": "image", "url": "https://example.com/a.png"}
        assert [e["is_error"] for e in events[2:]] == [False, True]

    def test_a_stored_retry_prompt_is_read(self) -> None:
        """The legacy `RetryPromptPart` of an older history: a tool error, or a notice."""
        with pytest.warns(PydanticAIDeprecationWarning):
            parts = [
                RetryPromptPart("bad args", tool_name="read_log", tool_call_id="c2"),
                RetryPromptPart("not valid JSON"),
            ]
        tool, notice = to_events([(0, ModelRequest(parts=parts))])
        assert (tool["type"], tool["call_id"], tool["is_error"]) == ("tool_result", "c2", True)
        assert (notice["type"], notice["notice"]) == ("user", True)
        assert "not valid JSON" in notice["content"]

    def test_an_unreadable_user_content_is_refused_with_its_index(self) -> None:
        """A video in a prompt names the message's place in the history."""
        request = ModelRequest(parts=[UserPromptPart([VideoUrl(url="https://example.com/v.mp4")])])
        with pytest.raises(IngestError, match="VideoUrl") as caught:
            to_events([(3, request)])
        assert caught.value.location is not None and caught.value.location.index == 3

    def test_unchanged_parts_come_back_as_the_same_objects(self) -> None:
        """A response the engine left alone keeps its parts (thinking signature and all)."""
        thinking = ThinkingPart("hm", signature="sig")
        call = ToolCallPart("read_log", {"n": 1}, tool_call_id="c1")
        response = ModelResponse(parts=[thinking, TextPart("ok"), call])
        output = ToolReturnPart("read_log", "long output", tool_call_id="c1")
        history: list[ModelMessage] = [
            ModelRequest(parts=[UserPromptPart("go")]),
            response,
            ModelRequest(parts=[output]),
        ]
        payload: list[dict[str, Any]] = [
            {"role": "user", "content": "go"},
            {
                "role": "assistant",
                "content": "ok",
                "tool_calls": [
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "read_log", "arguments": "{}"},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "[masked]"},
        ]
        back = from_payload(payload, history, token="tok", conversation_id=None)
        assert isinstance(back[1], ModelResponse) and back[1].parts[0] is thinking
        assert isinstance(back[2], ModelRequest)
        (masked,) = back[2].parts
        assert isinstance(masked, ToolReturnPart)
        assert (masked.tool_name, masked.tool_call_id, masked.content) == (
            "read_log",
            "c1",
            "[masked]",
        )
        assert all((m.metadata or {}).get(MARK) == "tok" for m in back)


class TestOptions:
    """Bad options are refused when the processor is made."""

    def test_an_unknown_format_is_refused(self) -> None:
        """`format=` names one of the renderer's formats, checked when the processor is made."""
        with pytest.raises(ConfigurationError, match="unknown format 'bedrock'"):
            ContextHistory(budget=BUDGET, format="bedrock")  # type: ignore[arg-type]

    def test_factory_and_options_are_exclusive(self) -> None:
        """A factory builds the manager; options beside it are refused."""
        with pytest.raises(ConfigurationError, match="either `factory`"):
            ContextHistory(
                factory=lambda conversation: ContextManager(policy=Policy()), directory="."
            )

    def test_without_pydantic_ai_the_error_names_the_extra(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Importing the module without pydantic-ai says which extra to install."""
        monkeypatch.setitem(sys.modules, "pydantic_ai.capabilities", None)
        spec = importlib.util.spec_from_file_location("probe_pydantic_ai", integration.__file__)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        with pytest.raises(ConfigurationError, match=r"pip install '\.\[pydantic-ai\]'"):
            spec.loader.exec_module(module)
