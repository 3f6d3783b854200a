"""The LangChain v1 middleware, against real `create_agent` agents and a scripted chat model.

The model is a `BaseChatModel` that records every request it gets and answers from a
script (a tool call per turn, then a final answer); its usage says the request's size by
the same count the budget uses. What reaches it is converted with LangChain's own
`convert_to_openai_messages` and checked like a request to the provider.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain.agents.middleware import ModelRequest, ModelResponse
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    RemoveMessage,
    SystemMessage,
    ToolMessage,
    convert_to_openai_messages,
)
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool
from langchain_core.utils.function_calling import convert_to_openai_tool
from langgraph.checkpoint.memory import InMemorySaver
from pydantic import PrivateAttr

from context_graph.errors import ConfigurationError, IngestError
from context_graph.render import count_payload
from context_graph.tokens.counting import default_counter
from context_graph.validate import validate
from orchestrator import ContextManager, Recorder
from orchestrator.integrations import langchain as integration
from orchestrator.integrations.langchain import ContextMiddleware
from orchestrator.integrations.langchain_messages import from_payload, to_events
from orchestrator.policy import Policy

BUDGET = 16_000
TURNS = 30


def _log(n: int) -> str:
    """A tool output of about 5,000 tokens, every line distinct."""
    return "\n".join(f"[{n}:{i:04d}] cc -c src/module_{i}.c -o build/m{i}.o ok" for i in range(300))


@tool
def read_log(n: int) -> str:
    """Read build log number n."""
    return _log(n)


def _wire(messages: Sequence[BaseMessage], tools: Sequence[Any]) -> dict[str, Any]:
    """The OpenAI chat request of what a model got (LangChain's own conversion)."""
    converted = convert_to_openai_messages(list(messages))
    # convert_to_openai_messages names tool messages; the Chat Completions API has no
    # such field (langchain-openai leaves it out), so neither does this request.
    wire = [
        {k: v for k, v in m.items() if not (m["role"] == "tool" and k == "name")} for m in converted
    ]
    payload: dict[str, Any] = {"messages": wire}
    if tools:
        payload["tools"] = [convert_to_openai_tool(t) for t in tools]
    return payload


class ScriptedChatModel(BaseChatModel):
    """Calls `read_log` once per turn for `turns` turns, then answers; records each request."""

    turns: int = TURNS
    factor: float = 1.0
    _requests: list[dict[str, Any]] = PrivateAttr(default_factory=list)
    _tools: list[Any] = PrivateAttr(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "scripted"

    @property
    def requests(self) -> list[dict[str, Any]]:
        """Every request received, as an OpenAI chat request."""
        return self._requests

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ScriptedChatModel:
        self._tools = list(tools)
        return self

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> ChatResult:
        payload = _wire(messages, self._tools)
        self._requests.append(payload)
        tokens = int(self.factor * count_payload(payload, "openai", default_counter()))
        usage = {"input_tokens": tokens, "output_tokens": 8, "total_tokens": tokens + 8}
        n = len(self._requests)
        if n <= self.turns:
            call = {"id": f"call_{n}", "name": "read_log", "args": {"n": n}}
            message = AIMessage(
                content=f"Reading log {n}.", tool_calls=[call], usage_metadata=usage
            )
        else:
            message = AIMessage(content="The build fails in module 7.", usage_metadata=usage)
        return ChatResult(generations=[ChatGeneration(message=message)])


def _agent(
    model: ScriptedChatModel, middleware: list[Any], saver: InMemorySaver | None = None
) -> Any:
    return create_agent(
        model,
        [read_log],
        system_prompt="You are a build doctor.",
        middleware=middleware,
        checkpointer=saver or InMemorySaver(),
    )


def _ask(text: str = "Why does the build fail?") -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": text}]}


def _config(thread: str = "t1") -> dict[str, Any]:
    return {"configurable": {"thread_id": thread}, "recursion_limit": 200}


def _assert_requests_fit(model: ScriptedChatModel) -> None:
    """Each request is valid, and within the budget by the count the model reported."""
    assert len(model.requests) == TURNS + 1
    for payload in model.requests:
        assert validate(payload, "openai") == []
        assert int(model.factor * count_payload(payload, "openai", default_counter())) <= BUDGET


class TestThirtyTurnLoop:
    """A 30-turn tool loop of ~5,000-token outputs under a 16,000-token budget."""

    def test_without_the_middleware_requests_outgrow_the_budget(self) -> None:
        """The baseline: the agent alone sends requests far over the budget."""
        model = ScriptedChatModel()
        _agent(model, []).invoke(_ask(), _config())
        sizes = [count_payload(p, "openai", default_counter()) for p in model.requests]
        assert max(sizes) > 5 * BUDGET

    @pytest.mark.parametrize("factor", [1.0, 1.3])
    def test_every_request_is_valid_and_under_the_budget(self, factor: float) -> None:
        """Sync: every request is valid and within the budget by the provider's count."""
        model = ScriptedChatModel(factor=factor)
        middleware = ContextMiddleware(budget=BUDGET)
        out = _agent(model, [middleware]).invoke(_ask(), _config())
        _assert_requests_fit(model)
        # The state keeps every message whole; only what the model was sent was compacted.
        outputs = [m.content for m in out["messages"] if isinstance(m, ToolMessage)]
        assert outputs == [_log(n) for n in range(1, TURNS + 1)]

    async def test_async_loop_is_valid_and_under_the_budget(self) -> None:
        """Async (`ainvoke`): the same loop through `awrap_model_call`."""
        model = ScriptedChatModel()
        await _agent(model, [ContextMiddleware(budget=BUDGET)]).ainvoke(_ask(), _config())
        _assert_requests_fit(model)

    def test_every_message_is_ingested_once(self) -> None:
        """The record holds each state message once: 1 request, 31 replies, 30 outputs."""
        model = ScriptedChatModel()
        middleware = ContextMiddleware(budget=BUDGET)
        _agent(model, [middleware]).invoke(_ask(), _config())
        raw = middleware.manager("t1").raw
        assert len(raw.by_kind("user")) == 1
        assert len(raw.by_kind("assistant")) == TURNS  # the last answer is not requested on
        assert len(raw.by_kind("tool_result")) == TURNS

    def test_usage_is_reported_for_calibration(self) -> None:
        """Each answer's `usage_metadata.input_tokens` reaches the manager's calibrator."""
        model = ScriptedChatModel(turns=3, factor=1.25)
        middleware = ContextMiddleware(budget=BUDGET)
        with Recorder(middleware.manager("t1").bus) as recorder:
            _agent(model, [middleware]).invoke(_ask(), _config())
        factors = [e.payload["factor"] for e in recorder.events if e.name == "usage_reported"]
        assert len(factors) == 4
        assert 1.0 < factors[0] < factors[-1] <= 1.25

    def test_stream_goes_through_the_middleware(self) -> None:
        """`stream` runs the same hooks as `invoke`: the requests fit."""
        model = ScriptedChatModel()
        agent = _agent(model, [ContextMiddleware(budget=BUDGET)])
        chunks = list(agent.stream(_ask(), _config(), stream_mode="values"))
        assert len(chunks[-1]["messages"]) == 2 * TURNS + 2
        _assert_requests_fit(model)

    def test_thinking_reaches_the_model_with_its_signature(self) -> None:
        """An AI message the engine left alone is sent as the same object, thinking and all."""
        middleware = ContextMiddleware(budget=2_000)
        thinking = {"type": "thinking", "thinking": "Read the log first.", "signature": "sig-9"}
        call = {"id": "c1", "name": "read_log", "args": {"n": 1}}
        reply = AIMessage(
            content=[thinking, {"type": "text", "text": "Reading."}], tool_calls=[call]
        )
        history: list[Any] = [
            HumanMessage("Why?", id="h1"),
            reply.model_copy(update={"id": "a1"}),
            ToolMessage(_log(1), tool_call_id="c1", id="t1"),
        ]
        sent: list[BaseMessage] = []

        def handler(request: ModelRequest[Any]) -> ModelResponse[Any]:
            sent.extend(request.messages)
            return ModelResponse(result=[AIMessage(content="ok")])

        middleware.wrap_model_call(
            ModelRequest(model=ScriptedChatModel(), messages=history), handler
        )
        assert sent[1] is history[1]
        assert isinstance(sent[2], ToolMessage) and len(sent[2].content) < len(_log(1)) // 2

    def test_threads_have_their_own_manager(self) -> None:
        """Two LangGraph threads are two records."""
        model = ScriptedChatModel(turns=1)
        middleware = ContextMiddleware(budget=BUDGET)
        agent = _agent(model, [middleware])
        agent.invoke(_ask("first"), _config("a"))
        model.requests.clear()
        agent.invoke(_ask("second"), _config("b"))
        users = [
            middleware.manager(t).raw[i].text
            for t in "ab"
            for i in middleware.manager(t).raw.by_kind("user")
        ]
        assert users == ["first", "second"]


class TestResume:
    """A thread resumed from the checkpointer continues the engine's stored record."""

    def test_a_new_middleware_continues_a_stored_thread(self, tmp_path: Path) -> None:
        """With `directory=`, a new middleware reads the stored record and adds only what is new."""
        saver = InMemorySaver()
        first = ContextMiddleware(budget=BUDGET, directory=tmp_path)
        _agent(ScriptedChatModel(turns=3), [first], saver).invoke(_ask(), _config())
        first.close()
        model = ScriptedChatModel(turns=3)
        second = ContextMiddleware(budget=BUDGET, directory=tmp_path)
        _agent(model, [second], saver).invoke(_ask("And the tests?"), _config())
        raw = second.manager("t1").raw
        assert [raw[i].text for i in raw.by_kind("user")] == [
            "Why does the build fail?",
            "And the tests?",
        ]
        assert len(raw.by_kind("tool_result")) == 6  # 3 from each run, each once
        assert all(validate(p, "openai") == [] for p in model.requests)
        second.close()


def _request(messages: list[Any], model: BaseChatModel | None = None) -> ModelRequest[Any]:
    return ModelRequest(model=model or ScriptedChatModel(), messages=messages)


class TestIncrementalSync:
    """Messages are ingested by id; a rewritten state rebuilds the record."""

    @staticmethod
    def _call(middleware: ContextMiddleware, messages: list[BaseMessage]) -> list[BaseMessage]:
        sent: list[BaseMessage] = []

        def handler(request: ModelRequest[Any]) -> ModelResponse[Any]:
            sent.extend(request.messages)
            return ModelResponse(result=[AIMessage(content="ok")])

        middleware.wrap_model_call(_request(messages), handler)
        return sent

    def test_only_new_messages_are_ingested(self) -> None:
        """A second call with the same messages plus one ingests just that one."""
        middleware = ContextMiddleware(budget=BUDGET)
        history: list[BaseMessage] = [HumanMessage("hello", id="m1"), AIMessage("hi", id="m2")]
        self._call(middleware, history)
        self._call(middleware, [*history, HumanMessage("again", id="m3")])
        assert len(middleware.manager().raw) == 3

    def test_unchanged_messages_are_sent_as_the_same_objects(self) -> None:
        """Nothing compacted: the model gets the state's own message objects."""
        middleware = ContextMiddleware(budget=BUDGET)
        history: list[BaseMessage] = [HumanMessage("hello", id="m1")]
        assert self._call(middleware, history)[0] is history[0]

    def test_an_edited_message_rebuilds_the_record(self) -> None:
        """A message whose content changed under the same id: the record is the state now."""
        middleware = ContextMiddleware(budget=BUDGET)
        self._call(middleware, [HumanMessage("hello", id="m1"), AIMessage("hi", id="m2")])
        sent = self._call(middleware, [HumanMessage("hello there", id="m1")])
        raw = middleware.manager().raw
        assert [node.text for node in raw] == ["hello there"]
        assert [m.content for m in sent] == ["hello there"]

    def test_a_removed_message_rebuilds_the_record(self) -> None:
        """A message gone from the state (a `RemoveMessage`) is gone from the record."""
        middleware = ContextMiddleware(budget=BUDGET)
        self._call(
            middleware,
            [HumanMessage("a", id="m1"), AIMessage("b", id="m2"), HumanMessage("c", id="m3")],
        )
        self._call(middleware, [HumanMessage("a", id="m1"), HumanMessage("c", id="m3")])
        assert [node.text for node in middleware.manager().raw] == ["a", "c"]

    def test_a_removed_message_in_a_graph_rebuilds_a_stored_record(self, tmp_path: Path) -> None:
        """`RemoveMessage` via the checkpointer, with a stored record: rebuilt from the state."""
        saver = InMemorySaver()
        middleware = ContextMiddleware(budget=BUDGET, directory=tmp_path)
        agent = _agent(ScriptedChatModel(turns=1), [middleware], saver)
        out = agent.invoke(_ask(), _config())
        first = out["messages"][0]
        agent.update_state(_config(), {"messages": [RemoveMessage(id=first.id)]})
        agent.invoke(_ask("Start over."), _config())
        raw = middleware.manager("t1").raw
        assert [raw[i].text for i in raw.by_kind("user")] == ["Start over."]
        middleware.close()

    def test_the_system_message_is_counted_not_ingested(self) -> None:
        """The system message is sent as it is, and its tokens come off the history's budget."""
        middleware = ContextMiddleware(budget=200)
        request = ModelRequest(
            model=ScriptedChatModel(),
            messages=[HumanMessage("x " * 150, id="m1")],
            system_message=SystemMessage("rules " * 60),
        )
        seen: list[ModelRequest[Any]] = []

        def handler(req: ModelRequest[Any]) -> ModelResponse[Any]:
            seen.append(req)
            return ModelResponse(result=[AIMessage(content="ok")])

        # 150 tokens of history do not fit the 200 the 60-token system message leaves
        # less of: the message is sent cut to its head (the overflow fallback), not whole.
        middleware.wrap_model_call(request, handler)
        (sent,) = seen
        assert sent.system_message is not None and sent.system_message.text == "rules " * 60
        (message,) = sent.messages
        assert "over its token budget" in str(message.content)
        assert len(str(message.content)) < len("x " * 150)
        assert len(middleware.manager().raw) == 1


class TestConversion:
    """LangChain messages to events and back."""

    def test_reasoning_thinking_and_calls_become_one_assistant_turn(self) -> None:
        """Content blocks keep their kinds; the provider's own tool-use block is not doubled."""
        message = AIMessage(
            content=[
                {"type": "thinking", "thinking": "Check the log.", "signature": "sig-1"},
                {
                    "type": "reasoning",
                    "id": "rs_1",
                    "summary": [{"type": "summary_text", "text": "plan"}],
                },
                {"type": "text", "text": "Reading."},
                {"type": "tool_use", "id": "call_1", "name": "read_log", "input": {"n": 1}},
            ],
            tool_calls=[{"id": "call_1", "name": "read_log", "args": {"n": 1}}],
            id="ai-1",
        )
        (event,) = to_events([message])
        assert event["content"] == [
            {"type": "thinking", "thinking": "Check the log.", "signature": "sig-1"},
            {"type": "reasoning", "id": "rs_1", "summary": ["plan"]},
            {"type": "text", "text": "Reading."},
        ]
        assert event["tool_calls"] == [{"id": "call_1", "name": "read_log", "arguments": {"n": 1}}]
        assert event["meta"]["langchain_id"] == "ai-1"

    def test_a_failed_tool_message_is_an_error_result(self) -> None:
        """`status="error"` is the engine's `is_error`; the call id and name are kept."""
        (event,) = to_events([ToolMessage("boom", tool_call_id="c1", name="bash", status="error")])
        assert (event["call_id"], event["name"], event["is_error"]) == ("c1", "bash", True)

    def test_an_unreadable_block_is_refused_with_its_index(self) -> None:
        """A block the engine cannot read names the message's place in the state."""
        message = HumanMessage(
            content=[{"type": "audio", "base64": "AAAA", "mime_type": "audio/wav"}]
        )
        with pytest.raises(IngestError, match="'audio'") as caught:
            to_events([HumanMessage("hi"), message])
        assert caught.value.location is not None and caught.value.location.index == 1

    def test_a_shortened_output_is_a_copy_of_its_tool_message(self) -> None:
        """The copy keeps the original's id and call id; unchanged messages are the originals."""
        call = AIMessage("", tool_calls=[{"id": "c1", "name": "bash", "args": {}}], id="a1")
        output = ToolMessage("long output", tool_call_id="c1", id="t1")
        payload: list[dict[str, Any]] = [
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "bash", "arguments": "{}"},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "[masked]"},
            {"role": "user", "content": "a summary"},
        ]
        back = from_payload(payload, [call, output])
        assert back[0] is call
        assert isinstance(back[1], ToolMessage)
        assert (back[1].id, back[1].tool_call_id, back[1].content) == ("t1", "c1", "[masked]")
        assert isinstance(back[2], HumanMessage) and back[2].content == "a summary"


class TestOptions:
    """Bad options are refused when the middleware is made."""

    def test_an_unknown_format_is_refused(self) -> None:
        """`format=` names one of the renderer's formats, checked when the middleware is made."""
        with pytest.raises(ConfigurationError, match="unknown format 'bedrock'"):
            ContextMiddleware(budget=BUDGET, format="bedrock")  # type: ignore[arg-type]

    def test_factory_and_options_are_exclusive(self) -> None:
        """A factory builds the manager; options beside it would be ignored, so they are refused."""
        with pytest.raises(ConfigurationError, match="either `factory`"):
            ContextMiddleware(
                factory=lambda thread: ContextManager(policy=Policy()), policy="coding"
            )

    def test_a_missing_directory_is_refused(self, tmp_path: Path) -> None:
        """The session files' directory must exist."""
        with pytest.raises(ConfigurationError, match="not a directory"):
            ContextMiddleware(directory=tmp_path / "missing")

    def test_without_langchain_the_error_names_the_extra(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Importing the module without LangChain says which extra to install."""
        monkeypatch.setitem(sys.modules, "langchain.agents.middleware", None)
        spec = importlib.util.spec_from_file_location("probe_langchain", integration.__file__)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        with pytest.raises(ConfigurationError, match=r"pip install '\.\[langchain\]'"):
            spec.loader.exec_module(module)
