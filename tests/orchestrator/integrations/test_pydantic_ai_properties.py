"""Properties of the pydantic-ai processor over random runs on one written-back history."""

from __future__ import annotations

import asyncio
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.usage import RequestUsage

from context_graph import ContextGraph
from context_graph.render import Renderer
from context_graph.validate import validate
from orchestrator.integrations.pydantic_ai import ContextHistory
from orchestrator.integrations.pydantic_ai_messages import to_events

BUDGET = 4_000

runs = st.lists(st.lists(st.integers(1, 300), max_size=4), min_size=1, max_size=3)


def _file(lines: int) -> str:
    return "\n".join(f"{lines}:{i:04d} value_{i * 31 % 997} = compute({i})" for i in range(lines))


async def _converse(runs: list[list[int]]) -> tuple[ContextHistory, list[ModelMessage], list[int]]:
    """Run each script on the history the previous run returned; the requests' sizes."""
    sizes: list[int] = []
    script: list[int] = []

    def answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        graph = ContextGraph()
        graph.ingest(to_events(list(enumerate(messages))))
        tools = [  # the provider counts the tool definitions too
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
        assert validate(result.payload, "openai") == []
        sizes.append(result.tokens)
        # The provider's count is the request's size (FunctionModel's own estimate is not).
        usage = RequestUsage(input_tokens=result.tokens, output_tokens=1)
        if script:
            lines = script.pop(0)
            call = ToolCallPart("read_file", {"lines": lines}, tool_call_id=f"call_{len(sizes)}")
            return ModelResponse(parts=[call], usage=usage)
        return ModelResponse(parts=[TextPart("done")], usage=usage)

    history = ContextHistory(budget=BUDGET)
    agent = Agent(FunctionModel(answer), capabilities=[history.capability()])

    @agent.tool_plain
    def read_file(lines: int) -> str:
        """Read a file of `lines` lines."""
        return _file(lines)

    messages: list[ModelMessage] = []
    for index, planned in enumerate(runs):
        script[:] = planned
        result = await agent.run(f"run {index}", message_history=messages)
        messages = result.all_messages()
    return history, messages, sizes


class TestWrittenBackHistory:
    """Whatever the runs, nothing is ingested twice, nothing is lost, every request fits."""

    @settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(runs=runs)
    def test_every_message_once_and_every_request_fits(self, runs: list[list[int]]) -> None:
        """The record holds each original once; the kept history's calls pair up."""
        history, messages, sizes = asyncio.run(_converse(runs))
        raw = history.manager(messages[0].conversation_id or "").raw
        assert [raw[i].text for i in raw.by_kind("user")] == [f"run {i}" for i in range(len(runs))]
        expected = sorted(_file(n) for script in runs for n in script)
        assert sorted(raw[i].text for i in raw.by_kind("tool_result")) == expected
        assert all(size <= BUDGET for size in sizes)
        calls: list[str] = []
        answers: list[Any] = []
        for message in messages:
            for part in message.parts:
                if isinstance(part, ToolCallPart):
                    calls.append(part.tool_call_id)
                elif isinstance(part, ToolReturnPart):
                    answers.append(part.tool_call_id)
        assert calls == answers
